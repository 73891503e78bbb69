/**
 * `agentstate serve` in a child process, so that the load generator and the server never share one event
 * loop. Tenant API key and JWT secret go through the environment; the URL is read from the start banner.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { SERVER_NODE_FLAGS } from '../../http/heap-policy.js';
import { typeScriptLoaderArgs } from '../../process/typescript-child.js';
import { childStopper } from './child-stop.js';

export interface ServerChild {
  readonly url: string;
  /** The tenant API key the server was started with. */
  readonly apiKey: string;
  readonly tenantId: string;
  readonly pid: number;
  /** Threads running its turns, as its banner says (0: its main thread). */
  readonly turnThreads: number;
  /** SIGTERM, then SIGKILL after 10 s; resolves when the process is gone. Safe to call twice. */
  close(): Promise<void>;
}

export interface ServerChildOptions {
  readonly storeUrl: string;
  readonly dataDir: string;
  /** Server log level (AGENTSTATE_LOG_LEVEL). Default `warn`: request logs would cost the server CPU. */
  readonly logLevel?: string;
  /** The demo airline the server books with (AGENTSTATE_AIRLINE_URL); without it the server starts its own. */
  readonly airlineUrl?: string;
  /** Server processes (`serve --workers`). Default 1. */
  readonly workers?: number;
  /** Threads that run the server's turns (`serve --turn-threads`). Default `auto`, as `serve`'s. */
  readonly turnThreads?: number | 'auto';
  /** Extra node flags for the server, e.g. `--cpu-prof --cpu-prof-dir=DIR`. */
  readonly nodeFlags?: readonly string[];
  readonly onStderr?: (text: string) => void;
}

/** `node --import tsx src/cli/main.ts` from sources, `node dist/src/cli/main.js` from the build. */
export function cliCommand(): string[] {
  const here = import.meta.url;
  if (here.endsWith('.ts')) {
    const main = fileURLToPath(new URL('../../cli/main.ts', here));
    return [process.execPath, ...typeScriptLoaderArgs(), main];
  }
  const main = fileURLToPath(new URL('../../cli/main.js', here));
  if (!existsSync(main)) throw new Error(`loadtest: the CLI entry ${main} is missing`);
  return [process.execPath, main];
}

const START_TIMEOUT_MS = 60_000;

export function startServerChild(options: ServerChildOptions): Promise<ServerChild> {
  const apiKey = `lt_${randomBytes(18).toString('hex')}`;
  const tenantId = `loadtest-${randomBytes(3).toString('hex')}`;
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const key of Object.keys(env)) if (key.startsWith('AGENTSTATE_')) delete env[key];
  delete env.NODE_OPTIONS;
  Object.assign(env, {
    AGENTSTATE_API_KEYS: `${tenantId}:${apiKey}`,
    AGENTSTATE_JWT_SECRET: randomBytes(32).toString('hex'),
    AGENTSTATE_LOG_LEVEL: options.logLevel ?? 'warn',
  });
  if (options.airlineUrl !== undefined) env.AGENTSTATE_AIRLINE_URL = options.airlineUrl;
  const [node, ...rest] = cliCommand() as [string, ...string[]];
  const args = [
    ...SERVER_NODE_FLAGS,
    ...(options.nodeFlags ?? []),
    ...rest,
    'serve',
    '--store',
    options.storeUrl,
    '--port',
    '0',
    '--host',
    '127.0.0.1',
    '--data-dir',
    options.dataDir,
    '--workers',
    String(options.workers ?? 1),
    '--turn-threads',
    String(options.turnThreads ?? 'auto'),
  ];
  const child = spawn(node, args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
  return new Promise((resolve, reject) => {
    let stderr = '';
    let started = false;
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`loadtest: the server printed no URL within 60 s; stderr: ${stderr.slice(-2000)}`));
    }, START_TIMEOUT_MS);
    const onExit = (code: number | null) => {
      clearTimeout(timer);
      reject(new Error(`loadtest: the server exited with ${code}: ${stderr.slice(-2000)}`));
    };
    child.once('exit', onExit);
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      options.onStderr?.(chunk);
      if (started || stderr.length > 20_000) return;
      stderr += chunk;
      const match = /agentstate serving (http:\/\/\S+)/.exec(stderr);
      if (!match) return;
      clearTimeout(timer);
      child.off('exit', onExit);
      started = true;
      resolve({
        url: match[1] as string,
        apiKey,
        tenantId,
        pid: child.pid ?? -1,
        turnThreads: Number(/turns: on (\d+) thread/.exec(stderr)?.[1] ?? 0),
        close: childStopper(child, 10_000),
      });
    });
  });
}
