/** The deploy tools' workspace: where they write, the effect log they keep, and safe atomic file writes. */
import { createHash } from 'node:crypto';
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { makeFolder } from '../../process/folders.js';
import { ToolError } from '../../runtime/tool.js';

/**
 * Where a crash harness may stop a tool call: after the call reached the downstream and before its side
 * effect, and after the effect was performed and recorded by the downstream, before the caller hears of it.
 */
export type ToolPoint = 'before_effect' | 'effect_done';

export interface DemoHooks {
  /** Called at each point of every tool call (for fault injection); may throw or never return. */
  at?(point: ToolPoint, tool: string, idempotencyKey: string): void;
}

export interface DeployWorkspace {
  /** Absolute or relative directory every deploy tool works in. */
  readonly dir: string;
  /** The deploy tools' effect log: a line per call and per side effect performed (effects.ts). */
  readonly effectsPath: string;
  readonly hooks: DemoHooks;
}

/** The effect log's file name in a workspace. */
export const DEPLOY_EFFECTS_FILE = 'deploy-effects.jsonl';

export function deployWorkspace(dir: string, hooks: DemoHooks = {}): DeployWorkspace {
  return { dir, effectsPath: join(dir, DEPLOY_EFFECTS_FILE), hooks };
}

/** What every deploy step names: which service, where, at which version (the agent's params contract). */
export interface Target {
  readonly service: string;
  readonly environment: string;
  readonly version: string;
}

/** A version as it may appear in a file name: anything but letters, digits, dot, dash, underscore becomes `_`. */
export function versionSlug(version: string): string {
  return version.replace(/[^A-Za-z0-9._-]/g, '_');
}

/** Paths inside the workspace, relative (results carry relative paths so they compare across workspaces). */
export function appPaths(target: Target) {
  const root = `apps/${target.service}/${target.environment}`;
  return {
    root,
    plan: `${root}/plan.json`,
    src: `${root}/src`,
    testReport: `${root}/test-report.json`,
    build: `${root}/build`,
    releases: `releases/${target.service}/${target.environment}`,
  };
}

export function sha256(data: string | Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

/** Writes a file so a reader sees the old bytes or the new ones, never half: temp file, fsync, rename. */
export function writeFileAtomic(path: string, data: string): void {
  makeFolder(dirname(path), 'for the workspace');
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

export interface Plan extends Target {
  readonly greeting: string;
  readonly files: string[];
  readonly steps: string[];
}
