#!/usr/bin/env node
/** The `agentstate` executable: runs the command and turns any error into one sentence and exit code 1. */
import cluster from 'node:cluster';
import { describeError } from './context.js';
import { exitQuietlyOnClosedPipe } from './format.js';
import { buildProgram } from './program.js';

exitQuietlyOnClosedPipe();

try {
  await buildProgram().parseAsync(process.argv);
} catch (error) {
  process.stderr.write(`agentstate: ${describeError(error)}\n`);
  process.exitCode = 1;
  // A worker of `serve --workers` would stay alive on its IPC channel: leave, so the primary sees it fail.
  if (cluster.isWorker) process.exit(1);
}
