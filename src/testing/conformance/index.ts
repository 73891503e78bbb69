/**
 * The one conformance suite every StateStore adapter runs, split by concern. Usage, in an adapter's test:
 *
 *   describeStoreConformance('sqlite', { open: (clock) => openSqliteStore(tmpFile(), { clock }), url, cleanup });
 *
 * Every test opens a fresh store on a ManualClock, acts as fresh random tenants and users, and closes the
 * store afterwards. Nothing reaches into an adapter's internals: only the StateStore interface is used.
 *
 * The rules the suite holds every adapter to, where the contract in src/store/types.ts leaves a choice
 * (each concern file's header states its own in detail):
 * - Missing, out-of-scope and expired records are one and the same: reads give null / [] / false, writes
 *   that need the record (update, append, complete, begin an action on a task) fail with `not_found`.
 * - Bad input, including an id of the wrong shape or kind anywhere, is `invalid_request`; a stale version is
 *   `version_conflict` with details {expected_version, current_version}; a caller-chosen id that exists is
 *   `conflict`; after close() everything is `closed`. Every message starts with `[<adapter>]`.
 * - Newest first means reverse order of creation (also within one millisecond); memory items are in binary
 *   key order. Cursors are opaque and open only for the list and caller they were handed to; a garbage
 *   cursor is `invalid_request`.
 * - sweepExpired is global (not scoped): a harness whose stores share a database with suites running at
 *   the same time should give this suite its own database, schema or key prefix.
 */
import { afterAll, describe } from 'vitest';
import { actionStatsTests } from './action-stats.js';
import { actionTests } from './actions.js';
import { branchTests } from './branches.js';
import { checkpointHistoryTests } from './checkpoint-history.js';
import { checkpointTests } from './checkpoints.js';
import { concurrencyTests } from './concurrency.js';
import { useStore } from './context.js';
import { cursorTests } from './cursors.js';
import { dataRuleTests } from './data-rules.js';
import { defaultTests } from './defaults.js';
import { expiryTests } from './expiry.js';
import type { StoreHarness } from './harness.js';
import { leaseTests } from './leases.js';
import { lifecycleTests } from './lifecycle.js';
import { lifecycleStatsTests } from './lifecycle-stats.js';
import { memoryTests } from './memory.js';
import { messageTests } from './messages.js';
import { multiProcessTests } from './multi-process.js';
import { ownershipTests } from './ownership.js';
import { requestKeyTests } from './request-keys.js';
import { retentionTests } from './retention.js';
import { runEventTests } from './run-events.js';
import { scopeTests } from './scope.js';
import { sessionTests } from './sessions.js';
import { taskTests } from './tasks.js';
import { turnTests } from './turns.js';
import { unknownFieldTests } from './unknown-fields.js';

export type { StoreHarness } from './harness.js';

export function describeStoreConformance(name: string, harness: StoreHarness): void {
  describe(`StateStore conformance: ${name}`, () => {
    const t = useStore(harness);
    afterAll(async () => {
      await harness.cleanup?.();
    });
    sessionTests(t);
    messageTests(t);
    branchTests(t);
    taskTests(t);
    actionTests(t);
    checkpointTests(t);
    checkpointHistoryTests(t);
    memoryTests(t);
    expiryTests(t);
    scopeTests(t);
    turnTests(t);
    runEventTests(t);
    concurrencyTests(t);
    defaultTests(t);
    dataRuleTests(t);
    ownershipTests(t);
    lifecycleTests(t);
    lifecycleStatsTests(t);
    actionStatsTests(t);
    retentionTests(t);
    leaseTests(t);
    cursorTests(t, harness);
    unknownFieldTests(t);
    requestKeyTests(t);
    multiProcessTests(t, harness);
  });
}
