/**
 * The V8 heap an in-process store holds: heap in use after a full collection, at open and when measured.
 * The collection is V8's own `gc`, reached without `--expose-gc` on the command line.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

let collect: (() => void) | null = null;

/** Heap in use, in bytes, after a full garbage collection. */
export function heapAfterGc(): number {
  if (collect === null) {
    setFlagsFromString('--expose_gc');
    collect = runInNewContext('gc') as () => void;
  }
  collect();
  return process.memoryUsage().heapUsed;
}
