/**
 * The gauges set after every sweep from the store's own counts (an indexed count or maintained counters,
 * never a scan): active sessions by status, and the actions in status UNKNOWN waiting for a person.
 */
import type { AgentStateMetrics } from '../observability/metrics.js';
import type { StateStore } from '../store/types.js';

/**
 * Sets `agentstate_sessions_active{status}` from sessionStats(), then `agentstate_actions_unknown` from
 * actionStats(); a failure of the second leaves the first set.
 */
export async function refreshSessionGauge(store: StateStore, metrics: AgentStateMetrics): Promise<void> {
  const stats = await store.sessionStats();
  for (const [status, count] of Object.entries(stats)) {
    if (status !== 'expired') metrics.sessionsActive.set({ status }, count);
  }
  const actions = await store.actionStats();
  metrics.actionsUnknown.set(actions.unknown);
}
