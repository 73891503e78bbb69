/**
 * `agentstate chat` in a real terminal (tmux): the reply with the open tasks beside it, leaving, and coming
 * back to the same session, both on a store directly and through a server.
 */
import type { ChildProcess } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/open.js';
import { MAIN, runCli, spawnCli, TSX, tempDir } from './run.js';
import { TmuxPane } from './tmux.js';

const tmp = tempDir();
const panes: TmuxPane[] = [];
const children: ChildProcess[] = [];

afterAll(() => {
  for (const pane of panes) pane.kill();
  for (const child of children) child.kill('SIGTERM');
  tmp.cleanup();
});

function chat(args: string): TmuxPane {
  const pane = new TmuxPane(`${process.execPath} --import ${TSX} ${MAIN} chat ${args}`, tmp.dir);
  panes.push(pane);
  return pane;
}

describe('agentstate chat', { timeout: 180_000 }, () => {
  it('on a store: shows the tasks beside the reply; leaving and coming back keeps the session', async () => {
    const url = `sqlite:${tmp.dir}/chat.db`;
    const first = chat(`--store ${url} --data-dir ${tmp.dir}/data`);
    await first.waitFor(/you> $/m);
    first.type('I want to book a flight from Paris to Lisbon');
    await first.waitFor(/agent> .+│ tasks/);
    const screen = (await first.waitFor(/■ flight_booking · COLLECTING[\s\S]*you> $/m)).input ?? '';
    expect(screen).toMatch(/│\s+slots: .*origin=/);
    first.type('/quit');
    const left = await first.waitFor(/left session (sess_[a-z2-7]{26})/);
    const sessionId = left[1] as string;

    const again = chat(`--store ${url} --data-dir ${tmp.dir}/data --session ${sessionId}`);
    await again.waitFor(new RegExp(`back in session ${sessionId}`));
    await again.waitFor(/user: I want to book a flight from Paris to Lisbon/);
    await again.waitFor(/■ flight_booking · COLLECTING/);
    again.type('to Lisbon');
    await again.waitFor(/you> to Lisbon\n[\s\S]*agent> [\s\S]*you> $/m);
    again.type('/quit');
    await again.waitFor(/left session/);

    const inspected = await runCli(['inspect', sessionId, '--store', url], tmp.dir);
    expect(inspected.code).toBe(0);
    expect(inspected.stdout).toMatch(/message #1 user: I want to book a flight from Paris to Lisbon/);
    expect(inspected.stdout).toMatch(/checkpoint ckpt_\S+ run run_\S+ step \d+/);
    expect(inspected.stdout).toMatch(/task task_\S+ \(flight_booking\) new -> /);

    const store = await openStore(url);
    try {
      const messages = await store.listMessages({ tenant_id: 'default', user_id: 'default' }, sessionId);
      expect(messages.filter((m) => m.role === 'user').map((m) => m.content)).toEqual([
        'I want to book a flight from Paris to Lisbon',
        'to Lisbon',
      ]);
    } finally {
      await store.close();
    }
  });

  it('through a server: the same chat over HTTP', async () => {
    const server = spawnCli(
      ['serve', '--port', '0', '--store', `sqlite:${tmp.dir}/served.db`, '--data-dir', `${tmp.dir}/served`],
      tmp.dir,
    );
    children.push(server);
    const url = await new Promise<string>((resolve, reject) => {
      let err = '';
      server.stderr?.on('data', (c: Buffer) => {
        err += c.toString();
        const m = /agentstate serving (http:\/\/\S+)/.exec(err);
        if (m) resolve(m[1] as string);
      });
      server.on('exit', (code) => reject(new Error(`serve exited ${code}: ${err}`)));
    });
    const pane = chat(`--server ${url}`);
    await pane.waitFor(/server http:\/\/127\.0\.0\.1/);
    await pane.waitFor(/you> $/m);
    pane.type('I want to book a flight from Paris to Lisbon');
    await pane.waitFor(/■ flight_booking · COLLECTING/);
    pane.type('/quit');
    const left = await pane.waitFor(
      /left session (sess_[a-z2-7]{26}); come back with: agentstate chat --session \S+ --server/,
    );
    const back = chat(`--server ${url} --session ${left[1]}`);
    await back.waitFor(/user: I want to book a flight from Paris to Lisbon/);
    back.type('/quit');
    await back.waitFor(/left session/);
  });
});
