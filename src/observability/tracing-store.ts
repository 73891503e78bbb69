/**
 * Spans of store calls: each public call of a core store (`createSession`, `commitTurn`, ...) as a CLIENT span
 * named `<operation> <store>`, with the db.* attributes of the OpenTelemetry database conventions: the
 * system and the operation's name, never a value, an id or a statement's parameters.
 *
 * The store frame (store-base.ts) installs them when a tracer provider is registered as the store is made;
 * a store made without one has none and pays nothing.
 */
import type { Attributes } from '@opentelemetry/api';
import { inSpan, SpanKind, tracingActive } from './tracing.js';

/** The frame's own helpers (and the lifecycle), which are no store operations of their own. */
const NOT_OPERATIONS = new Set([
  'constructor',
  'write',
  'read',
  'scoped',
  'failure',
  'cursorKey',
  'lease',
  'requestKey',
  'maintain',
  'itemKey',
  'close',
]);

const SYSTEMS: Readonly<Record<string, string>> = {
  postgres: 'postgresql',
  sqlite: 'sqlite',
  redis: 'redis',
  memory: 'agentstate.memory',
};

/** The store's db.system.name, from its driver's name. */
export function dbSystemOf(adapter: string): string {
  return SYSTEMS[adapter] ?? adapter;
}

type Call = (...args: unknown[]) => unknown;

/**
 * Wraps, on `store` itself, each method its prototypes define (down to and including `last`) in a span.
 * Does nothing when no tracer provider is registered.
 */
export function traceStoreCalls(store: object, last: object, adapter: string): void {
  if (!tracingActive()) return;
  const system = dbSystemOf(adapter);
  const seen = new Set<string>();
  for (
    let proto = Object.getPrototypeOf(store) as object | null;
    proto !== null;
    proto = Object.getPrototypeOf(proto)
  ) {
    for (const name of Object.getOwnPropertyNames(proto)) {
      if (seen.has(name) || NOT_OPERATIONS.has(name)) continue;
      seen.add(name);
      const descriptor = Object.getOwnPropertyDescriptor(proto, name);
      if (descriptor === undefined || typeof descriptor.value !== 'function') continue;
      const original = descriptor.value as Call;
      const attributes: Attributes = {
        'db.system.name': system,
        'db.system': system,
        'db.operation.name': name,
        'agentstate.store': adapter,
      };
      const spanName = `${name} ${adapter}`;
      Object.defineProperty(store, name, {
        configurable: true,
        writable: true,
        enumerable: false,
        value: function traced(this: unknown, ...args: unknown[]): unknown {
          return inSpan(spanName, attributes, async () => original.apply(this, args), {
            kind: SpanKind.CLIENT,
          });
        },
      });
    }
    if (proto === last) break;
  }
}
