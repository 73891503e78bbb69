/**
 * The inspector on runs that went wrong: a deploy_pipeline run killed by SIGKILL inside a tool call is found
 * on the session's timeline (its PENDING action and last checkpoint) and finished with "Resume"; an UNKNOWN
 * action is resolved through the "Needs attention" form and its task continues to DONE. Invalid JSON in
 * the form is refused on the page and changes nothing.
 */
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Action, Session, Task } from '../../src/core/model.js';
import { tallyEffectLog } from '../../src/demo/index.js';
import type { TurnResponse } from '../../src/http/turn-runner.js';
import {
  apiCall,
  crashDeployRun,
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
  server = await startInspectorServer();
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await server?.close();
});

const tasksPanel = (page: Page) => page.locator('section[aria-labelledby="tasks-title"]');

async function openById(page: Page, id: string): Promise<void> {
  // Keyboard only: focus the field, type, Enter.
  await page.getByLabel('Open by id').focus();
  await page.keyboard.type(id);
  await page.keyboard.press('Enter');
}

describe('inspector: runs that need a person', () => {
  it('a deploy_pipeline run killed inside a tool call is on the timeline, and Resume finishes it', async () => {
    const user = rand('ops');
    const session = await apiCall<Session>(server, 'POST', '/v1/sessions', {
      user_id: user,
      agent: 'deploy_pipeline',
    });
    const signal = await crashDeployRun(server, user, session.id, 'deploy checkout-api to staging');
    expect(signal).toBe('SIGKILL');

    const page = await openInspector(browser, server, server.key);
    await openById(page, session.id);
    const timeline = page.getByTestId('timeline');
    const begun = timeline.locator('li[data-kind="action"][data-phase="begin"]');
    const stuck = begun.filter({ hasText: 'deploy.run_tests' });
    await stuck.getByText('PENDING').waitFor();
    await timeline.locator('li[data-kind="checkpoint"]', { hasText: 'before deploy.run_tests' }).waitFor();
    expect(await begun.count()).toBe(3);
    expect(await timeline.locator('li[data-kind="action"][data-phase="end"]').count()).toBe(2);
    await tasksPanel(page).locator('svg[data-state="EXECUTING"]').waitFor();
    await screenshot(page, 'deploy-crashed');

    // The dead run's lease (1.5 s) must run out before a resume may take the session over.
    await new Promise((resolve) => setTimeout(resolve, 1600));
    await page.getByRole('button', { name: 'Resume interrupted run' }).click();
    await page
      .getByRole('status')
      .getByText(/Deployed checkout-api latest to staging/)
      .waitFor();
    await tasksPanel(page).locator('svg[data-state="DONE"]').waitFor();
    await stuck.getByText('SUCCESS').waitFor();
    // The killed call had done its work: recovery found it through lookup, and nothing ran twice.
    const effects = tallyEffectLog(join(server.dir, 'workspace', 'deploy-effects.jsonl'));
    expect(Object.values(effects.steps).map((s) => s.effects)).toEqual([1, 1, 1, 1, 1]);
    expect(effects.redundant_calls).toBe(0);
    await screenshot(page, 'deploy-resumed');
    await page.context().close();
  });

  it('an UNKNOWN action is resolved through the Needs attention form and the task continues', async () => {
    const user = rand('ops');
    const session = await apiCall<Session>(server, 'POST', '/v1/sessions', {
      user_id: user,
      agent: 'deploy_pipeline',
    });
    const first = await apiCall<TurnResponse>(server, 'POST', `/v1/sessions/${session.id}/turns`, {
      input: 'deploy flaky-api to staging',
    });
    expect(first.reply).toContain('on hold');
    const unknown = first.actions.find((a) => a.status === 'UNKNOWN') as Action;
    expect(unknown.tool).toBe('deploy.build');
    const built = server.lostBuilds.get(unknown.idempotency_key);
    expect(built).toBeDefined();

    const page = await openInspector(browser, server, server.key);
    await page.getByRole('link', { name: /Needs attention/ }).click();
    const row = page.locator(`tr[data-action="${unknown.id}"]`);
    await row.waitFor();
    await page
      .locator('section[aria-labelledby="blocked-title"]')
      .getByText(/blocked: deploy\.build/)
      .waitFor();
    await screenshot(page, 'needs-attention');

    // Invalid JSON: refused on the page, nothing sent.
    await row.getByLabel('Result (JSON)').fill('{ not json');
    await row.getByRole('button', { name: 'Resolve as SUCCESS' }).click();
    await row
      .getByRole('alert')
      .getByText(/not valid JSON/)
      .waitFor();
    expect((await apiCall<Action>(server, 'GET', `/v1/actions/${unknown.id}`)).status).toBe('UNKNOWN');

    await row.getByLabel('Result (JSON)').fill(JSON.stringify(built, null, 2));
    await row.getByLabel(/^Note/).fill('found the artifact on the build server');
    await row.getByRole('button', { name: 'Resolve as SUCCESS' }).click();
    await row.waitFor({ state: 'detached' });
    const resolved = await apiCall<Action>(server, 'GET', `/v1/actions/${unknown.id}`);
    expect(resolved).toMatchObject({
      status: 'SUCCESS',
      result: built,
      note: 'found the artifact on the build server',
    });

    // The task continues on the session's next turn, sent from the chat panel.
    await page.goto(`${server.url}/#/sessions/${session.id}`);
    await tasksPanel(page).locator('svg[data-state="EXECUTING"]').waitFor();
    await page.getByLabel('Message to the agent').fill('continue');
    await page.getByRole('button', { name: 'Send' }).click();
    await page
      .getByTestId('chat-log')
      .getByText(/^Deployed flaky-api latest to staging/)
      .waitFor();
    await tasksPanel(page).locator('svg[data-state="DONE"]').waitFor();
    await page
      .getByTestId('timeline')
      .locator('li[data-kind="action"][data-phase="end"]', { hasText: 'deploy.build' })
      .getByText('found the artifact on the build server')
      .waitFor();
    const [task] = (await apiCall<{ items: Task[] }>(server, 'GET', `/v1/tasks?session_id=${session.id}`))
      .items;
    expect(task?.state).toBe('DONE');
    await screenshot(page, 'unknown-resolved');
    expect((page as Page & { problems?: string[] }).problems).toEqual([]);
    await page.context().close();
  });
});
