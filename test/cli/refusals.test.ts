/**
 * The command line as a real process: refusals in one sentence before anything starts or is created, the
 * come-back hint of chat, a closed pipe, ids, times and memory --user.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { comeBackCommand } from '../../src/cli/commands/chat.js';
import { newId } from '../../src/core/ids.js';
import { openStore } from '../../src/store/open.js';
import type { StateStore } from '../../src/store/types.js';
import { type CliResult, hasStackTrace, runCli, spawnCli, tempDir } from './run.js';

const tmp = tempDir();
const url = `sqlite:${tmp.dir}/state.db`;
const scope = { tenant_id: 'default', user_id: 'alice' };
let store: StateStore;
const ids = { session: '', ended: '', unknownAction: '', bigSession: '' };

beforeAll(async () => {
  store = await openStore(url);
  const session = await store.createSession(scope, { agent: 'flight_booking' });
  await store.appendMessages(scope, session.id, [{ role: 'user', content: 'to Lisbon' }]);
  const task = await store.createTask(scope, { session_id: session.id, type: 'flight_booking' });
  const begun = await store.beginAction(scope, {
    task_id: task.id,
    session_id: session.id,
    type: 'tool_call',
    tool: 'airline.book',
    params: { flight: 'TP123' },
    idempotency_key: `k-${session.id}`,
  });
  await store.markActionUnknown(scope, begun.action.id, 'timed out');
  const ended = await store.createSession(scope, { agent: 'flight_booking' });
  await store.endSession(scope, ended.id);
  // Enough lines that a reader closing the pipe after the first breaks the writer's next write.
  const big = await store.createSession(scope, { agent: 'flight_booking' });
  for (let i = 0; i < 10; i++) {
    await store.appendMessages(
      scope,
      big.id,
      Array.from({ length: 100 }, (_, j) => ({
        role: 'user' as const,
        content: `message ${i}-${j} `.padEnd(100, 'x'),
      })),
    );
  }
  Object.assign(ids, {
    session: session.id,
    ended: ended.id,
    unknownAction: begun.action.id,
    bigSession: big.id,
  });
});

afterAll(async () => {
  await store.close();
  tmp.cleanup();
});

const cli = (...args: string[]) => runCli(args, tmp.dir);

/** The CLI with `input` on stdin (then closed), killed with SIGTERM if it runs longer than `ms`. */
function runWithInput(args: readonly string[], input: string, ms = 60_000): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawnCli(args, tmp.dir);
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (c: Buffer) => {
      stdout += c.toString();
    });
    child.stderr?.on('data', (c: Buffer) => {
      stderr += c.toString();
    });
    const timer = setTimeout(() => child.kill('SIGTERM'), ms);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin?.end(input);
  });
}

/** Exit 1 with one line on stderr matching `pattern` (commander's usage hint aside), no stack trace. */
function expectRefused(result: CliResult, pattern: RegExp): void {
  expect(result.code, result.stderr).toBe(1);
  expect(hasStackTrace(result.stderr), result.stderr).toBe(false);
  const lines = result.stderr
    .trim()
    .split('\n')
    .filter((l) => l !== '(run with --help for usage)');
  expect(lines, result.stderr).toHaveLength(1);
  expect(result.stderr).toMatch(pattern);
}

describe('agentstate command line: refusals and what it prints', { timeout: 180_000 }, () => {
  it('serve --workers 2 refuses an in-process store at start', async () => {
    for (const inProcess of ['memory:', 'sqlite::memory:']) {
      const result = await runWithInput(
        ['serve', '--port', '0', '--workers', '2', '--store', inProcess],
        '',
        30_000,
      );
      expectRefused(result, /--workers 2 needs a store every process can open/);
    }
  });

  it('read-only commands refuse a sqlite file that does not exist and create nothing', async () => {
    const missing = `sqlite:${tmp.dir}/typo/xx.db`;
    const fakeSession = newId('session');
    const fakeAction = newId('action');
    const cases = [
      ['sessions', 'ls'],
      ['tasks', 'ls'],
      ['actions', 'ls', '--status', 'UNKNOWN'],
      ['actions', 'resolve', fakeAction, '--status', 'SUCCESS'],
      ['inspect', fakeSession],
      ['memory', 'ls', '--user', 'ada'],
      ['memory', 'get', '--user', 'ada', 'facts', 'home'],
      ['memory', 'rm', '--user', 'ada', 'facts', 'home'],
      ['sweep'],
    ];
    const results = await Promise.all(cases.map((args) => cli(...args, '--store', missing)));
    for (const [i, args] of cases.entries()) {
      const result = results[i] as CliResult;
      expect({ args, stdout: result.stdout }).toEqual({ args, stdout: '' });
      expectRefused(result, /store sqlite:\S+typo\/xx\.db does not exist \(run `agentstate migrate --store/);
    }
    expect(existsSync(join(tmp.dir, 'typo'))).toBe(false);
    // The same file in an existing folder: not created either.
    const typo = await cli('actions', 'ls', '--status', 'UNKNOWN', '--store', `sqlite:${tmp.dir}/typo2.db`);
    expectRefused(typo, /does not exist/);
    expect(existsSync(join(tmp.dir, 'typo2.db'))).toBe(false);
    // migrate still creates it.
    const migrated = await cli('migrate', '--store', `sqlite:${tmp.dir}/made/new.db`);
    expect(migrated.code, migrated.stderr).toBe(0);
    expect(existsSync(join(tmp.dir, 'made/new.db'))).toBe(true);
  });

  it('serve and chat check --data-dir before they create the store', async () => {
    const served = await runWithInput(
      [
        'serve',
        '--port',
        '0',
        '--store',
        `sqlite:${tmp.dir}/serve-new.db`,
        '--data-dir',
        '/proc/agentstate-nope',
      ],
      '',
    );
    expectRefused(served, /cannot create \/proc\/agentstate-nope/);
    const chat = await runWithInput(
      ['chat', '--store', `sqlite:${tmp.dir}/chat-new.db`, '--data-dir', '/proc/agentstate-nope'],
      '/quit\n',
    );
    expectRefused(chat, /cannot create \/proc\/agentstate-nope/);
    expect(readdirSync(tmp.dir).filter((f) => /(serve|chat)-new/.test(f))).toEqual([]);
  });

  it('crashtest refuses in-process stores and bad store URLs in one sentence, before any child', async () => {
    const report = join(tmp.dir, 'crash/crash.json');
    const cases: [string, RegExp][] = [
      [
        'memory:',
        /crashtest needs a store that a new process can open again.*memory: dies with each killed child/,
      ],
      ['sqlite::memory:', /sqlite::memory: dies with each killed child/],
      ['sqlite:file:x.db?mode=memory', /dies with each killed child/],
      ['bogus:x', /^agentstate: unknown store URL "bogus:x"/],
      ['sqlite:', /path must be a non-empty file path/],
    ];
    const results = await Promise.all(
      cases.map(([store]) => cli('crashtest', '--kills', '1', '--store', store, '--report', report)),
    );
    for (const [i, [, pattern]] of cases.entries()) {
      const result = results[i] as CliResult;
      expectRefused(result, pattern);
      expect(result.stderr).not.toContain('Node.js v');
      expect(result.stdout).toBe('');
    }
    expect(existsSync(report)).toBe(false);
  });

  it('chat prints a come-back command that works as written (tenant, user, data dir)', async () => {
    const chatStore = `sqlite:${tmp.dir}/chat.db`;
    const first = await runWithInput(
      ['chat', '--store', chatStore, '--data-dir', `${tmp.dir}/d`, '--user', 'alice', '--tenant', 'acme'],
      '/quit\n',
    );
    expect(first.code, first.stderr).toBe(0);
    const hint = /come back with: (agentstate chat .+)$/m.exec(first.stdout)?.[1] ?? '';
    expect(hint).toMatch(/--user alice/);
    expect(hint).toMatch(/--tenant acme/);
    expect(hint).toContain(`--data-dir ${tmp.dir}/d`);
    const words = hint.split(' ').slice(1);
    const again = await runWithInput(words, '/quit\n');
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/back in session sess_/);
  });

  it("chat's come-back command never shows the token typed on the command line", () => {
    const line = comeBackCommand(
      'sess_x',
      { agent: 'flight_booking', server: 'http://127.0.0.1:8787', token: 'secret-token-value', dataDir: 'd' },
      () => false,
    );
    expect(line).toBe('agentstate chat --session sess_x --server http://127.0.0.1:8787 --token TOKEN');
  });

  it('chat --session of an ended session is refused at open (store and server)', async () => {
    const onStore = await runWithInput(
      ['chat', '--store', url, '--user', 'alice', '--data-dir', `${tmp.dir}/d`, '--session', ids.ended],
      'hello\n/quit\n',
    );
    expectRefused(onStore, new RegExp(`session ${ids.ended} has ended; start a new session`));
    expect(onStore.stdout).not.toContain('come back with');

    const server = spawnCli(
      ['serve', '--port', '0', '--store', url, '--data-dir', `${tmp.dir}/served`],
      tmp.dir,
    );
    try {
      const address = await new Promise<string>((resolve, reject) => {
        let err = '';
        server.stderr?.on('data', (c: Buffer) => {
          err += c.toString();
          const m = /agentstate serving (http:\/\/\S+)/.exec(err);
          if (m) resolve(m[1] as string);
        });
        server.on('exit', (code) => reject(new Error(`serve exited ${code}: ${err}`)));
      });
      // Unauthenticated loopback mode is tenant "default", user "default": end a session of that user.
      const mine = await store.createSession({ tenant_id: 'default', user_id: 'default' }, {});
      await store.endSession({ tenant_id: 'default', user_id: 'default' }, mine.id);
      const onServer = await runWithInput(
        ['chat', '--server', address, '--session', mine.id],
        'hello\n/quit\n',
      );
      expectRefused(onServer, new RegExp(`session ${mine.id} has ended`));
    } finally {
      server.kill('SIGTERM');
    }
  });

  it('memory get|put|rm take --user, as ls does; the user first still works', async () => {
    const common = ['--store', url, '--tenant', 'mem'];
    const put = await cli('memory', 'put', '--user', 'ada', 'facts', 'home', '"LHR"', ...common);
    expect(put.code, put.stderr).toBe(0);
    expect(put.stdout).toContain('stored facts/home for user ada');
    const get = await cli('memory', 'get', '--user', 'ada', 'facts', 'home', ...common);
    expect([get.code, get.stdout.trim()]).toEqual([0, '"LHR"']);
    const positional = await cli('memory', 'get', 'ada', 'facts', 'home', ...common);
    expect([positional.code, positional.stdout.trim()]).toEqual([0, '"LHR"']);
    expectRefused(
      await cli('memory', 'get', '--user', 'ada', 'ada', 'facts', 'home', ...common),
      /give the user once/,
    );
    expectRefused(await cli('memory', 'get', 'facts', 'home', ...common), /memory get needs --user <id>/);
    const rm = await cli('memory', 'rm', '--user', 'ada', 'facts', 'home', ...common);
    expect([rm.code, rm.stdout.trim()]).toEqual([0, 'deleted facts/home for user ada']);
    for (const command of ['get', 'put', 'rm']) {
      const help = await cli('memory', command, '--help');
      expect(help.stdout).toMatch(/Usage: agentstate memory \w+ \[options\] --user <id> <namespace> <key>/);
      expect(help.stdout).toMatch(/--user <id>/);
    }
  });

  it('a bad AGENTSTATE_PORT is refused like --port, before the store is opened', async () => {
    for (const port of ['abc', '-5', '99999']) {
      const db = join(tmp.dir, `port-${port}.db`);
      const result = await new Promise<CliResult>((resolve) => {
        const child = spawnCli(['serve', '--store', `sqlite:${db}`, '--data-dir', `${tmp.dir}/p`], tmp.dir, {
          AGENTSTATE_PORT: port,
        });
        let stderr = '';
        child.stderr?.on('data', (c: Buffer) => {
          stderr += c.toString();
        });
        const timer = setTimeout(() => child.kill('SIGTERM'), 60_000);
        child.on('close', (code) => {
          clearTimeout(timer);
          resolve({ code, stdout: '', stderr });
        });
      });
      expectRefused(
        result,
        new RegExp(`AGENTSTATE_PORT must be a port number from 0 to 65535, got "${port}"`),
      );
      expect(existsSync(db)).toBe(false);
    }
  });

  it('a reader that closes the pipe early ends the command quietly with status 0', async () => {
    const result = await new Promise<CliResult>((resolve, reject) => {
      const child = spawnCli(['inspect', ids.bigSession, '--store', url], tmp.dir);
      let stderr = '';
      let first = '';
      child.stdout?.once('data', (c: Buffer) => {
        first = c.toString();
        child.stdout?.destroy();
      });
      child.stderr?.on('data', (c: Buffer) => {
        stderr += c.toString();
      });
      child.on('error', reject);
      child.on('close', (code) => resolve({ code, stdout: first, stderr }));
    });
    expect(result.stdout).toContain(`session ${ids.bigSession}`);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
  });

  it('actions resolve refuses --result with --status FAILED', async () => {
    const result = await cli(
      'actions',
      'resolve',
      ids.unknownAction,
      '--status',
      'FAILED',
      '--result',
      '{"booking":"ABC"}',
      '--store',
      url,
      '--user',
      'alice',
    );
    expectRefused(result, /--result is for --status SUCCESS/);
    expect((await store.getAction(scope, ids.unknownAction))?.status).toBe('UNKNOWN');
  });

  it('chat --server refuses --tenant, --data-dir and --agents (and --store refuses --token)', async () => {
    const server = 'http://127.0.0.1:9';
    const cases: [string[], RegExp][] = [
      [['--tenant', 'acme'], /--tenant only applies with --store, not with --server/],
      [['--data-dir', `${tmp.dir}/d`], /--data-dir only applies with --store/],
      [['--agents', 'x.js'], /--agents only applies with --store/],
      [['--tenant', 'a', '--agents', 'x.js'], /--tenant and --agents only apply with --store/],
    ];
    for (const [extra, pattern] of cases) {
      expectRefused(await runWithInput(['chat', '--server', server, ...extra], '/quit\n'), pattern);
    }
    expectRefused(
      await runWithInput(['chat', '--store', url, '--token', 'abc'], '/quit\n'),
      /--token is for --server/,
    );
  });

  it('a malformed id says what an id looks like; not found names the user', async () => {
    expectRefused(
      await cli('inspect', 'sess_nope', '--store', url),
      /^agentstate: "sess_nope" is not a session id: session ids are sess_ followed by 26 characters/,
    );
    const action = await cli('actions', 'resolve', 'act_x', '--status', 'SUCCESS', '--store', url);
    expectRefused(action, /"act_x" is not an action id: action ids are act_ followed by 26 characters/);
    expect(action.stderr).not.toContain('[sqlite]');
    expectRefused(
      await cli('inspect', ids.session, '--user', 'bob', '--store', url),
      new RegExp(`${ids.session} not found in tenant default for user bob`),
    );
    expectRefused(await cli('tasks', 'ls', '--session', 'sess_x', '--store', url), /is not a session id/);
  });

  it('times are printed with their zone', async () => {
    const listed = await cli('sessions', 'ls', '--store', url);
    expect(listed.stdout).toMatch(/\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC/);
    const inspected = await cli('inspect', ids.session, '--store', url);
    const timeline = inspected.stdout.split('\n').filter((l) => /^\d{4}-/.test(l));
    expect(timeline.length).toBeGreaterThan(0);
    for (const line of timeline) expect(line).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC {2}/);
  });
});
