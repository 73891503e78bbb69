/** The crash harness (SPEC 7): SIGKILL a `deploy_pipeline` child at every step boundary and inside tool calls. */
export { planKills, plannedKills } from './plan.js';
export { type ChildEvent, CRASH_ENV, CrashPoints, HOLD_ENV, HOLD_MS_ENV, isStepBoundary } from './points.js';
export { type CrashReport, normalizeOutput, type ScenarioResult, toMarkdown } from './report.js';
export { type CrashTestOptions, type CrashTestResult, runCrashTest } from './run.js';
export { type ChildArgs, type ChildRun, childCommand, runChild } from './spawn-child.js';
