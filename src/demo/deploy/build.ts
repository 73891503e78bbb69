/** `deploy.build`: bundles the tested sources into one artifact file named and checked by its content hash. */
import { readdirSync, readFileSync } from 'node:fs';
import { join, posix } from 'node:path';
import { DeployBuildParams } from '../../agents/tool-params.js';
import { canonicalJson } from '../../core/json.js';
import type { Tool } from '../../runtime/tool.js';
import { effectStep } from './effect-step.js';
import {
  appPaths,
  type DeployWorkspace,
  type Plan,
  readStepOutput,
  rejected,
  sha256,
  type Target,
  versionSlug,
  writeFileAtomic,
} from './workspace.js';

export function artifactPath(target: Target): string {
  return posix.join(appPaths(target).build, `${target.service}-${versionSlug(target.version)}.bundle.json`);
}

export function buildTool(ws: DeployWorkspace): Tool<DeployBuildParams> {
  return effectStep(ws, {
    name: 'deploy.build',
    description:
      'Build the service into one bundle file with its sha256; refuses when the tests did not pass.',
    params: DeployBuildParams,
    async run(params) {
      const paths = appPaths(params);
      const plan = readStepOutput<Plan>(ws, paths.plan, 'deploy.plan');
      const report = readStepOutput<{ ok: boolean }>(ws, paths.testReport, 'deploy.run_tests');
      if (!report.ok) throw rejected(`the tests of ${params.service} did not pass: nothing to build`);
      const srcDir = join(ws.dir, paths.src);
      const files: Record<string, string> = {};
      for (const name of readdirSync(srcDir).sort()) {
        if (name.endsWith('.test.mjs') || name.includes('.tmp-')) continue;
        files[name] = readFileSync(join(srcDir, name), 'utf8');
      }
      const bundle = `${canonicalJson({ service: plan.service, environment: plan.environment, version: plan.version, files })}\n`;
      const artifact = artifactPath(plan);
      writeFileAtomic(join(ws.dir, artifact), bundle);
      return {
        service: plan.service,
        environment: plan.environment,
        version: plan.version,
        artifact,
        files: Object.keys(files),
        bytes: Buffer.byteLength(bundle),
        sha256: sha256(bundle),
      };
    },
  });
}
