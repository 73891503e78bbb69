import type { Clock } from '../../core/clock.js';
import type { StateStore } from '../../store/types.js';

/**
 * How the conformance suite reaches one adapter.
 *
 * - `open(clock)` returns a new, open store whose notion of time is `clock` (a ManualClock in the suite).
 *   The suite closes every store it opens. Stores of one harness may share one backing database: every test
 *   uses fresh random tenant and user ids, so tests never see each other's records.
 * - `url`, for a store several OS processes can share (`capabilities.multiProcess`), is what a child
 *   process passes to `openStore(url)` to reach the same data. The multi-process tests skip without it.
 * - `cleanup()` runs once after the whole suite (remove temp files, drop schemas, ...).
 */
export interface StoreHarness {
  open(clock: Clock): Promise<StateStore>;
  url?: string;
  cleanup?(): Promise<void>;
}
