/** Runs the quickstart as a user would (a child process) and checks what it printed and what it stored. */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { openStore } from '../src/index.js';

const run = promisify(execFile);
const script = join(import.meta.dirname, 'quickstart.ts');
const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
const dir = mkdtempSync(join(tmpdir(), 'agentstate-quickstart-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function quickstart(args: string[], cwd = process.cwd()): Promise<string> {
  const { stdout } = await run(process.execPath, ['--import', tsx, script, ...args], {
    cwd,
    timeout: 60_000,
  });
  return stdout;
}

function idIn(output: string, prefix: string): string {
  const id = output.match(new RegExp(`\\b${prefix}_[a-z2-7]{26}\\b`))?.[0];
  expect(id, `${prefix} id in the output`).toBeDefined();
  return id as string;
}

describe('examples/quickstart.ts', () => {
  it('runs one turn against a SQLite file, prints a summary, and leaves the turn in the file', async () => {
    const file = join(dir, 'quickstart.db');
    const output = await quickstart([file]);
    expect(output).toContain(`agentstate quickstart (sqlite:${file})`);
    expect(output).toMatch(/session sess_\w+: waiting_for_user, version 2/);
    expect(output).toContain('#1 user: I need a flight from London to Lisbon');
    expect(output).toContain('#2 assistant: Flight TP1351 leaves Heathrow');
    expect(output).toMatch(/task task_\w+ \(flight_booking\): CONFIRMING, version 2/);
    expect(output).toContain(
      'events: new -> COLLECTING (created), COLLECTING -> CONFIRMING (all slots filled)',
    );
    expect(output).toMatch(/action act_\w+ search_flights: SUCCESS/);
    expect(output).toContain('retry with the same key returned the same action: true');
    expect(output).toMatch(/checkpoint ckpt_\w+ of run run_\w+: step 1, "after search_flights"/);

    // What it printed is what is stored: read the file back in this process.
    const store = await openStore(`sqlite:${file}`);
    try {
      const scope = { tenant_id: 'acme', user_id: 'alice' };
      const session = await store.getSession(scope, idIn(output, 'sess'));
      expect(session).toMatchObject({ status: 'waiting_for_user', version: 2, agent: 'flight_booking' });
      const messages = await store.listMessages(scope, idIn(output, 'sess'));
      expect(messages.map((m) => [m.seq, m.role])).toEqual([
        [1, 'user'],
        [2, 'assistant'],
      ]);
      const task = await store.getTask(scope, idIn(output, 'task'));
      expect(task).toMatchObject({ state: 'CONFIRMING', slots: { date: '2026-03-06', offer: 'TP1351' } });
      const action = await store.getAction(scope, idIn(output, 'act'));
      expect(action).toMatchObject({
        status: 'SUCCESS',
        tool: 'search_flights',
        attempts: expect.any(Number),
      });
      const checkpoint = await store.latestCheckpoint(scope, idIn(output, 'run'));
      expect(checkpoint?.id).toBe(idIn(output, 'ckpt'));
      expect(checkpoint?.channels).toMatchObject({ task_state: 'CONFIRMING', offer: { flight: 'TP1351' } });
      // Another user of the same tenant sees none of it.
      expect(await store.getSession({ tenant_id: 'acme', user_id: 'bob' }, idIn(output, 'sess'))).toBeNull();
    } finally {
      await store.close();
    }

    // A second run appends a second, separate session to the same file.
    const again = await quickstart([file]);
    expect(idIn(again, 'sess')).not.toBe(idIn(output, 'sess'));
  });

  it('uses the default store, sqlite:./.agentstate/agentstate.db, when given no argument', async () => {
    const cwd = mkdtempSync(join(dir, 'cwd-'));
    const output = await quickstart([], cwd);
    expect(output).toContain('agentstate quickstart (sqlite:./.agentstate/agentstate.db)');
    expect(existsSync(join(cwd, '.agentstate', 'agentstate.db'))).toBe(true);
  });

  it('fails with a readable message and exit code 1 when the store cannot be opened', async () => {
    const failed = await quickstart(['nosuch://x']).catch((error: { code: number; stderr: string }) => error);
    expect(failed).toMatchObject({ code: 1 });
    expect((failed as { stderr: string }).stderr).toMatch(
      /^quickstart failed: unknown store URL "nosuch:\/\/x"/,
    );
  });
});
