/**
 * The params the built-in agents send to their tools: the contract with the tools of `src/demo`.
 * A tool implementation uses these schemas as its `params`, so both sides agree on one definition.
 *
 * Results: every tool returns plain JSON. `lookup(key)` must return the SAME result that `execute` returned
 * for that key, so a recovered run ends exactly like an uninterrupted one.
 */
import { z } from 'zod';
import { JsonValueSchema } from '../core/model.js';

const iata = z.string().regex(/^[A-Z]{3}$/, 'must be a 3-letter IATA city code such as BJS');
const isoDate = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a date as YYYY-MM-DD');

export const CABIN_CLASSES = ['economy', 'premium_economy', 'business', 'first'] as const;

/** `airline.book`: books one seat. Result: at least `{ booking_id: string }` (more fields are kept as is). */
export const AirlineBookParams = z.object({
  origin: iata,
  destination: iata,
  date: isoDate,
  cabin_class: z.enum(CABIN_CLASSES),
  passenger_name: z.string().min(1).max(100),
});
export type AirlineBookParams = z.infer<typeof AirlineBookParams>;

export const DEPLOY_ENVIRONMENTS = ['staging', 'production'] as const;

const deployTarget = {
  service: z.string().regex(/^[a-z][a-z0-9-]{0,62}$/, 'must be a service name such as checkout-api'),
  environment: z.enum(DEPLOY_ENVIRONMENTS),
  version: z.string().min(1).max(40),
};

/** `deploy.plan` (step 1). Result: any JSON describing the plan, passed whole to the next steps. */
export const DeployPlanParams = z.object(deployTarget);
/** `deploy.write_files` (step 2): `plan` is the result of deploy.plan. */
export const DeployWriteFilesParams = z.object({ ...deployTarget, plan: JsonValueSchema });
/** `deploy.run_tests` (step 3): `files` is the result of deploy.write_files. */
export const DeployRunTestsParams = z.object({ ...deployTarget, files: JsonValueSchema });
/** `deploy.build` (step 4): `tests` is the result of deploy.run_tests. */
export const DeployBuildParams = z.object({ ...deployTarget, tests: JsonValueSchema });
/** `deploy.deploy` (step 5): `build` is the result of deploy.build. Result: at least `{ url: string }`. */
export const DeployDeployParams = z.object({ ...deployTarget, build: JsonValueSchema });

export type DeployPlanParams = z.infer<typeof DeployPlanParams>;
export type DeployWriteFilesParams = z.infer<typeof DeployWriteFilesParams>;
export type DeployRunTestsParams = z.infer<typeof DeployRunTestsParams>;
export type DeployBuildParams = z.infer<typeof DeployBuildParams>;
export type DeployDeployParams = z.infer<typeof DeployDeployParams>;

/** The five steps of deploy_pipeline, in order. */
export const DEPLOY_STEPS = [
  'deploy.plan',
  'deploy.write_files',
  'deploy.run_tests',
  'deploy.build',
  'deploy.deploy',
] as const;
