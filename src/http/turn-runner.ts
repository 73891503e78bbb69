/** What the routes need from the agent runtime lives in src/server/turn-runner.ts; re-exported here. */
export * from '../server/turn-runner.js';
