/** The server's configuration lives in src/server/config.ts (shared with the command line); re-exported here. */
export * from '../server/config.js';
