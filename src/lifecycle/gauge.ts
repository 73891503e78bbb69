/** The active-sessions gauge, set from the store's own counts (an indexed count, never a scan). */
import type { AgentStateMetrics } from '../observability/metrics.js';
import type { StateStore } from '../store/types.js';

export async function refreshSessionGauge(store: StateStore, metrics: AgentStateMetrics): Promise<void> {
  const stats = await store.sessionStats();
  for (const [status, count] of Object.entries(stats)) {
    if (status !== 'expired') metrics.sessionsActive.set({ status }, count);
  }
}
