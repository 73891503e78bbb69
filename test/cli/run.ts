/** Runs the real CLI as a child process (TypeScript sources through tsx), in a temporary directory. */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const MAIN = join(ROOT, 'src/cli/main.ts');
export const TSX = pathToFileURL(join(ROOT, 'node_modules/tsx/dist/loader.mjs')).href;

export interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export function tempDir(): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'agentstate-cli-'));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** The CLI as `npm run build` leaves it (npm test builds first). */
export const BUILT_MAIN = join(ROOT, 'dist/src/cli/main.js');

function cliEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const clean = { ...process.env };
  for (const key of Object.keys(clean)) if (key.startsWith('AGENTSTATE_')) delete clean[key];
  return { ...clean, AGENTSTATE_LOG_LEVEL: 'info', ...env };
}

export function spawnCli(
  args: readonly string[],
  cwd: string,
  env: Record<string, string> = {},
): ChildProcess {
  return spawn(process.execPath, ['--import', TSX, MAIN, ...args], {
    cwd,
    env: cliEnv(env),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
}

/**
 * The built CLI under plain node, for what the TypeScript loader would change: tsx opens process.stdout,
 * which changes how fd 1 blocks.
 */
export function spawnBuiltCli(
  args: readonly string[],
  cwd: string,
  env: Record<string, string> = {},
): ChildProcess {
  if (!existsSync(BUILT_MAIN)) throw new Error(`${BUILT_MAIN} is missing: run npm run build (npm test does)`);
  return spawn(process.execPath, [BUILT_MAIN, ...args], {
    cwd,
    env: cliEnv(env),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
}

export function runCli(
  args: readonly string[],
  cwd: string,
  env: Record<string, string> = {},
): Promise<CliResult> {
  return new Promise((resolvePromise, reject) => {
    const child = spawnCli(args, cwd, env);
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => resolvePromise({ code, stdout, stderr }));
  });
}

/** True when the text looks like a stack trace rather than a sentence. */
export function hasStackTrace(text: string): boolean {
  return /\n\s+at .+\(.+:\d+:\d+\)/.test(text) || /^\s+at /m.test(text);
}
