/**
 * `agentstate chat` shows a turn as it happens: the reply as its pieces arrive and a line per task or action
 * change. The printer alone (a pipe, a terminal that can erase), then the real CLI through a server whose
 * turn writes its events slowly (a stub runner), on a pipe and in a real terminal (tmux): the first piece of
 * the reply is on the screen before the second exists, and on a terminal the streamed reply then gives way
 * to the usual screen (the reply beside the tasks) with the change lines kept above it.
 */
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { actionChangeLine, displayWidth, LiveTurn, rowsOf, taskChangeLine } from '../../src/cli/chat/live.js';
import type { Task } from '../../src/core/model.js';
import { runIdFor } from '../../src/core/run-id.js';
import type { TurnResponse, TurnRunner } from '../../src/server/turn-runner.js';
import type { NewRunEvent } from '../../src/store/types.js';
import { startTestServer, type TestServer } from '../http/harness.js';
import { MAIN, spawnCli, TSX, tempDir } from './run.js';
import { TmuxPane } from './tmux.js';

function output(isTTY: boolean, columns = 80) {
  const written: string[] = [];
  return { written, out: { write: (text: string) => written.push(text), isTTY, columns } };
}

const TASK = {
  task_id: 'task_x',
  type: 'flight_booking',
  state: 'COLLECTING',
  slots: { origin: 'Paris' },
  status_line: 'Where to?',
  version: 1,
};
const ACTION = { action_id: 'act_x', tool: 'airline.search', status: 'SUCCESS', attempts: 1, error: null };

describe('the live turn printer', () => {
  it('on a pipe: change lines, the reply as it comes, continued under a line that came inside it', () => {
    const { written, out } = output(false);
    const live = new LiveTurn(out);
    live.event({ type: 'run.started', data: {} });
    live.event({ type: 'task.updated', data: TASK });
    live.event({ type: 'message.delta', data: { text: 'Hel' } });
    live.event({ type: 'message.delta', data: { text: 'lo' } });
    live.event({
      type: 'action.updated',
      data: { ...ACTION, attempts: 2, status: 'FAILED', error: { message: 'down' } },
    });
    live.event({ type: 'message.delta', data: { text: ' there\nbye' } });
    expect(live.finish(true)).toBe(true);
    expect(written.join('')).toBe(
      '  ■ flight_booking · COLLECTING · Where to?\n' +
        'agent> Hello\n' +
        '  ▸ airline.search · FAILED · attempt 2 · down\n' +
        '       there\n' +
        '       bye\n',
    );
  });

  it('on a terminal: a line inside the reply goes above it, and finishing erases the reply', () => {
    const { written, out } = output(true, 30);
    const live = new LiveTurn(out);
    live.event({ type: 'message.delta', data: { text: 'a reply longer than thirty' } });
    live.event({ type: 'action.updated', data: ACTION });
    // The reply took two rows: back to its first, cleared, the line, the reply again.
    expect(written.slice(1).join('')).toBe(
      '\r\u001b[1A\u001b[J  ▸ airline.search · SUCCESS\nagent> a reply longer than thirty',
    );
    written.length = 0;
    expect(live.finish(true)).toBe(false);
    expect(written.join('')).toBe('\r\u001b[1A\u001b[J');
    // Nothing streamed: nothing to erase, the caller writes the whole turn.
    const quiet = output(true);
    expect(new LiveTurn(quiet.out).finish(true)).toBe(false);
    expect(quiet.written).toEqual([]);
  });

  it('measures rows as a terminal wraps them', () => {
    expect(displayWidth('abc')).toBe(3);
    expect(displayWidth('北京')).toBe(4);
    expect(displayWidth('e\u0301')).toBe(1);
    expect(rowsOf('agent> hi', 80)).toBe(1);
    expect(rowsOf('x'.repeat(80), 80)).toBe(1);
    expect(rowsOf('x'.repeat(81), 80)).toBe(2);
    expect(rowsOf('a\n\nb', 80)).toBe(3);
    expect(taskChangeLine({ type: 'deploy' }, 40)).toBeNull();
    expect(actionChangeLine({ tool: 'x' }, 40)).toBeNull();
    expect(taskChangeLine({ ...TASK, status_line: 'x'.repeat(100) }, 40)).toHaveLength(40);
  });
});

/** A runner whose turn writes its events one by one, the reply's second piece after a pause. */
function slowRunner(server: () => TestServer, pauseMs: number): TurnRunner {
  return {
    async runTurn(scope, session, _input, options) {
      const runId = runIdFor(session.id, Date.now());
      const put = (...events: NewRunEvent[]) =>
        server().store.appendRunEvents(scope, { session_id: session.id, run_id: runId, events });
      options?.onRun?.(runId);
      await put({ type: 'run.started', data: { run_id: runId } }, { type: 'task.updated', data: TASK });
      await put({ type: 'message.delta', data: { text: 'Hel' } });
      await new Promise((resolve) => setTimeout(resolve, pauseMs));
      await put({ type: 'action.updated', data: ACTION });
      await put({ type: 'message.delta', data: { text: 'lo there' } });
      const task = {
        id: 'task_x',
        type: 'flight_booking',
        state: 'COLLECTING',
        slots: { origin: 'Paris' },
        status_line: 'Where to?',
      } as unknown as Task;
      const answer: TurnResponse = {
        reply: 'Hello there',
        session: null,
        tasks: [task],
        actions: [],
        checkpoint_id: null,
      };
      await put({ type: 'run.completed', data: JSON.parse(JSON.stringify(answer)) });
      return answer;
    },
    async resume() {
      throw new Error('no resume here');
    },
    async checkpoints() {
      return { items: [], next_cursor: null };
    },
  };
}

describe('agentstate chat streams a turn', { timeout: 120_000 }, () => {
  const tmp = tempDir();
  const panes: TmuxPane[] = [];
  const children: ChildProcess[] = [];
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ turns: slowRunner(() => server, 2500) });
  });
  afterAll(async () => {
    for (const pane of panes) pane.kill();
    for (const child of children) child.kill('SIGTERM');
    await server.close();
    tmp.cleanup();
  });

  it('on a pipe: the first piece of the reply is out before the second, then the tasks', async () => {
    const child = spawnCli(['chat', '--server', server.url, '--token', server.tokens.alice], tmp.dir);
    children.push(child);
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const until = async (pattern: RegExp) => {
      const deadline = Date.now() + 60_000;
      while (!pattern.test(stdout)) {
        if (Date.now() > deadline) throw new Error(`stdout never matched ${pattern}:\n${stdout}\n${stderr}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };
    await until(/you> /);
    child.stdin?.write('hi\n');
    await until(/agent> Hel/);
    expect(stdout).not.toContain('lo there');
    expect(stdout).toContain('  ■ flight_booking · COLLECTING · Where to?\nagent> Hel');
    child.stdin?.end('/quit\n');
    await until(/left session/);
    expect(stdout).toContain(
      'agent> Hel\n  ▸ airline.search · SUCCESS\n       lo there\n■ flight_booking · COLLECTING\n  slots: origin=Paris\n  Where to?\n',
    );
    expect(stderr).toBe('');
  });

  it('in a terminal: the reply streams, then stands beside the tasks, the change lines above it', async () => {
    const pane = new TmuxPane(
      `${process.execPath} --import ${TSX} ${MAIN} chat --server ${server.url} --token ${server.tokens.alice}`,
      tmp.dir,
    );
    panes.push(pane);
    await pane.waitFor(/you> $/m);
    pane.type('hi');
    const partial = (await pane.waitFor(/agent> Hel$/m)).input ?? '';
    expect(partial).not.toContain('lo there');
    const screen = (await pane.waitFor(/agent> Hello there\s+│ tasks[\s\S]*you> $/m)).input ?? '';
    const turn = screen.slice(screen.indexOf('you> hi'));
    expect(turn).toMatch(
      /you> hi\n {2}■ flight_booking · COLLECTING · Where to\?\n {2}▸ airline\.search · SUCCESS\nagent> Hello there/,
    );
    expect(turn.match(/agent>/g)).toHaveLength(1);
    expect(turn).toMatch(/│ ■ flight_booking · COLLECTING/);
    pane.type('/quit');
    await pane.waitFor(/left session/);
  });
});
