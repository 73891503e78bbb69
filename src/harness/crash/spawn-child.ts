/** Runs the crash child as a real OS process and collects its event lines and how it ended. */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { typeScriptLoaderArgs } from '../../process/typescript-child.js';
import { type ChildEvent, CRASH_ENV } from './points.js';

export interface ChildArgs {
  readonly storeUrl: string;
  readonly sessionId: string;
  readonly workspaceDir: string;
  readonly tenantId: string;
  readonly userId: string;
  /** The lease owner this process claims the session as (a resumed chain reuses its dead owner's name). */
  readonly leaseOwner: string;
  /** Kill point for this run, or null to run to the end. */
  readonly crashAt: string | null;
  /** Lease TTL of this run in ms; the runtime's default when absent. */
  readonly leaseTtlMs?: number;
  /** Extra environment (for example AGENTSTATE_HOLD_AT). */
  readonly env?: Readonly<Record<string, string>>;
  /** The child script beside this file, by base name (default `child`: the `deploy_pipeline` child). */
  readonly script?: string;
  /** More arguments for that script. */
  readonly extraArgs?: readonly string[];
}

export interface ChildRun {
  readonly events: ChildEvent[];
  readonly exitCode: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stderr: string;
  readonly wallMs: number;
}

/** `node --import tsx child.ts` from sources, `node child.js` from the build. */
export function childCommand(script = 'child'): string[] {
  const here = import.meta.url;
  const ext = here.endsWith('.ts') ? '.ts' : '.js';
  const child = fileURLToPath(new URL(`./${script}${ext}`, here));
  return ext === '.ts' ? [process.execPath, ...typeScriptLoaderArgs(), child] : [process.execPath, child];
}

const CHILD_TIMEOUT_MS = 120_000;

export function runChild(args: ChildArgs): Promise<ChildRun> {
  const [cmd, ...base] = childCommand(args.script) as [string, ...string[]];
  const argv = [
    ...base,
    '--store',
    args.storeUrl,
    '--session',
    args.sessionId,
    '--workspace',
    args.workspaceDir,
    '--tenant',
    args.tenantId,
    '--user',
    args.userId,
    '--lease-owner',
    args.leaseOwner,
    ...(args.leaseTtlMs === undefined ? [] : ['--lease-ttl-ms', String(args.leaseTtlMs)]),
    ...(args.extraArgs ?? []),
  ];
  const env: NodeJS.ProcessEnv = { ...process.env, ...args.env, [CRASH_ENV]: args.crashAt ?? '' };
  delete env.NODE_TEST_CONTEXT;
  const started = performance.now();
  const child = spawn(cmd, argv, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const events: ChildEvent[] = [];
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-8_000);
  });
  createInterface({ input: child.stdout }).on('line', (line) => {
    try {
      events.push(JSON.parse(line) as ChildEvent);
    } catch {
      // a line that is not an event (a stray log): ignored
    }
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), CHILD_TIMEOUT_MS);
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (exitCode, signal) => {
      clearTimeout(timer);
      resolve({ events, exitCode, signal, stderr, wallMs: performance.now() - started });
    });
  });
}
