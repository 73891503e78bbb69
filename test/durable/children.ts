/** Runs a test child script as a real OS process and collects the JSON lines it prints and how it ended. */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import type { JsonValue } from '../../src/core/json.js';
import { typeScriptLoaderArgs } from '../../src/process/typescript-child.js';

export type ChildEvent = { readonly event: string } & { readonly [key: string]: JsonValue };

export interface ChildRun {
  readonly events: ChildEvent[];
  readonly signal: NodeJS.Signals | null;
  readonly code: number | null;
  readonly stderr: string;
}

export function runChild(
  script: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<ChildRun> {
  const child = spawn(process.execPath, [...typeScriptLoaderArgs(), script, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const events: ChildEvent[] = [];
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  createInterface({ input: child.stdout }).on('line', (line) => events.push(JSON.parse(line) as ChildEvent));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ events, signal, code, stderr }));
  });
}

/** The result line a child printed last; throws with its stderr when it printed none. */
export function resultOf(run: ChildRun): JsonValue {
  const last = run.events.at(-1);
  if (last?.event !== 'result')
    throw new Error(`the child did not finish: ${JSON.stringify(last)} ${run.stderr}`);
  return last.result ?? null;
}

/** The lines of a JSONL file (none when it does not exist). */
export function jsonLines<T>(file: string): T[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as T);
}
