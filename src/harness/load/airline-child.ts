/**
 * The demo airline in its own process for the load test, as a real airline would be: its bookings are
 * fsync'd to its ledger synchronously, which inside the server's process would stall every other turn.
 * The server is given its URL (AGENTSTATE_AIRLINE_URL). Reads the `listening` line the airline prints.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { typeScriptLoaderArgs } from '../../process/typescript-child.js';
import { childStopper } from './child-stop.js';

export interface AirlineChild {
  readonly url: string;
  readonly pid: number;
  /** SIGTERM, then SIGKILL after 5 s; resolves when the process is gone. Safe to call twice. */
  close(): Promise<void>;
}

function airlineCommand(): string[] {
  const here = import.meta.url;
  if (here.endsWith('.ts')) {
    return [
      process.execPath,
      ...typeScriptLoaderArgs(),
      fileURLToPath(new URL('../../demo/airline/main.ts', here)),
    ];
  }
  const main = fileURLToPath(new URL('../../demo/airline/main.js', here));
  if (!existsSync(main)) throw new Error(`loadtest: the airline entry ${main} is missing`);
  return [process.execPath, main];
}

const START_TIMEOUT_MS = 30_000;

export function startAirlineChild(dataDir: string): Promise<AirlineChild> {
  const [node, ...rest] = airlineCommand() as [string, ...string[]];
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.NODE_OPTIONS;
  const child = spawn(node, [...rest, '--port', '0', '--data', dataDir], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    let stdout = '';
    let stderr = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`loadtest: the airline printed no URL within 30 s; stderr: ${stderr.slice(-2000)}`));
    }, START_TIMEOUT_MS);
    const onExit = (code: number | null) => {
      clearTimeout(timer);
      reject(new Error(`loadtest: the airline exited with ${code}: ${stderr.slice(-2000)}`));
    };
    child.once('exit', onExit);
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      if (stderr.length < 20_000) stderr += chunk;
    });
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      const line = stdout.split('\n').find((l) => l.includes('"listening"'));
      if (line === undefined) return;
      const url = (JSON.parse(line) as { url?: unknown }).url;
      if (typeof url !== 'string') return;
      clearTimeout(timer);
      child.off('exit', onExit);
      resolve({ url, pid: child.pid ?? -1, close: childStopper(child, 5_000) });
    });
  });
}
