/** The runtime behind the turn routes lives in src/server/runtime-runner.ts; re-exported here. */
export * from '../server/runtime-runner.js';
