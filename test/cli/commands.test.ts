/** The CLI as a user runs it: a real child process on a real SQLite file. */
import { readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/open.js';
import type { StateStore } from '../../src/store/types.js';
import { hasStackTrace, runCli, tempDir } from './run.js';

const tmp = tempDir();
const url = `sqlite:${tmp.dir}/state.db`;
let store: StateStore;
const ids = { session: '', task: '', unknownAction: '', doneAction: '', otherTenantSession: '' };

beforeAll(async () => {
  store = await openStore(url);
  const scope = { tenant_id: 'default', user_id: 'ada' };
  const session = await store.createSession(scope, { agent: 'flight_booking' });
  await store.appendMessages(scope, session.id, [
    { role: 'user', content: 'I need a flight to Lisbon' },
    { role: 'assistant', content: 'Which date?' },
  ]);
  const task = await store.createTask(scope, {
    session_id: session.id,
    type: 'flight_booking',
    status_line: 'waiting for the date',
  });
  const moved = await store.updateTask(scope, task.id, task.version, { state: 'COLLECTING', cause: 'slots' });
  const unknown = await store.beginAction(scope, {
    task_id: task.id,
    session_id: session.id,
    type: 'tool_call',
    tool: 'airline.book',
    params: { flight: 'TP123' },
    idempotency_key: `k-${session.id}-1`,
  });
  await store.markActionUnknown(scope, unknown.action.id, 'timed out');
  const done = await store.beginAction(scope, {
    task_id: task.id,
    type: 'tool_call',
    tool: 'airline.search',
    params: {},
    idempotency_key: `k-${session.id}-2`,
  });
  await store.completeAction(scope, done.action.id, { status: 'SUCCESS', result: { flights: 3 } });
  const other = await store.createSession({ tenant_id: 'globex', user_id: 'bo' }, {});
  Object.assign(ids, {
    session: session.id,
    task: moved.id,
    unknownAction: unknown.action.id,
    doneAction: done.action.id,
    otherTenantSession: other.id,
  });
});

afterAll(async () => {
  await store.close();
  tmp.cleanup();
});

const cli = (...args: string[]) => runCli([...args], tmp.dir);

// Each case starts a Node process; on a loaded machine that takes seconds.
describe('agentstate CLI', { timeout: 120_000 }, () => {
  it('--help lists the commands; --version prints the package version', async () => {
    const help = await cli('--help');
    expect(help.code).toBe(0);
    for (const command of ['serve', 'sessions', 'tasks', 'actions', 'inspect', 'sweep', 'migrate']) {
      expect(help.stdout).toContain(command);
    }
    const version = await cli('--version');
    expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
  });

  it('sessions ls shows the tenant’s sessions only', async () => {
    const mine = await cli('sessions', 'ls', '--store', url);
    expect(mine.code).toBe(0);
    expect(mine.stdout).toContain(ids.session);
    expect(mine.stdout).not.toContain(ids.otherTenantSession);
    const theirs = await cli('sessions', 'ls', '--store', url, '--tenant', 'globex', '--json');
    const page = JSON.parse(theirs.stdout) as { items: { id: string }[] };
    expect(page.items.map((s) => s.id)).toEqual([ids.otherTenantSession]);
    const nobody = await cli('sessions', 'ls', '--store', url, '--user', 'nobody');
    expect(nobody.stdout.trim()).toBe('no sessions');
  });

  it('tasks ls filters by state', async () => {
    const collecting = await cli('tasks', 'ls', '--store', url, '--state', 'COLLECTING');
    expect(collecting.stdout).toContain(ids.task);
    expect(collecting.stdout).toContain('waiting for the date');
    const done = await cli('tasks', 'ls', '--store', url, '--state', 'DONE');
    expect(done.stdout).not.toContain(ids.task);
  });

  it('actions ls --status UNKNOWN, then actions resolve settles it with a result and a note', async () => {
    const unknown = await cli('actions', 'ls', '--store', url, '--status', 'UNKNOWN');
    expect(unknown.stdout).toContain(ids.unknownAction);
    expect(unknown.stdout).not.toContain(ids.doneAction);
    const resolved = await cli(
      'actions',
      'resolve',
      ids.unknownAction,
      '--status',
      'SUCCESS',
      '--result',
      '{"booking":"ABC123"}',
      '--store',
      url,
    );
    expect(resolved.stderr).toBe('');
    expect(resolved.code).toBe(0);
    expect(resolved.stdout).toContain('SUCCESS');
    expect(resolved.stdout).toContain(`task ${ids.task} goes on at the next turn of its session`);
    const action = await store.getAction({ tenant_id: 'default' }, ids.unknownAction);
    expect([action?.status, action?.result]).toEqual(['SUCCESS', { booking: 'ABC123' }]);
    expect(action?.note).toContain('command line');
    const again = await cli('actions', 'resolve', ids.unknownAction, '--status', 'FAILED', '--store', url);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('already SUCCESS');
    expect(again.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('inspect shows the status line and the timeline of a session, a task and an action', async () => {
    const session = await cli('inspect', ids.session, '--store', url);
    expect(session.code).toBe(0);
    expect(session.stdout).toContain(`session ${ids.session}`);
    expect(session.stdout).toContain('message #1 user: I need a flight to Lisbon');
    expect(session.stdout).toContain('INIT -> COLLECTING');
    expect(session.stdout).toContain('waiting for the date');
    expect(session.stdout).toContain(`action ${ids.doneAction} SUCCESS`);
    const lines = session.stdout
      .split('\n')
      .filter((l) => /^\d{4}-/.test(l))
      .map((l) => l.slice(0, 19));
    expect([...lines].sort()).toEqual(lines);
    const task = await cli('inspect', ids.task, '--store', url);
    expect(task.stdout).toContain(`task ${ids.task}`);
    const action = await cli('inspect', ids.doneAction, '--store', url, '--json');
    expect((JSON.parse(action.stdout) as { kind: string }).kind).toBe('action');
    const other = await cli('inspect', ids.otherTenantSession, '--store', url);
    expect(other.code).toBe(1);
    expect(other.stderr).toContain('not found');
  });

  it("inspect shows a long session whole: every message, every run's checkpoints", async () => {
    const scope = { tenant_id: 'default', user_id: 'lin' };
    const session = await store.createSession(scope, { agent: 'flight_booking' });
    // 30 runs of 40 messages each (1,200 messages), each run with 2 checkpoints.
    for (let run = 0; run < 30; run++) {
      const run_id = `run_long${String(run).padStart(2, '0')}`;
      for (let step = 1; step <= 2; step++)
        await store.putCheckpoint(scope, { run_id, session_id: session.id, step, channels: { step } });
      await store.appendMessages(
        scope,
        session.id,
        Array.from({ length: 40 }, (_, i) => ({
          role: i % 2 === 0 ? ('user' as const) : ('assistant' as const),
          content: `run ${run} message ${i}`,
          metadata: { run_id },
        })),
      );
    }
    const shown = await cli('inspect', session.id, '--store', url, '--json');
    expect(shown.code, shown.stderr).toBe(0);
    const timeline = (JSON.parse(shown.stdout) as { timeline: { text: string }[] }).timeline;
    expect(timeline.filter((e) => e.text.startsWith('message #'))).toHaveLength(1200);
    const checkpoints = timeline.filter((e) => e.text.startsWith('checkpoint '));
    expect(checkpoints).toHaveLength(60);
    expect(new Set(checkpoints.map((e) => /run (\S+)/.exec(e.text)?.[1])).size).toBe(30);
  });

  it('ttltest runs on a temporary SQLite file when no store is given, and removes it', async () => {
    const report = `${tmp.dir}/ttl-default/ttl.json`;
    const before = readdirSync(tmpdir()).filter((name) => name.startsWith('agentstate-ttltest-'));
    const run = await cli(
      'ttltest',
      '--sessions',
      '3',
      '--ttl',
      '1',
      '--wait',
      '2',
      '--messages',
      '1',
      '--sweep-interval',
      '200',
      '--report',
      report,
    );
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^sqlite:\S+agentstate-ttltest-\S+: 0 of 3 sessions remain/m);
    const after = readdirSync(tmpdir()).filter((name) => name.startsWith('agentstate-ttltest-'));
    expect(after.filter((name) => !before.includes(name))).toEqual([]);
  });

  it('sweep removes expired sessions; migrate is safe to repeat', async () => {
    const short = await store.createSession({ tenant_id: 'default', user_id: 'ada' }, { ttl_seconds: 1 });
    await new Promise((r) => setTimeout(r, 1200));
    const swept = await cli('sweep', '--store', url);
    expect(swept.code).toBe(0);
    expect(swept.stdout).toMatch(/swept [1-9]\d* expired session/);
    expect(await store.getSession({ tenant_id: 'default' }, short.id)).toBeNull();
    for (let i = 0; i < 2; i++) {
      const migrated = await cli('migrate', '--store', url);
      expect(migrated.code).toBe(0);
      expect(migrated.stdout).toContain('migrated');
    }
  });

  it('errors are one sentence on stderr with a non-zero exit, never a stack trace', async () => {
    const cases: string[][] = [
      ['inspect', 'nonsense', '--store', url],
      ['inspect', 'sess_aaaaaaaaaaaaaaaaaaaaaaaaaa', '--store', url],
      ['sessions', 'ls', '--store', 'mysql://nowhere'],
      ['sessions', 'ls', '--store', `sqlite:${tmp.dir}/state.db/inside-a-file.db`],
      ['actions', 'resolve', ids.doneAction, '--status', 'MAYBE', '--store', url],
      ['actions', 'resolve', ids.doneAction, '--status', 'SUCCESS', '--result', '{not json', '--store', url],
      ['tasks', 'ls', '--limit', '0', '--store', url],
      ['sessions', 'ls', '--status', 'expired', '--store', url],
      ['migrate', '--tenant', 'acme', '--store', url],
      ['no-such-command'],
      ['serve', '--host', '0.0.0.0', '--port', '0', '--store', url],
      // Node's recursive mkdir never returns here (mkdir(2) says ENOENT under /proc).
      ['migrate', '--store', 'sqlite:/proc/agentstate-nope/state.db'],
      // A report that cannot be written fails before the run, not after it.
      ['crashtest', '--kills', '1', '--report', '/proc/agentstate-nope/crash.json', '--store', url],
      ['loadtest', '--report', '/proc/agentstate-nope/load.json'],
      ['loadtest', '--turn-threads', 'xyz'],
      ['ttltest', '--store', 'memory:', '--report', `${tmp.dir}/state.db/ttl/ttl.json`],
      ['airline', '--port', '0', '--data-dir', '/proc/agentstate-nope'],
    ];
    const results = await Promise.all(cases.map((args) => cli(...args)));
    for (const [i, args] of cases.entries()) {
      const result = results[i] as Awaited<ReturnType<typeof cli>>;
      expect({ args, code: result.code }).toEqual({ args, code: 1 });
      expect(result.stderr.trim().length).toBeGreaterThan(0);
      expect(hasStackTrace(result.stderr), result.stderr).toBe(false);
    }
    // The benchmark's own usage errors exit 2, with its usage.
    const bench = await cli('bench', '--no-such-option');
    expect(bench.code).toBe(2);
    expect(bench.stderr).toContain("Unknown option '--no-such-option'");
    expect(bench.stderr).toContain('usage: agentstate bench [--size');
    const threads = results[cases.findIndex((args) => args.includes('xyz'))];
    expect(threads?.stderr).toContain('--turn-threads must be auto or a whole number >= 0, got "xyz"');
    expect(hasStackTrace(bench.stderr), bench.stderr).toBe(false);
  });
});
