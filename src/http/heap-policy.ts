/** A server process's V8 heap policy lives in src/server/heap-policy.ts; re-exported here. */
export * from '../server/heap-policy.js';
