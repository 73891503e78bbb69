/**
 * Branches in the inspector, in Chromium on a SQLite store: "Fork here" on a message of the timeline makes a
 * fork and opens it (its header links back to what it was forked from, its timeline holds the prefix only);
 * the original lists the fork among its branches; "Rewind here" asks first: dismissed, nothing changes;
 * accepted, the session continues after that message and what came after is listed as a new branch.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Message, Session } from '../../src/core/model.js';
import {
  apiCall,
  type InspectorServer,
  launchBrowser,
  openInspector,
  rand,
  screenshot,
  startInspectorServer,
} from './harness.js';

let server: InspectorServer;
let browser: Browser;

beforeAll(async () => {
  [server, browser] = await Promise.all([startInspectorServer(), launchBrowser()]);
});
afterAll(async () => {
  await browser?.close();
  await server?.close();
});

const timelineMessages = (page: Page) => page.locator('[data-testid="timeline"] li[data-kind="message"]');
const branchesSection = (page: Page) => page.locator('section[aria-labelledby="branches-title"]');

async function messagesOf(id: string): Promise<string[]> {
  const page = await apiCall<{ items: Message[] }>(server, 'GET', `/v1/sessions/${id}/messages?limit=100`);
  return page.items.map((m) => m.content);
}

describe('inspector: a session’s branches', () => {
  it('forks at a message and opens the fork; rewinds after asking; lists the branches', async () => {
    const user = rand('ada');
    const session = await apiCall<Session>(server, 'POST', '/v1/sessions', { user_id: user });
    await apiCall(server, 'POST', `/v1/sessions/${session.id}/messages`, {
      messages: ['one', 'two', 'three', 'four'].map((content, i) => ({
        role: i % 2 === 0 ? 'user' : 'assistant',
        content,
      })),
    });
    const page = await openInspector(browser, server, await server.token(user));
    await page.goto(`${server.url}/#/sessions/${session.id}`);
    await branchesSection(page).getByRole('heading', { name: 'Branches (0)' }).waitFor();
    await expect.poll(() => timelineMessages(page).count()).toBe(4);
    expect(await page.getByTestId('forked-from').count()).toBe(0);
    // The session already continues after its last message: that one has no Rewind here.
    expect(await page.getByRole('button', { name: /^Rewind here/ }).count()).toBe(3);
    expect(await page.getByRole('button', { name: /^Fork here/ }).count()).toBe(4);

    // Fork here on message #2: the page opens the fork.
    await page.getByRole('button', { name: 'Fork here: a new session after message #2' }).click();
    await page.waitForURL((url) => /^#\/sessions\/sess_/.test(url.hash) && !url.hash.includes(session.id));
    const forkId = decodeURIComponent(new URL(page.url()).hash.split('/')[2] ?? '');
    const origin = page.getByTestId('forked-from');
    await origin.waitFor();
    expect(await origin.textContent()).toContain('after message #2');
    await origin.locator(`a[href="#/sessions/${session.id}"]`).waitFor();
    await expect.poll(() => timelineMessages(page).count()).toBe(2);
    expect(await timelineMessages(page).allTextContents()).toEqual([
      expect.stringContaining('one'),
      expect.stringContaining('two'),
    ]);
    const fork = await apiCall<Session>(server, 'GET', `/v1/sessions/${forkId}`);
    expect(fork.forked_from).toEqual({ session_id: session.id, seq: 2, checkpoint_id: null });
    expect(fork.user_id).toBe(user);
    await screenshot(page, 'branches-fork');

    // Back to the original by the link: the fork is among its branches.
    await origin.locator('a').click();
    await branchesSection(page).getByRole('heading', { name: 'Branches (1)' }).waitFor();
    await branchesSection(page)
      .locator(`li[data-session="${forkId}"] a[href="#/sessions/${forkId}"]`)
      .waitFor();

    // Rewind here asks first; dismissed, nothing changes.
    const questions: string[] = [];
    page.once('dialog', (dialog) => {
      questions.push(dialog.message());
      void dialog.dismiss();
    });
    const rewindAt1 = page.getByRole('button', { name: 'Rewind here: continue after message #1' });
    await rewindAt1.click();
    await expect.poll(() => questions.length).toBe(1);
    expect(questions[0]).toContain(`Rewind session ${session.id} to message #1?`);
    expect(await messagesOf(session.id)).toEqual(['one', 'two', 'three', 'four']);
    expect(await timelineMessages(page).count()).toBe(4);

    // Accepted: the session continues after message #1; the rest is a new branch.
    page.once('dialog', (dialog) => void dialog.accept());
    await rewindAt1.click();
    await expect.poll(() => timelineMessages(page).count()).toBe(1);
    await branchesSection(page).getByRole('heading', { name: 'Branches (2)' }).waitFor();
    expect(await messagesOf(session.id)).toEqual(['one']);
    const { items } = await apiCall<{ items: Session[] }>(
      server,
      'GET',
      `/v1/sessions/${session.id}/branches`,
    );
    expect(items.map((s) => s.id)[0]).toBe(forkId);
    const branch = items[1] as Session;
    expect(await messagesOf(branch.id)).toEqual(['one', 'two', 'three', 'four']);
    await branchesSection(page).locator(`li[data-session="${branch.id}"]`).waitFor();
    // The context the model would see follows the rewind at once.
    await expect.poll(() => page.locator('[data-testid="context"] .ctx-messages li').count()).toBe(1);
    await screenshot(page, 'branches-rewound');

    // The fork kept its own line: the rewind of the original changed nothing in it.
    expect(await messagesOf(forkId)).toEqual(['one', 'two']);
    expect((page as Page & { problems?: string[] }).problems).toEqual([]);
    await page.context().close();
  });

  it("a fork's copied task shows the actions done before the fork point and those the original ran after", async () => {
    const user = rand('bo');
    const scope = { tenant_id: server.tenant, user_id: user };
    const { store } = server;
    const tick = () => new Promise((resolve) => setTimeout(resolve, 5));
    const session = await store.createSession(scope, {});
    await store.appendMessages(scope, session.id, [{ role: 'user', content: 'find me a flight' }]);
    const task = await store.createTask(scope, { session_id: session.id, type: 'flight_booking' });
    const action = async (tool: string, key: string) => {
      const { action: begun } = await store.beginAction(scope, {
        task_id: task.id,
        session_id: session.id,
        type: 'tool_call',
        tool,
        params: { flight: 'TP123' },
        idempotency_key: key,
      });
      await store.completeAction(scope, begun.id, { status: 'SUCCESS', result: { ok: true } });
      return begun.id;
    };
    const searched = await action('airline.search', rand('k-'));
    await tick();
    await store.appendMessages(scope, session.id, [{ role: 'assistant', content: 'TP123 it is' }]);
    await tick();
    const booked = await action('airline.book', rand('k-'));

    const page = await openInspector(browser, server, await server.token(user));
    await page.goto(`${server.url}/#/sessions/${session.id}`);
    await page.getByRole('button', { name: 'Fork here: a new session after message #1' }).click();
    await page.waitForURL((url) => /^#\/sessions\/sess_/.test(url.hash) && !url.hash.includes(session.id));
    const card = page.getByTestId('forked-task');
    await card.locator(`a[href="#/tasks/${task.id}"]`).waitFor();
    await card.getByTestId('fork-actions-done').locator(`li[data-action="${searched}"]`).waitFor();
    expect(await card.getByTestId('fork-actions-done').textContent()).toContain('airline.search');
    const after = card.getByTestId('fork-actions-after');
    await after.locator(`li[data-action="${booked}"]`).waitFor();
    expect(await after.textContent()).toMatch(/airline\.book\s*SUCCESS/);
    expect(await card.textContent()).toContain('their effects are in the world');
    await screenshot(page, 'branches-forked-task');
    expect((page as Page & { problems?: string[] }).problems).toEqual([]);
    await page.context().close();
  });
});
