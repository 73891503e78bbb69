/**
 * The crash harness (SPEC 7): SIGKILL an agent's child process at every step boundary and inside tool
 * calls, resume, compare. The agent is a subject: `deploy_pipeline` by default, or the model-driven
 * tool-loop agent (`toolLoopSubject`, tool-loop/).
 */
export { planKills, plannedKills } from './plan.js';
export { type ChildEvent, CRASH_ENV, CrashPoints, HOLD_ENV, HOLD_MS_ENV, isStepBoundary } from './points.js';
export { type CrashReport, normalizeOutput, type ScenarioResult, toMarkdown } from './report.js';
export {
  type ChainChild,
  type CrashSubject,
  type CrashTestOptions,
  type CrashTestResult,
  deploySubject,
  runCrashTest,
} from './run.js';
export { type ChildArgs, type ChildRun, childCommand, runChild } from './spawn-child.js';
