/** `agentstate sessions fork|rewind|branches` as a user runs them: a real child process on a real SQLite file. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Message, Session } from '../../src/core/model.js';
import { openStore } from '../../src/store/open.js';
import type { StateStore } from '../../src/store/types.js';
import { hasStackTrace, runCli, tempDir } from './run.js';

const tmp = tempDir();
const url = `sqlite:${tmp.dir}/state.db`;
const scope = { tenant_id: 'default', user_id: 'ada' };
let store: StateStore;
let session: Session;

beforeAll(async () => {
  store = await openStore(url);
  session = await store.createSession(scope, { agent: 'flight_booking' });
  await store.appendMessages(
    scope,
    session.id,
    ['Lisbon please', 'Which date?', 'May 3rd', 'Booked TP123'].map((content, i) => ({
      role: i % 2 === 0 ? ('user' as const) : ('assistant' as const),
      content,
    })),
  );
});

afterAll(async () => {
  await store.close();
  tmp.cleanup();
});

const cli = (...args: string[]) => runCli([...args, '--store', url], tmp.dir);
const contents = async (id: string) =>
  (await store.listMessages(scope, id, { limit: 100 })).map((m: Message) => m.content);

// Each case starts a Node process; on a loaded machine that takes seconds.
describe('agentstate sessions fork, rewind, branches', { timeout: 120_000 }, () => {
  it('fork --at-seq makes a fork that shares the prefix; branches lists it', async () => {
    const forked = await cli('sessions', 'fork', session.id, '--at-seq', '2', '--json');
    expect(forked.stderr).toBe('');
    expect(forked.code).toBe(0);
    const fork = JSON.parse(forked.stdout) as Session;
    expect(fork.forked_from).toEqual({ session_id: session.id, seq: 2, checkpoint_id: null });
    expect(fork.user_id).toBe('ada');
    expect(await contents(fork.id)).toEqual(['Lisbon please', 'Which date?']);

    const listed = await cli('sessions', 'branches', session.id);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(new RegExp(`${fork.id}\\s+2\\s+-\\s+active`));
    const ofFork = await cli('sessions', 'branches', fork.id);
    expect(ofFork.stdout).toContain(`${fork.id} is a fork of ${session.id} after message 2`);
    expect(ofFork.stdout).toContain(`no branches of ${fork.id}`);
  });

  it('rewind --at-seq continues the session there and names the branch that keeps the rest', async () => {
    const rewound = await cli('sessions', 'rewind', session.id, '--at-seq', '3');
    expect(rewound.stderr).toBe('');
    expect(rewound.code).toBe(0);
    const branchId = /branch (sess_[a-z2-7]{26})/.exec(rewound.stdout)?.[1];
    expect(rewound.stdout).toContain(`${session.id} now continues after message 3`);
    expect(branchId).toBeDefined();
    expect(await contents(session.id)).toEqual(['Lisbon please', 'Which date?', 'May 3rd']);
    expect(await contents(branchId as string)).toEqual([
      'Lisbon please',
      'Which date?',
      'May 3rd',
      'Booked TP123',
    ]);
    const listed = await cli('sessions', 'branches', session.id, '--json');
    const { items } = JSON.parse(listed.stdout) as { items: Session[] };
    expect(items.map((s) => s.id)).toContain(branchId);
  });

  it('mistakes are one sentence on stderr, exit 1, and change nothing', async () => {
    const before = (await store.listSessions(scope, { limit: 500 })).items.length;
    const cases: [string[], RegExp][] = [
      [['sessions', 'fork', session.id], /--at-seq N or --checkpoint ID/],
      [
        ['sessions', 'fork', session.id, '--at-seq', '1', '--checkpoint', 'ckpt_x'],
        /--at-seq N or --checkpoint ID/,
      ],
      [['sessions', 'fork', session.id, '--at-seq', 'two'], /--at-seq.*whole number/],
      [['sessions', 'fork', session.id, '--at-seq', '99'], /at_seq/],
      [['sessions', 'rewind', session.id], /--at-seq/],
      [['sessions', 'fork', session.id, '--at-seq', '1', '--tenant', 'globex'], /not found in tenant globex/],
      [['sessions', 'branches', 'sess_nope'], /not a session id/],
    ];
    for (const [args, message] of cases) {
      const result = await cli(...args);
      expect({ args, code: result.code }).toEqual({ args, code: 1 });
      expect(result.stderr).toMatch(message);
      expect(hasStackTrace(result.stderr)).toBe(false);
    }
    expect((await store.listSessions(scope, { limit: 500 })).items.length).toBe(before);
  });
});
