/**
 * What the durable trip examples' tests share: each runs its example in real child processes, against the
 * scripted model (a Chat Completions server on loopback) and the demo airline over HTTP.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AirlineService, startAirlineService } from '../../src/demo/index.js';
import {
  type ScriptedModelServer,
  startScriptedModel,
  TRIP_REQUEST,
} from '../../src/harness/crash/tool-loop/model.js';

const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;

/**
 * The test of a durable trip example (`main` is its script): killed with SIGKILL right after the card was
 * charged, resumed by a new process, it answers as a run never interrupted, with one booking and one charge.
 */
export function durableTripTest(title: string, main: string): void {
  const dir = mkdtempSync(join(tmpdir(), 'agentstate-trip-'));
  let model: ScriptedModelServer;
  let airline: AirlineService;
  beforeAll(async () => {
    model = await startScriptedModel();
    airline = await startAirlineService({ dataDir: join(dir, 'airline') });
  });
  afterAll(async () => {
    await airline.close();
    await model.close();
    rmSync(dir, { recursive: true, force: true });
  });

  interface Exit {
    readonly signal: NodeJS.Signals | null;
    readonly events: Record<string, unknown>[];
  }

  function example(args: string[], env: Record<string, string> = {}): Promise<Exit> {
    return new Promise((done, fail) => {
      const child = execFile(
        process.execPath,
        ['--import', tsx, main, ...args],
        {
          timeout: 60_000,
          env: {
            ...process.env,
            MODEL_BASE_URL: model.url,
            MODEL: 'scripted',
            AIRLINE_URL: airline.url,
            TRIP: TRIP_REQUEST,
            ...env,
          },
        },
        (error, stdout, stderr) => {
          const events = stdout
            .split('\n')
            .filter((l) => l !== '')
            .map((l) => JSON.parse(l) as Record<string, unknown>);
          if (error !== null && child.signalCode === null) fail(new Error(`${error.message}\n${stderr}`));
          else done({ signal: child.signalCode, events });
        },
      );
    });
  }

  const charges = (file: string) =>
    readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => l !== '');

  describe(title, () => {
    it('a run killed after its charge resumes in a new process: same answer, one booking, one charge', async () => {
      const reply = /^Booked \w{6} \(bk_\w+\) for Alice Martin; paid 142 EUR as pay_1\.$/;
      const whole = await example(['start', join(dir, 'whole.db')], {
        CHARGES_FILE: join(dir, 'whole.jsonl'),
      });
      expect(whole.events.at(-1)).toMatchObject({
        event: 'done',
        resumed: false,
        reply: expect.stringMatching(reply),
      });

      const db = join(dir, 'killed.db');
      const killedFile = join(dir, 'killed.jsonl');
      const killed = await example(['start', db], { CHARGES_FILE: killedFile, CRASH_AFTER_CHARGE: '1' });
      expect(killed.signal).toBe('SIGKILL');
      const session = String(killed.events[0]?.id);
      expect(charges(killedFile)).toHaveLength(1);
      const asked = model.requests();

      const resumed = await example(['resume', db, session], { CHARGES_FILE: killedFile });
      expect(resumed.events.at(-1)).toMatchObject({
        event: 'done',
        resumed: true,
        reply: expect.stringMatching(reply),
      });
      // the charge was found by its key, not made again; only the last answer was asked for
      expect(charges(killedFile)).toHaveLength(1);
      expect(model.requests() - asked).toBe(1);
      const bookings = readFileSync(airline.effectsPath, 'utf8')
        .split('\n')
        .filter((l) => l.includes('"effect"'));
      expect(bookings).toHaveLength(2); // one for each run
    }, 120_000);
  });
}
