/** Reading LangGraph's `configurable` and the saver's options, with clear errors for what is missing. */
import type { RunnableConfig } from '@langchain/core/runnables';
import { invalidRequest } from '../../core/errors.js';
import type { Scope } from '../../store/types.js';
import type { RunRef } from './keys.js';

export function checkScope(options: { readonly tenant_id?: unknown; readonly user_id?: unknown }): Scope {
  if (typeof options !== 'object' || options === null)
    throw invalidRequest('[langgraph] options are required');
  const { tenant_id, user_id } = options;
  if (typeof tenant_id !== 'string' || tenant_id === '') {
    throw invalidRequest('[langgraph] tenant_id must be a non-empty string');
  }
  if (typeof user_id !== 'string' || user_id === '') {
    throw invalidRequest('[langgraph] user_id must be a non-empty string');
  }
  return { tenant_id, user_id };
}

function threadOf(value: unknown): string | null {
  if (typeof value === 'string' && value !== '') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return null;
}

/** The run a config names; null (or an error when `required`) without a thread_id. */
export function runOf(config: RunnableConfig, required: boolean): RunRef | null {
  const conf = config?.configurable;
  if (conf === undefined || conf === null) {
    if (required) throw invalidRequest('[langgraph] config.configurable is required');
    return null;
  }
  const thread_id = threadOf(conf.thread_id);
  if (thread_id === null) {
    if (required) {
      throw invalidRequest(
        '[langgraph] config.configurable.thread_id is required: pass { configurable: { thread_id } } to the graph',
      );
    }
    return null;
  }
  const ns = conf.checkpoint_ns ?? '';
  if (typeof ns !== 'string')
    throw invalidRequest('[langgraph] config.configurable.checkpoint_ns must be a string');
  return { thread_id, checkpoint_ns: ns };
}

/** The checkpoint a putWrites call writes against. */
export function writeTarget(config: RunnableConfig): { run: RunRef; checkpoint_id: string } {
  const run = runOf(config, true) as RunRef;
  const id = config.configurable?.checkpoint_id;
  if (typeof id !== 'string' || id === '') {
    throw invalidRequest('[langgraph] config.configurable.checkpoint_id is required to store writes');
  }
  return { run, checkpoint_id: id };
}

/** LangGraph steps start at -1 (the input checkpoint); the store's start at 0. */
export function stepOf(metadata: unknown): number {
  const step = (metadata as { step?: unknown } | undefined)?.step;
  return typeof step === 'number' && Number.isSafeInteger(step) ? Math.max(0, step + 1) : 0;
}
