/**
 * The one conformance suite every StateStore adapter runs, split by concern. Usage, in an adapter's test:
 *
 *   describeStoreConformance('sqlite', { open: (clock) => openSqliteStore(tmpFile(), { clock }), url, cleanup });
 *
 * Every test opens a fresh store on a ManualClock, acts as fresh random tenants and users, and closes the
 * store afterwards. Nothing reaches into an adapter's internals: only the StateStore interface is used.
 */
import { afterAll, describe } from 'vitest';
import { actionTests } from './actions.js';
import { checkpointHistoryTests } from './checkpoint-history.js';
import { checkpointTests } from './checkpoints.js';
import { concurrencyTests } from './concurrency.js';
import { useStore } from './context.js';
import { dataRuleTests } from './data-rules.js';
import { defaultTests } from './defaults.js';
import { expiryTests } from './expiry.js';
import type { StoreHarness } from './harness.js';
import { leaseTests } from './leases.js';
import { lifecycleTests } from './lifecycle.js';
import { memoryTests } from './memory.js';
import { messageTests } from './messages.js';
import { multiProcessTests } from './multi-process.js';
import { ownershipTests } from './ownership.js';
import { requestKeyTests } from './request-keys.js';
import { scopeTests } from './scope.js';
import { sessionTests } from './sessions.js';
import { taskTests } from './tasks.js';
import { turnTests } from './turns.js';

export type { StoreHarness } from './harness.js';

export function describeStoreConformance(name: string, harness: StoreHarness): void {
  describe(`StateStore conformance: ${name}`, () => {
    const t = useStore(harness);
    afterAll(async () => {
      await harness.cleanup?.();
    });
    sessionTests(t);
    messageTests(t);
    taskTests(t);
    actionTests(t);
    checkpointTests(t);
    checkpointHistoryTests(t);
    memoryTests(t);
    expiryTests(t);
    scopeTests(t);
    turnTests(t);
    concurrencyTests(t);
    defaultTests(t);
    dataRuleTests(t);
    ownershipTests(t);
    lifecycleTests(t);
    leaseTests(t);
    requestKeyTests(t);
    multiProcessTests(t, harness);
  });
}
