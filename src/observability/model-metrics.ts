/**
 * `agentstate_model_call_duration_seconds`: every call of a model (extract, route, reply, chat) timed, by model
 * name, call and outcome (`ok` or the AgentStateError code, `error` for anything else).
 */
import { AgentStateError } from '../core/errors.js';
import type { Model } from '../models/types.js';
import type { AgentStateMetrics } from './metrics.js';

/** The same model, with each call timed into `metrics`. */
export function meteredModel(model: Model, metrics: AgentStateMetrics): Model {
  const timed =
    <A, R>(call: string, run: (request: A) => Promise<R>) =>
    async (request: A): Promise<R> => {
      const started = performance.now();
      let outcome = 'ok';
      try {
        return await run(request);
      } catch (error) {
        outcome = error instanceof AgentStateError ? error.code : 'error';
        throw error;
      } finally {
        metrics.modelCallDuration.observe(
          { model: model.name, call, outcome },
          (performance.now() - started) / 1000,
        );
      }
    };
  return {
    name: model.name,
    ...(model.usesContext === undefined ? {} : { usesContext: model.usesContext }),
    extract: timed('extract', (request) => model.extract(request)),
    route: timed('route', (request) => model.route(request)),
    reply: timed('reply', (request) => model.reply(request)),
    ...(model.chat === undefined ? {} : { chat: timed('chat', model.chat.bind(model)) }),
  };
}
