/** `deploy.plan`: decides what will be built and writes it to `apps/<app>/plan.json`. */
import { join } from 'node:path';
import { z } from 'zod';
import type { Tool } from '../../runtime/tool.js';
import { keyedStep } from './keyed.js';
import { TEMPLATE_FILES } from './template.js';
import {
  AppNameSchema,
  appPaths,
  type DeployWorkspace,
  type Plan,
  sha256,
  writeFileAtomic,
} from './workspace.js';

export const DEPLOY_STEPS = [
  'deploy.plan',
  'deploy.write_files',
  'deploy.run_tests',
  'deploy.build',
  'deploy.deploy',
];

export const PlanParamsSchema = z.strictObject({
  app: AppNameSchema,
  version: z.string().regex(/^\d+\.\d+\.\d+$/, 'must be a version like 1.2.3'),
  greeting: z.string().min(1).max(80).optional(),
});
export type PlanParams = z.infer<typeof PlanParamsSchema>;

export function planTool(ws: DeployWorkspace): Tool<PlanParams> {
  return keyedStep(ws, {
    name: 'deploy.plan',
    description: 'Plan a release of an app at a version: which files, which steps. Writes plan.json.',
    params: PlanParamsSchema,
    async run(params) {
      const plan: Plan = {
        app: params.app,
        version: params.version,
        greeting: params.greeting ?? 'Hello',
        files: [...TEMPLATE_FILES],
        steps: DEPLOY_STEPS,
      };
      const text = `${JSON.stringify(plan, null, 2)}\n`;
      const path = appPaths(params.app).plan;
      writeFileAtomic(join(ws.dir, path), text);
      return {
        app: plan.app,
        version: plan.version,
        plan: path,
        files: plan.files,
        steps: plan.steps,
        sha256: sha256(text),
      };
    },
  });
}
