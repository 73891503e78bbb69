/** The isolation load harness (SPEC 7): users at once over HTTP, leak check, cross-user probes, p99 ratio. */
export { registerLoadCommands } from './command.js';
export { type Exchange, request } from './http.js';
export { findLeaks, type Leak, leaksIn, type Marker, markersOf } from './leaks.js';
export { type PhaseResult, runPhase } from './phase.js';
export { type ProbeFailure, type ProbeResult, probeAll } from './probes.js';
export { type LoadReport, toMarkdown } from './report.js';
export { type LoadTestOptions, type LoadTestResult, runLoadTest } from './run.js';
export { type ServerChild, startServerChild } from './server-child.js';
export { latencies, percentile } from './stats.js';
export { newUser, type SimUser } from './user.js';
