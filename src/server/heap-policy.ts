/**
 * The V8 heap policy of a server process. V8's memory reducer gives memory back when an isolate looks idle
 * by running full collections (with compaction) one after the other; a server at a few turns a second looks
 * idle to it, and each of those collections (5-30 ms on a 2-core machine) stops every turn in flight on its
 * thread, and shrinks the heap so that the next burst collects more often. A server runs without it: its
 * heap stays at its high-water size (tens of MB) instead of shrinking after a burst.
 *
 * The main thread's heap reads the flag when the process starts (`npm start` and the load harness's server
 * pass `SERVER_NODE_FLAGS`; `node --no-memory-reducer dist/src/cli/main.js serve` does it by hand); the turn
 * threads' heaps read it when each thread is created, so `serve` sets it before it starts them whatever the
 * process was started with.
 */
import { setFlagsFromString } from 'node:v8';

/** Node flags for a process that serves the API. */
export const SERVER_NODE_FLAGS: readonly string[] = ['--no-memory-reducer'];

/** Applies the policy to every thread (worker) created from now on in this process. */
export function applyServerHeapPolicyToNewThreads(): void {
  for (const flag of SERVER_NODE_FLAGS) setFlagsFromString(flag);
}
