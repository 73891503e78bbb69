/**
 * OpenTelemetry traces, through `@opentelemetry/api` only: the library never loads an SDK. An application
 * (or `agentstate serve`, see tracing-setup.ts) that registers a tracer provider gets agentstate's spans;
 * without one, every helper here runs its work directly, creating nothing.
 *
 * Span names: `agentstate.turn` and `agentstate.run` (a run of the slot-filling runtime), `agentstate.durable_run`,
 * `chat <model>` (a model call, GenAI conventions, never message content), `agentstate.action <tool>`,
 * `agentstate.checkpoint`, `<operation> <store>` (store calls, db.* conventions: operation names, no values),
 * `agentstate.sweep`. A run resumed after a crash links to the interrupted attempt's span (the traceparent kept
 * in its checkpoints' metadata); an action recovered after a crash links to the attempt that began it (the
 * traceparent kept in the journal's commit marker).
 */
import {
  type Attributes,
  context,
  type Link,
  ProxyTracerProvider,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';

export const TRACER_NAME = 'agentstate';

const tracer = trace.getTracer(TRACER_NAME);
const NOOP_PROVIDER = new ProxyTracerProvider().getDelegate();
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** True when a tracer provider is registered (an SDK is set up): only then are spans made. */
export function tracingActive(): boolean {
  const provider = trace.getTracerProvider();
  return !(provider instanceof ProxyTracerProvider) || provider.getDelegate() !== NOOP_PROVIDER;
}

export interface SpanOptions {
  readonly links?: Link[];
  readonly kind?: SpanKind;
}

/** A span that records nothing: what `inSpan` hands its work when no provider is registered. */
const NO_SPAN: Span = trace.wrapSpanContext({
  traceId: '0'.repeat(32),
  spanId: '0'.repeat(16),
  traceFlags: 0,
});

/**
 * Runs `work` inside a new span (the active one while it runs), ended when the work settles; an error is
 * recorded on it and thrown again. Without a registered provider, `work` runs as it is.
 */
export function inSpan<T>(
  name: string,
  attributes: Attributes,
  work: (span: Span) => Promise<T>,
  options: SpanOptions = {},
): Promise<T> {
  if (!tracingActive()) return work(NO_SPAN);
  const settings = { attributes, kind: options.kind ?? SpanKind.INTERNAL, links: options.links ?? [] };
  return tracer.startActiveSpan(name, settings, async (span) => {
    try {
      return await work(span);
    } catch (error) {
      failed(span, error);
      throw error;
    } finally {
      span.end();
    }
  });
}

/** Marks `span` as failed by `error` (its code when it is an AgentStateError, never a stored value). */
export function failed(span: Span, error: unknown): void {
  const code = (error as { code?: unknown } | null)?.code;
  span.setStatus({
    code: SpanStatusCode.ERROR,
    message: error instanceof Error ? error.message : String(error),
  });
  span.setAttribute(
    'error.type',
    typeof code === 'string' ? code : error instanceof Error ? error.name : 'error',
  );
}

/** Adds `attributes` to the active span, when it records. */
export function annotate(attributes: Attributes): void {
  const span = trace.getActiveSpan();
  if (span?.isRecording() === true) span.setAttributes(attributes);
}

/** The W3C traceparent of `span` (default: the active span), or null when there is no sampled-in span. */
export function traceparentOf(span: Span | undefined = trace.getActiveSpan()): string | null {
  const ctx = span?.spanContext();
  if (ctx === undefined || !trace.isSpanContextValid(ctx) || !span?.isRecording()) return null;
  return `00-${ctx.traceId}-${ctx.spanId}-${(ctx.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}

/** A link to the span a stored traceparent names (none when the value is not a traceparent). */
export function linksTo(traceparent: unknown, why: string): Link[] {
  if (typeof traceparent !== 'string') return [];
  const match = TRACEPARENT.exec(traceparent);
  if (match === null) return [];
  const spanContext = {
    traceId: match[1]!,
    spanId: match[2]!,
    traceFlags: Number.parseInt(match[3]!, 16),
    isRemote: true,
  };
  if (!trace.isSpanContextValid(spanContext)) return [];
  return [{ context: spanContext, attributes: { 'agentstate.link': why } }];
}

/** `headers` with the active trace context added (`traceparent`, `tracestate`), for an outgoing request. */
export function withTraceHeaders(headers: Record<string, string>): Record<string, string> {
  if (!tracingActive()) return headers;
  const carrier: Record<string, string> = { ...headers };
  propagation.inject(context.active(), carrier);
  return carrier;
}

/** Runs `work` with the context a carried traceparent names as its parent (another thread's span). */
export function underTraceparent<T>(traceparent: string | undefined, work: () => T): T {
  if (traceparent === undefined || !tracingActive()) return work();
  return context.with(propagation.extract(ROOT_CONTEXT, { traceparent }), work);
}

/** The active span's ids, for a log line (null outside a span). */
export function activeTraceIds(): { trace_id: string; span_id: string } | null {
  const span = trace.getActiveSpan();
  if (span === undefined) return null;
  const ctx = span.spanContext();
  return trace.isSpanContextValid(ctx) ? { trace_id: ctx.traceId, span_id: ctx.spanId } : null;
}

const NO_EXEMPLAR: Readonly<Record<string, string>> = Object.freeze({});

/**
 * The exemplar labels of a measurement made now: `{ trace_id }` of the active span when it records (an SDK
 * is set up and the trace is sampled in), else none, at the cost of one context lookup.
 */
export function traceExemplar(): Readonly<Record<string, string>> {
  const span = trace.getActiveSpan();
  if (span === undefined || !span.isRecording()) return NO_EXEMPLAR;
  const ctx = span.spanContext();
  return trace.isSpanContextValid(ctx) ? { trace_id: ctx.traceId } : NO_EXEMPLAR;
}

/** The GenAI attributes of a model call (https://opentelemetry.io/docs/specs/semconv/gen-ai/). */
export function modelCallAttributes(system: string, model: string, call: string): Attributes {
  return {
    'gen_ai.operation.name': 'chat',
    'gen_ai.system': system,
    'gen_ai.provider.name': system,
    'gen_ai.request.model': model,
    'agentstate.model.call': call,
  };
}

/** What a chat completion answered, on the active span: model, token usage, finish reason (no content). */
export function recordModelResponse(answer: {
  readonly request_model?: string;
  readonly model?: unknown;
  readonly usage?: { readonly prompt_tokens?: unknown; readonly completion_tokens?: unknown } | null;
  readonly finish_reason?: unknown;
}): void {
  const span = trace.getActiveSpan();
  if (span === undefined || !span.isRecording()) return;
  if (answer.request_model !== undefined) span.setAttribute('gen_ai.request.model', answer.request_model);
  if (typeof answer.model === 'string') span.setAttribute('gen_ai.response.model', answer.model);
  const usage = answer.usage;
  if (typeof usage?.prompt_tokens === 'number')
    span.setAttribute('gen_ai.usage.input_tokens', usage.prompt_tokens);
  if (typeof usage?.completion_tokens === 'number')
    span.setAttribute('gen_ai.usage.output_tokens', usage.completion_tokens);
  if (typeof answer.finish_reason === 'string')
    span.setAttribute('gen_ai.response.finish_reasons', [answer.finish_reason]);
}

export type { Attributes, Link, Span };
export { SpanKind };
