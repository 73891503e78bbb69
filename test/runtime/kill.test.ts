/**
 * The documents' first acceptance test, small: deploy_pipeline in a child process killed with SIGKILL at
 * step boundaries and inside tool calls, resumed by a new process with the same session id. Every run
 * recovers, its output equals the uninterrupted one, and the ledger holds no duplicate side effect.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import type { TurnOutput } from '../../src/runtime/turn.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { readLedger } from './ledger-tools.js';
import { freshScope, tempDir } from './setup.js';

const run = promisify(execFile);
const temp = tempDir();
afterAll(() => temp.cleanup());
const script = join(import.meta.dirname, 'child-deploy.ts');

async function child(args: string[], killAt: string): Promise<{ out: TurnOutput | null; killed: boolean }> {
  try {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', script, ...args], {
      env: { ...process.env, KILL_AT: killAt },
      cwd: join(import.meta.dirname, '../..'),
    });
    return { out: JSON.parse(stdout) as TurnOutput | null, killed: false };
  } catch (error) {
    if ((error as { signal?: string }).signal === 'SIGKILL') return { out: null, killed: true };
    throw error;
  }
}

function comparable(out: TurnOutput | null) {
  return {
    reply: out?.reply,
    tasks: out?.tasks.map((t) => [t.state, t.slots, t.status_line]),
    actions: out?.actions.map((a) => [a.tool, a.status, a.params, a.result]),
  };
}

describe('SIGKILL and resume (child processes, SQLite)', () => {
  it('recovers at every kind of kill point with identical output and no duplicate side effects', async () => {
    const file = join(temp.dir, 'kill.db');
    const scope = freshScope();
    const store = await openSqliteStore(file);
    const sessionFor = async () => (await store.createSession(scope, { agent: 'deploy_pipeline' })).id;
    const args = (ledger: string, id: string, mode: string) => [
      file,
      ledger,
      scope.tenant_id,
      scope.user_id,
      id,
      mode,
    ];

    const refLedger = join(temp.dir, 'ref.jsonl');
    const reference = await child(args(refLedger, await sessionFor(), 'turn'), '');
    expect(reference.out?.reply).toBe(
      'Deployed web 2.0.1 to production: https://web.production.example (5 steps).',
    );

    // commit 9 = after the third tool call; tool:deploy.build = inside the fourth, after its effect.
    for (const killAt of ['commit:9', 'tool:deploy.build']) {
      const ledger = join(temp.dir, `${killAt.replace(':', '-')}.jsonl`);
      const id = await sessionFor();
      const first = await child(args(ledger, id, 'turn'), killAt);
      expect(first.killed, killAt).toBe(true);
      const resumed = await child(args(ledger, id, 'resume'), '');
      expect(resumed.out?.resumed, killAt).toBe(true);
      expect(comparable(resumed.out), killAt).toEqual(comparable(reference.out));
      expect(
        readLedger(ledger).map((l) => l.tool),
        killAt,
      ).toEqual(readLedger(refLedger).map((l) => l.tool));
    }
    await store.close();
  }, 120_000);
});
