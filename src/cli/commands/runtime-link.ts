/** Connects `serve` and `chat` to the agent runtime, once it exists. */
import type { TurnRunner } from '../../http/turn-runner.js';
import type { StateStore } from '../../store/types.js';
import { CliError } from '../context.js';

export async function loadTurnRunner(
  _store: StateStore,
  agentsModule: string | undefined,
): Promise<TurnRunner | null> {
  if (agentsModule !== undefined)
    throw new CliError('--agents needs the agent runtime, which is not built yet');
  return null;
}
