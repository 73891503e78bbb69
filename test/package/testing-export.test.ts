/**
 * `agentstate/testing` as a user imports it: the built package, by its name, resolved through the `exports`
 * of package.json (a package may import itself by its own name), and its conformance suite run here against
 * a store this file defines. That store is what another team could write: it keeps nothing itself and hands
 * every call to the memory store of the built `agentstate`.
 *
 * The two names are imported from variables: type checking runs before the build, so the types come from the
 * source, while the tests run the built files. The suite's `describe` and `it` must register in this file's
 * run; a hook of this file counts the tests they add.
 */
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import type * as Library from '../../src/index.js';
import type { StateStore } from '../../src/index.js';
import type * as Testing from '../../src/testing/index.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const BUILT = {
  agentstate: join(ROOT, 'dist/src/index.js'),
  'agentstate/testing': join(ROOT, 'dist/src/testing/index.js'),
};
for (const file of Object.values(BUILT))
  if (!existsSync(file)) throw new Error(`${file} is missing: run npm run build (npm test does)`);

const LIBRARY: string = 'agentstate';
const TESTING: string = 'agentstate/testing';
const { createMemoryStore } = (await import(LIBRARY)) as typeof Library;
const { describeStoreConformance } = (await import(TESTING)) as typeof Testing;

/** A StateStore written outside the package: every method forwards to another store. */
class ForwardingStore implements StateStore {
  constructor(private readonly inner: StateStore) {}

  get adapter(): string {
    return this.inner.adapter;
  }
  get capabilities(): StateStore['capabilities'] {
    return this.inner.capabilities;
  }

  readonly createSession: StateStore['createSession'] = (...a) => this.inner.createSession(...a);
  readonly getSession: StateStore['getSession'] = (...a) => this.inner.getSession(...a);
  readonly getSessionHead: StateStore['getSessionHead'] = (...a) => this.inner.getSessionHead(...a);
  readonly listSessions: StateStore['listSessions'] = (...a) => this.inner.listSessions(...a);
  readonly updateSession: StateStore['updateSession'] = (...a) => this.inner.updateSession(...a);
  readonly touchSession: StateStore['touchSession'] = (...a) => this.inner.touchSession(...a);
  readonly endSession: StateStore['endSession'] = (...a) => this.inner.endSession(...a);
  readonly deleteSession: StateStore['deleteSession'] = (...a) => this.inner.deleteSession(...a);

  readonly appendMessages: StateStore['appendMessages'] = (...a) => this.inner.appendMessages(...a);
  readonly listMessages: StateStore['listMessages'] = (...a) => this.inner.listMessages(...a);
  readonly lastMessages: StateStore['lastMessages'] = (...a) => this.inner.lastMessages(...a);

  readonly createTask: StateStore['createTask'] = (...a) => this.inner.createTask(...a);
  readonly getTask: StateStore['getTask'] = (...a) => this.inner.getTask(...a);
  readonly listTasks: StateStore['listTasks'] = (...a) => this.inner.listTasks(...a);
  readonly updateTask: StateStore['updateTask'] = (...a) => this.inner.updateTask(...a);
  readonly listTaskEvents: StateStore['listTaskEvents'] = (...a) => this.inner.listTaskEvents(...a);

  readonly beginAction: StateStore['beginAction'] = (...a) => this.inner.beginAction(...a);
  readonly getAction: StateStore['getAction'] = (...a) => this.inner.getAction(...a);
  readonly getActionByKey: StateStore['getActionByKey'] = (...a) => this.inner.getActionByKey(...a);
  readonly completeAction: StateStore['completeAction'] = (...a) => this.inner.completeAction(...a);
  readonly markActionUnknown: StateStore['markActionUnknown'] = (...a) => this.inner.markActionUnknown(...a);
  readonly resolveAction: StateStore['resolveAction'] = (...a) => this.inner.resolveAction(...a);
  readonly recordAttempt: StateStore['recordAttempt'] = (...a) => this.inner.recordAttempt(...a);
  readonly listActions: StateStore['listActions'] = (...a) => this.inner.listActions(...a);

  readonly putCheckpoint: StateStore['putCheckpoint'] = (...a) => this.inner.putCheckpoint(...a);
  readonly getCheckpoint: StateStore['getCheckpoint'] = (...a) => this.inner.getCheckpoint(...a);
  readonly latestCheckpoint: StateStore['latestCheckpoint'] = (...a) => this.inner.latestCheckpoint(...a);
  readonly listCheckpoints: StateStore['listCheckpoints'] = (...a) => this.inner.listCheckpoints(...a);
  readonly pruneCheckpoints: StateStore['pruneCheckpoints'] = (...a) => this.inner.pruneCheckpoints(...a);

  readonly putMemory: StateStore['putMemory'] = (...a) => this.inner.putMemory(...a);
  readonly getMemory: StateStore['getMemory'] = (...a) => this.inner.getMemory(...a);
  readonly deleteMemory: StateStore['deleteMemory'] = (...a) => this.inner.deleteMemory(...a);
  readonly listMemory: StateStore['listMemory'] = (...a) => this.inner.listMemory(...a);

  readonly commitTurn: StateStore['commitTurn'] = (...a) => this.inner.commitTurn(...a);

  readonly acquireLease: StateStore['acquireLease'] = (...a) => this.inner.acquireLease(...a);
  readonly releaseLease: StateStore['releaseLease'] = (...a) => this.inner.releaseLease(...a);
  readonly claimRequestKey: StateStore['claimRequestKey'] = (...a) => this.inner.claimRequestKey(...a);
  readonly completeRequestKey: StateStore['completeRequestKey'] = (...a) =>
    this.inner.completeRequestKey(...a);
  readonly releaseRequestKey: StateStore['releaseRequestKey'] = (...a) => this.inner.releaseRequestKey(...a);

  readonly sweepExpired: StateStore['sweepExpired'] = (...a) => this.inner.sweepExpired(...a);
  readonly sessionStats: StateStore['sessionStats'] = () => this.inner.sessionStats();
  readonly actionStats: StateStore['actionStats'] = () => this.inner.actionStats();
  readonly sweepRetention: StateStore['sweepRetention'] = (...a) => this.inner.sweepRetention(...a);

  readonly ping: StateStore['ping'] = () => this.inner.ping();
  readonly close: StateStore['close'] = () => this.inner.close();
}

let opened = 0;
let ran = 0;
beforeEach(() => {
  ran++;
});
afterAll(() => {
  // Well over a hundred tests of the suite ran in this file, each on a store it opened through the harness.
  expect(ran).toBeGreaterThan(100);
  expect(opened).toBeGreaterThanOrEqual(ran - 1);
});

describe('agentstate/testing, built', () => {
  it('resolves both names to the built files through the package exports', () => {
    for (const [name, file] of Object.entries(BUILT))
      expect(import.meta.resolve(name)).toBe(pathToFileURL(file).href);
  });
});

describeStoreConformance('a store defined outside the package', {
  open: async (clock) => {
    opened++;
    return new ForwardingStore(createMemoryStore({ clock }));
  },
});
