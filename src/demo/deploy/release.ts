/** `deploy.deploy`: copies the built artifact into `releases/<app>/<release>/` and flips the `current` link. */
import { copyFileSync, mkdirSync, readFileSync, renameSync, rmSync, symlinkSync } from 'node:fs';
import { join, posix } from 'node:path';
import { z } from 'zod';
import { AgentStateError } from '../../core/errors.js';
import type { Tool } from '../../runtime/tool.js';
import { artifactPath } from './build.js';
import { keyedStep } from './keyed.js';
import {
  AppNameSchema,
  appPaths,
  type DeployWorkspace,
  type Plan,
  readStepOutput,
  rejected,
  sha256,
} from './workspace.js';

export const DeployParamsSchema = z.strictObject({ app: AppNameSchema });
export type DeployParams = z.infer<typeof DeployParamsSchema>;

/** Points `link` at `target` atomically: a new symlink under a temporary name renamed over the old one. */
function flipLink(link: string, target: string): void {
  const temp = `${link}.tmp-${process.pid}`;
  rmSync(temp, { force: true });
  symlinkSync(target, temp);
  renameSync(temp, link);
}

export function deployTool(ws: DeployWorkspace): Tool<DeployParams> {
  return keyedStep(ws, {
    name: 'deploy.deploy',
    description:
      'Release the built artifact: copy it to releases/<app>/<version>-<hash>/ and point current at it.',
    params: DeployParamsSchema,
    async run(params) {
      const paths = appPaths(params.app);
      const plan = readStepOutput<Plan>(ws, paths.plan, 'deploy.plan');
      const artifact = artifactPath(plan.app, plan.version);
      let bytes: Buffer;
      try {
        bytes = readFileSync(join(ws.dir, artifact));
      } catch {
        throw rejected(`${artifact} does not exist: run deploy.build first`);
      }
      const hash = sha256(bytes);
      const release = `${plan.version}-${hash.slice(0, 12)}`;
      const releaseDir = posix.join(paths.releases, release);
      const absDir = join(ws.dir, releaseDir);
      mkdirSync(absDir, { recursive: true });
      const copied = join(absDir, posix.basename(artifact));
      copyFileSync(join(ws.dir, artifact), copied);
      if (sha256(readFileSync(copied)) !== hash) {
        throw new AgentStateError(
          'internal',
          `[deploy.deploy] the copy of ${artifact} does not match its hash`,
        );
      }
      flipLink(join(ws.dir, paths.releases, 'current'), release);
      return {
        app: plan.app,
        version: plan.version,
        release: releaseDir,
        current: posix.join(paths.releases, 'current'),
        sha256: hash,
      };
    },
  });
}
