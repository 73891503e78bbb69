/** `deploy.plan`: decides what will be built and writes it to `apps/<service>/<environment>/plan.json`. */
import { join } from 'node:path';
import { DEPLOY_STEPS, DeployPlanParams } from '../../agents/tool-params.js';
import type { Tool } from '../../runtime/tool.js';
import { effectStep } from './effect-step.js';
import { TEMPLATE_FILES } from './template.js';
import { appPaths, type DeployWorkspace, type Plan, sha256, writeFileAtomic } from './workspace.js';

export function planTool(ws: DeployWorkspace): Tool<DeployPlanParams> {
  return effectStep(ws, {
    name: 'deploy.plan',
    description: 'Plan a release of a service to an environment at a version: which files, which steps.',
    params: DeployPlanParams,
    async run(params) {
      const plan: Plan = {
        service: params.service,
        environment: params.environment,
        version: params.version,
        greeting: `Hello from ${params.service} (${params.environment})`,
        files: [...TEMPLATE_FILES],
        steps: [...DEPLOY_STEPS],
      };
      const text = `${JSON.stringify(plan, null, 2)}\n`;
      const path = appPaths(params).plan;
      writeFileAtomic(join(ws.dir, path), text);
      return { ...plan, plan: path, sha256: sha256(text) };
    },
  });
}
