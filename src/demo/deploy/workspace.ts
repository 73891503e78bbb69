/** The deploy tools' workspace: where they write, the ledger they keep, and safe atomic file writes. */
import { createHash } from 'node:crypto';
import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { z } from 'zod';
import { ToolError } from '../../runtime/tool.js';

/** Where a crash harness may stop a tool call: before its side effect, after it, after its ledger line. */
export type ToolPoint = 'before_effect' | 'effect_done' | 'ledger_written';

export interface DemoHooks {
  /** Called at each point of every tool call (for fault injection); may throw or never return. */
  at?(point: ToolPoint, tool: string, idempotencyKey: string): void;
}

export interface DeployWorkspace {
  /** Absolute or relative directory every deploy tool works in. */
  readonly dir: string;
  /** The deploy tools' ledger: one line per side effect really done. */
  readonly ledgerPath: string;
  readonly hooks: DemoHooks;
}

export function deployWorkspace(dir: string, hooks: DemoHooks = {}): DeployWorkspace {
  return { dir, ledgerPath: join(dir, 'deploy-ledger.jsonl'), hooks };
}

export const AppNameSchema = z
  .string()
  .regex(
    /^[a-z][a-z0-9-]{0,39}$/,
    'must be 1-40 characters: lowercase letters, digits, dashes, starting with a letter',
  );

/** Paths inside the workspace, relative (results carry relative paths so they compare across workspaces). */
export const appPaths = (app: string) => ({
  root: `apps/${app}`,
  plan: `apps/${app}/plan.json`,
  src: `apps/${app}/src`,
  testReport: `apps/${app}/test-report.json`,
  build: `apps/${app}/build`,
  releases: `releases/${app}`,
});

export function sha256(data: string | Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

/** Writes a file so a reader sees the old bytes or the new ones, never half: temp file, fsync, rename. */
export function writeFileAtomic(path: string, data: string): void {
  mkdirSync(dirname(path), { recursive: true });
  const temp = `${path}.tmp-${process.pid}`;
  const fd = openSync(temp, 'w');
  try {
    writeSync(fd, data);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temp, path);
}

/** A certain refusal: nothing was done, the action fails (it is never retried). */
export function rejected(message: string, code = 'invalid_request'): ToolError {
  return new ToolError('rejected', code, message);
}

/** Reads a JSON file a previous step wrote; a missing one is an `invalid_request` naming that step. */
export function readStepOutput<T>(ws: DeployWorkspace, relPath: string, producedBy: string): T {
  try {
    return JSON.parse(readFileSync(join(ws.dir, relPath), 'utf8')) as T;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      throw rejected(`${relPath} does not exist: run ${producedBy} first`);
    }
    throw error;
  }
}

export interface Plan {
  readonly app: string;
  readonly version: string;
  readonly greeting: string;
  readonly files: string[];
  readonly steps: string[];
}
