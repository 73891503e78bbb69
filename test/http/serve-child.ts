/**
 * `agentstate serve` in a child process (from the sources, through tsx) for the run event tests: a
 * configuration file, the environment (no AGENTSTATE_* variable of the test's own), node flags and
 * another entry (test/http/serve-with-gc.ts) as a test needs; the URL read from the start banner.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { MAIN, TSX } from '../cli/run.js';

export interface ServeChild {
  readonly url: string;
  readonly child: ChildProcess;
  readonly exited: Promise<unknown>;
  /** What it wrote to stderr so far. */
  stderr(): string;
  /** SIGTERM unless it is gone, then waits for its exit. */
  stop(): Promise<void>;
}

export interface ServeOptions {
  readonly store: string;
  /** Working folder; the data dir is `<cwd>/data`. */
  readonly cwd: string;
  /** The configuration file (`--config`). */
  readonly config?: string;
  readonly env?: Record<string, string>;
  /** More arguments of `serve`, e.g. `--turn-threads 0`. */
  readonly args?: readonly string[];
  /** Node flags before the entry. */
  readonly nodeArgs?: readonly string[];
  /** Default: src/cli/main.ts. */
  readonly entry?: string;
}

export function startServe(options: ServeOptions): Promise<ServeChild> {
  const env = { ...process.env };
  for (const key of Object.keys(env)) if (key.startsWith('AGENTSTATE_')) delete env[key];
  const child = spawn(
    process.execPath,
    [
      ...(options.nodeArgs ?? []),
      ...['--import', TSX, options.entry ?? MAIN, 'serve', '--host', '127.0.0.1', '--port', '0'],
      ...['--store', options.store, '--data-dir', 'data'],
      ...(options.config === undefined ? [] : ['--config', options.config]),
      ...(options.args ?? []),
    ],
    {
      cwd: options.cwd,
      env: { ...env, AGENTSTATE_LOG_LEVEL: 'warn', ...(options.env ?? {}) },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  const exited = new Promise((resolve) => child.on('exit', resolve));
  let stderr = '';
  return new Promise((resolve, reject) => {
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /agentstate serving (http:\/\/\S+)/.exec(stderr);
      if (match) {
        resolve({
          url: match[1] as string,
          child,
          exited,
          stderr: () => stderr,
          async stop() {
            if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
            await exited;
          },
        });
      }
    });
    child.on('exit', (code) => reject(new Error(`serve exited with ${code}: ${stderr}`)));
  });
}

/** A configuration file's text: the `slow` model (openai at `baseURL`) as the default, and more. */
export function slowModelConfig(baseURL: string, more: Record<string, unknown> = {}): string {
  return JSON.stringify({
    ...more,
    models: {
      default: 'slow',
      available: { slow: { kind: 'openai', baseURL, model: 'slow', maxRetries: 0, timeoutMs: 120_000 } },
    },
  });
}
