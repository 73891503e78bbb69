export { openProbe, type Probe, type Residue } from './probe.js';
export { type TtlReport, type TtlSample, ttlMarkdown } from './report.js';
export { runTtlTest, type TtlProgress, type TtlTestOptions, writeReports } from './run.js';
