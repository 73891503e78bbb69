/**
 * A model call in a span of the OpenTelemetry GenAI conventions (`chat <model>`): the system, the model,
 * which of the runtime's calls it is; the OpenAI adapter adds the token usage and finish reason it was
 * answered with. No message content is put on a span.
 */
import type { Model } from '../models/types.js';
import { inSpan, modelCallAttributes, SpanKind } from '../observability/tracing.js';

/** `gen_ai.system` of a model: the offline rules model is agentstate's own, the rest speak OpenAI's API. */
export function modelSystem(model: Model): string {
  return model.name === 'rules' ? 'agentstate.rules' : 'openai';
}

export function modelCall<T>(model: Model, call: string, run: () => Promise<T>): Promise<T> {
  const attributes = modelCallAttributes(modelSystem(model), model.name, call);
  return inSpan(`chat ${model.name}`, attributes, run, { kind: SpanKind.CLIENT });
}
