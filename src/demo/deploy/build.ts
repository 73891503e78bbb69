/** `deploy.build`: bundles the tested sources into one artifact file named and checked by its content hash. */
import { readdirSync, readFileSync } from 'node:fs';
import { join, posix } from 'node:path';
import { z } from 'zod';
import { canonicalJson } from '../../core/json.js';
import type { Tool } from '../../runtime/tool.js';
import { keyedStep } from './keyed.js';
import {
  AppNameSchema,
  appPaths,
  type DeployWorkspace,
  type Plan,
  readStepOutput,
  rejected,
  sha256,
  writeFileAtomic,
} from './workspace.js';

export const BuildParamsSchema = z.strictObject({ app: AppNameSchema });
export type BuildParams = z.infer<typeof BuildParamsSchema>;

export function artifactPath(app: string, version: string): string {
  return posix.join(appPaths(app).build, `${app}-${version}.bundle.json`);
}

export function buildTool(ws: DeployWorkspace): Tool<BuildParams> {
  return keyedStep(ws, {
    name: 'deploy.build',
    description: 'Build the app into one bundle file with its sha256; refuses when the tests did not pass.',
    params: BuildParamsSchema,
    async run(params) {
      const paths = appPaths(params.app);
      const plan = readStepOutput<Plan>(ws, paths.plan, 'deploy.plan');
      const report = readStepOutput<{ ok: boolean }>(ws, paths.testReport, 'deploy.run_tests');
      if (!report.ok) throw rejected(`the tests of ${params.app} did not pass: nothing to build`);
      const srcDir = join(ws.dir, paths.src);
      const files: Record<string, string> = {};
      for (const name of readdirSync(srcDir).sort()) {
        if (name.endsWith('.test.mjs') || name.includes('.tmp-')) continue;
        files[name] = readFileSync(join(srcDir, name), 'utf8');
      }
      const bundle = `${canonicalJson({ app: plan.app, version: plan.version, files })}\n`;
      const artifact = artifactPath(plan.app, plan.version);
      writeFileAtomic(join(ws.dir, artifact), bundle);
      return {
        app: plan.app,
        version: plan.version,
        artifact,
        files: Object.keys(files),
        bytes: Buffer.byteLength(bundle),
        sha256: sha256(bundle),
      };
    },
  });
}
