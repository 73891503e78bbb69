/** Child processes of the store tests: `node --import tsx <script>`, started together on a "go" line. */
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

export interface Child {
  readonly process: ChildProcess;
  readonly ready: Promise<void>;
  readonly result: Promise<unknown>;
}

/** Spawns a script of this folder; `ready` resolves on its first line, `result` is its last line as JSON. */
export function child(script: string, argv: string[]): Child {
  const path = fileURLToPath(new URL(script, import.meta.url));
  const proc = spawn(process.execPath, ['--import', 'tsx', path, ...argv], { cwd: ROOT, stdio: 'pipe' });
  let out = '';
  let err = '';
  let markReady: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => {
    markReady = resolve;
  });
  proc.stdout?.on('data', (chunk: Buffer) => {
    out += chunk.toString('utf8');
    if (out.startsWith('ready\n')) markReady();
  });
  proc.stderr?.on('data', (chunk: Buffer) => {
    err += chunk.toString('utf8');
  });
  const result = new Promise<unknown>((resolve, reject) => {
    proc.on('error', reject);
    proc.on('exit', (code) => {
      markReady();
      if (code !== 0) return reject(new Error(`${script} exited with ${code}: ${err}`));
      resolve(JSON.parse(out.trim().split('\n').at(-1) ?? 'null'));
    });
  });
  return { process: proc, ready, result };
}

/** Waits until every child is ready, says "go" to all of them, and collects their results. */
export async function runTogether(children: Child[]): Promise<unknown[]> {
  await Promise.all(children.map((c) => c.ready));
  for (const c of children) c.process.stdin?.write('go\n');
  return Promise.all(children.map((c) => c.result));
}

/** In a child: prints `ready` and resolves on the parent's first line. */
export async function readyThenWait(): Promise<void> {
  process.stdout.write('ready\n');
  const lines = createInterface({ input: process.stdin });
  await new Promise<void>((resolve) => lines.once('line', () => resolve()));
  lines.close();
}
