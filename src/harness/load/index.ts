/** The isolation load harness (SPEC 7): users at once over HTTP, leak check, cross-user probes, p99 ratio. */
export { registerLoadCommands } from './command.js';
export { type Exchange, request } from './http.js';
export {
  findLeaks,
  type Leak,
  type LeakScan,
  leaksByKind,
  leaksIn,
  type Marker,
  type MarkerKind,
  markersOf,
  ownedMarkers,
  scanLeaks,
} from './leaks.js';
export { type PhaseResult, runPhase } from './phase.js';
export { type Probe, type ProbeExpect, type ProbePlanInput, planProbes, routesOf } from './probe-plan.js';
export { type ProbeFailure, type ProbeResult, type ProbeTally, probeAll } from './probes.js';
export { type ReadBack, readBackAll } from './readback.js';
export { type LoadReport, toMarkdown } from './report.js';
export { measureRoundTrips, parseRoundTrips, type RoundTrips, type TurnRoundTrips } from './round-trips.js';
export { type LoadTestOptions, type LoadTestResult, runLoadTest } from './run.js';
export { type ServerChild, startServerChild } from './server-child.js';
export { latencies, percentile } from './stats.js';
export { newUser, type SimUser, textMarker, withMarker } from './user.js';
export { ValueIndex } from './value-index.js';
