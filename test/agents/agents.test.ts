/** The built-in agents: their params contract with the demo tools, and runs over the real demo services. */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { deployPipelineTask, flightBookingTask } from '../../src/agents/index.js';
import {
  AirlineBookParams,
  DEPLOY_STEPS,
  DeployBuildParams,
  DeployDeployParams,
  DeployPlanParams,
  DeployRunTestsParams,
  DeployWriteFilesParams,
} from '../../src/agents/tool-params.js';
import type { JsonValue } from '../../src/core/json.js';
import { createDemoTools, readLedger, startAirlineService, tallyEffectLog } from '../../src/demo/index.js';
import { resumeRun, runTurn } from '../../src/runtime/turn.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { crashingStore, SimulatedCrash } from '../runtime/faults.js';
import { freshScope, runtimeOptions, tempDir } from '../runtime/setup.js';

const temp = tempDir();
afterAll(() => temp.cleanup());

describe('params contract', () => {
  it('flight_booking calls airline.book with params its schema accepts', () => {
    const slots = {
      origin: 'BJS',
      destination: 'SHA',
      date: '2026-12-09',
      cabin_class: 'business',
      passenger_name: 'Zhang San',
    };
    const call = flightBookingTask.nextCall(slots, []);
    expect(call?.tool).toBe('airline.book');
    expect(AirlineBookParams.parse(call?.params)).toEqual(slots);
    expect(flightBookingTask.nextCall(slots, [{ booking_id: 'BK1' }])).toBeNull();
  });

  it('deploy_pipeline makes five calls, each fed by the result before, with params their schemas accept', () => {
    const schemas = [
      DeployPlanParams,
      DeployWriteFilesParams,
      DeployRunTestsParams,
      DeployBuildParams,
      DeployDeployParams,
    ];
    const results: JsonValue[] = [];
    const slots = { service: 'checkout-api', environment: 'production', version: '1.4.2' };
    for (const [index, schema] of schemas.entries()) {
      const call = deployPipelineTask.nextCall(slots, results);
      expect(call?.tool).toBe(DEPLOY_STEPS[index]);
      expect(() => schema.parse(call?.params)).not.toThrow();
      if (index > 0) expect(Object.values(call?.params as object)).toContainEqual({ out: index - 1 });
      results.push({ out: index });
    }
    expect(deployPipelineTask.nextCall(slots, results)).toBeNull();
  });
});

describe('over the demo services', () => {
  it('deploy_pipeline runs the real deploy tools; a crash after the third call resumes with no duplicate', async () => {
    const store = await openSqliteStore(join(temp.dir, 'deploy.db'));
    const scope = freshScope();
    const reference = await (async () => {
      const dir = join(temp.dir, 'ws-ref');
      const session = await store.createSession(scope, { agent: 'deploy_pipeline' });
      return runTurn({
        ...runtimeOptions(store, scope, session.id, createDemoTools({ workspaceDir: dir })),
        input: 'deploy checkout-api 1.4.2 to production',
      });
    })();
    expect(reference.tasks[0]?.state).toBe('DONE');
    expect(reference.actions.map((a) => a.tool)).toEqual([...DEPLOY_STEPS]);
    expect(reference.reply).toMatch(/^Deployed checkout-api 1\.4\.2 to production: \S+ \(5 steps\)\.$/);

    const dir = join(temp.dir, 'ws-crash');
    const tools = createDemoTools({ workspaceDir: dir });
    const session = await store.createSession(scope, { agent: 'deploy_pipeline' });
    await expect(
      runTurn({
        ...runtimeOptions(crashingStore(store, 8), scope, session.id, tools),
        input: 'deploy checkout-api 1.4.2 to production',
      }),
    ).rejects.toThrow(SimulatedCrash);
    const resumed = await resumeRun(
      runtimeOptions(store, scope, session.id, createDemoTools({ workspaceDir: dir })),
    );
    expect(resumed?.tasks[0]?.state).toBe('DONE');
    expect(resumed?.reply.replace(/ws-crash/g, 'ws-ref')).toBe(reference.reply);
    const effects = tallyEffectLog(join(dir, 'deploy-effects.jsonl'));
    expect(effects.duplicate_effects).toBe(0);
    expect(effects.redundant_calls).toBe(0);
    expect(Object.values(effects.steps).map((s) => s.effects)).toEqual([1, 1, 1, 1, 1]);
    await store.close();
  });

  it('flight_booking books once through the demo airline over several English turns', async () => {
    const airline = await startAirlineService({ dataDir: join(temp.dir, 'airline') });
    try {
      const store = await openSqliteStore(join(temp.dir, 'flight.db'));
      const scope = freshScope();
      const session = await store.createSession(scope, {
        agent: 'flight_booking',
        context: { timezone: 'Europe/London' },
      });
      const tools = createDemoTools({ workspaceDir: join(temp.dir, 'ws-flight'), airlineUrl: airline.url });
      const turn = (input: string) => runTurn({ ...runtimeOptions(store, scope, session.id, tools), input });
      expect((await turn('I need a flight to Shenzhen')).reply).toBe('Where are you flying from?');
      expect((await turn('from Chengdu, on Dec 20')).reply).toBe(
        'Which cabin class: economy, business or first?',
      );
      expect((await turn('economy')).reply).toBe("What is the passenger's full name?");
      const confirm = await turn('Ada Lovelace');
      expect(confirm.reply).toBe(
        'Please confirm: economy class from CTU to SZX on 2026-12-20 for Ada Lovelace. Shall I book it? (yes/no)',
      );
      const booked = await turn('yes please');
      expect(booked.tasks[0]?.state).toBe('DONE');
      expect(booked.reply).toMatch(
        /^Booked: CTU to SZX on 2026-12-20 for Ada Lovelace\. Booking reference \S+\.$/,
      );
      expect(readLedger(airline.ledgerPath)).toHaveLength(1);
      await store.close();
    } finally {
      await airline.close();
    }
  });
});
