/**
 * The inspector in a real browser: a flight booking run through the chat panel, the task's state machine
 * following each turn (COLLECTING, CONFIRMING, DONE) with its path drawn, the slots filling up, and the
 * timeline holding the messages, transitions, the booking action and checkpoints. The page loads nothing
 * from anywhere but its own server.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Session, Task, TaskEvent } from '../../src/core/model.js';
import {
  apiCall,
  type InspectorServer,
  launchBrowser,
  openInspector,
  rand,
  screenshot,
  startInspectorServer,
} from './harness.js';

const POSTGRES_URL = process.env.AGENTSTATE_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const schema = `inspector_${randomBytes(5).toString('hex')}`;
const STORES = [
  { name: 'sqlite', url: undefined },
  { name: 'postgres', url: `${POSTGRES_URL}${POSTGRES_URL.includes('?') ? '&' : '?'}schema=${schema}` },
] as const;

let browser: Browser;
beforeAll(async () => {
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  const pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 1 });
  await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await pool.end();
});

/** "Dec 20" as the rules model reads it on the real clock: the next 20 December. */
function nextDec20(): string {
  const now = new Date();
  const passed = now.getUTCMonth() === 11 && now.getUTCDate() > 20;
  return `${now.getUTCFullYear() + (passed ? 1 : 0)}-12-20`;
}

async function say(page: Page, input: string, reply: string | RegExp): Promise<void> {
  await page.getByLabel('Message to the agent').fill(input);
  await page.getByRole('button', { name: 'Send' }).click();
  await page.getByTestId('chat-log').locator('li.assistant', { hasText: reply }).last().waitFor();
}

async function diagramState(page: Page, state: string): Promise<void> {
  await page.locator(`section[aria-labelledby="tasks-title"] svg[data-state="${state}"]`).waitFor();
}

describe.each(STORES)('inspector: chat and task state on $name', ({ name, url }) => {
  let server: InspectorServer;
  beforeAll(async () => {
    server = await startInspectorServer(url);
  });
  afterAll(async () => {
    await server?.close();
  });

  it('runs a flight booking through the chat panel and shows the task move through its states', async () => {
    const user = rand('ada');
    const session = await apiCall<Session>(server, 'POST', '/v1/sessions', {
      user_id: user,
      agent: 'flight_booking',
      context: { timezone: 'Europe/London' },
    });
    const page = await openInspector(browser, server, server.key);
    const requests: string[] = [];
    page.on('request', (request) => requests.push(request.url()));

    await page.locator(`tr[data-session="${session.id}"] a`).click();
    await page.getByTestId('session-head').getByText(user).waitFor();

    await say(page, 'I need a flight to Shenzhen', 'Where are you flying from?');
    await diagramState(page, 'COLLECTING');
    expect(await page.locator('.slot.missing').count()).toBeGreaterThan(0);
    await screenshot(page, `flight-collecting-${name}`);

    await say(page, 'from Chengdu, on Dec 20', 'Which cabin class');
    await say(page, 'economy', "What is the passenger's full name?");
    await say(page, 'Ada Lovelace', 'Shall I book it?');
    await diagramState(page, 'CONFIRMING');
    expect(await page.locator('.slot.missing').count()).toBe(0);
    expect(await page.getByTestId('status-line').first().textContent()).toMatch(/CTU|SZX|confirm/i);

    await say(page, 'yes please', new RegExp(`^Booked: CTU to SZX on ${nextDec20()} for Ada Lovelace`));
    await diagramState(page, 'DONE');
    const tasksPanel = page.locator('section[aria-labelledby="tasks-title"]');
    // The path COLLECTING → CONFIRMING → EXECUTING → DONE, each transition drawn as taken.
    const taken = await tasksPanel.locator('g.edge.on').count();

    const [task] = (await apiCall<{ items: Task[] }>(server, 'GET', `/v1/tasks?session_id=${session.id}`))
      .items;
    expect(task?.state).toBe('DONE');
    const events = (await apiCall<{ items: TaskEvent[] }>(server, 'GET', `/v1/tasks/${task?.id}/events`))
      .items;
    const path = events.filter((e) => e.from_state !== null).map((e) => `${e.from_state}>${e.to_state}`);
    // Created straight into COLLECTING by the first turn, then three transitions.
    expect(events[0]).toMatchObject({ from_state: null, to_state: 'COLLECTING' });
    expect(path).toEqual(['COLLECTING>CONFIRMING', 'CONFIRMING>EXECUTING', 'EXECUTING>DONE']);
    expect(taken).toBe(new Set(path).size);
    expect(await tasksPanel.locator('g.node.current').getAttribute('data-node')).toBe('DONE');

    const timeline = page.getByTestId('timeline');
    await timeline
      .locator('li[data-kind="action"][data-phase="end"]', { hasText: 'airline.book' })
      .getByText('SUCCESS')
      .waitFor();
    expect(await timeline.locator('li[data-kind="event"]').count()).toBe(events.length);
    expect(await timeline.locator('li[data-kind="message"]').count()).toBe(10);
    expect(await timeline.locator('li[data-kind="checkpoint"]').count()).toBeGreaterThan(0);
    await page.getByTestId('context').getByText('tokens').waitFor();
    await screenshot(page, name === 'sqlite' ? 'flight-done' : `flight-done-${name}`);

    expect(requests.length).toBeGreaterThan(0);
    for (const url of requests) expect(url.startsWith(`${server.url}/`)).toBe(true);
    expect((page as Page & { problems?: string[] }).problems).toEqual([]);
    await page.context().close();
  });
});
