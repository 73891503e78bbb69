/**
 * The thread index: one memory item per run (thread and namespace) in `<namespace>.threads`, written on a
 * run's first checkpoint, so `list` without a thread and `deleteThread` find every run of the scope.
 */
import type { Scope, StateStore } from '../../store/types.js';
import { type RunRef, runKey, threadPrefix } from './keys.js';

export class ThreadIndex {
  /** Runs this process has indexed already: their next checkpoints skip the write. */
  private readonly known = new Set<string>();

  constructor(
    private readonly store: StateStore,
    private readonly scope: Scope,
    private readonly namespace: string,
  ) {}

  async add(run: RunRef): Promise<void> {
    const key = runKey(run);
    if (this.known.has(key)) return;
    await this.store.putMemory(this.scope, {
      namespace: this.namespace,
      key,
      value: { thread_id: run.thread_id, checkpoint_ns: run.checkpoint_ns },
    });
    this.known.add(key);
  }

  all(): Promise<RunRef[]> {
    return this.read('');
  }

  /** Every indexed run of the thread, and its root run in any case. */
  async ofThread(thread_id: string): Promise<RunRef[]> {
    const runs = await this.read(threadPrefix(thread_id));
    if (!runs.some((run) => run.checkpoint_ns === '')) runs.unshift({ thread_id, checkpoint_ns: '' });
    return runs;
  }

  /** The prefix of every pending-writes key of a thread (writes keys start with the run key). */
  writesPrefixOf(thread_id: string): string {
    return threadPrefix(thread_id);
  }

  async remove(runs: readonly RunRef[]): Promise<void> {
    for (const run of runs) {
      const key = runKey(run);
      this.known.delete(key);
      await this.store.deleteMemory(this.scope, this.namespace, key);
    }
  }

  private async read(prefix: string): Promise<RunRef[]> {
    const runs: RunRef[] = [];
    let cursor: string | null = null;
    do {
      const page = await this.store.listMemory(this.scope, this.namespace, { prefix, limit: 500, cursor });
      for (const item of page.items) {
        const value = item.value;
        if (typeof value !== 'object' || value === null || Array.isArray(value)) continue;
        if (typeof value.thread_id !== 'string' || typeof value.checkpoint_ns !== 'string') continue;
        runs.push({ thread_id: value.thread_id, checkpoint_ns: value.checkpoint_ns });
      }
      cursor = page.next_cursor;
    } while (cursor !== null);
    return runs;
  }
}
