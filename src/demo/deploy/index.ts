/** The five deploy tools of the `deploy_pipeline` agent, over one workspace directory. */
import type { Tool } from '../../runtime/tool.js';
import { buildTool } from './build.js';
import { planTool } from './plan.js';
import { deployTool } from './release.js';
import { runTestsTool } from './run-tests.js';
import { type DemoHooks, deployWorkspace } from './workspace.js';
import { writeFilesTool } from './write-files.js';

export function createDeployTools(workspaceDir: string, hooks: DemoHooks = {}): Tool[] {
  const ws = deployWorkspace(workspaceDir, hooks);
  return [planTool(ws), writeFilesTool(ws), runTestsTool(ws), buildTool(ws), deployTool(ws)];
}

export { DEPLOY_STEPS } from '../../agents/tool-params.js';
export { type DemoHooks, type DeployWorkspace, deployWorkspace, type ToolPoint } from './workspace.js';
