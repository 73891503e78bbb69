/**
 * `deploy.deploy`: copies the built artifact into `releases/<service>/<environment>/<release>/` and flips
 * the `current` link there to it.
 */
import { copyFileSync, readFileSync, renameSync, rmSync, symlinkSync } from 'node:fs';
import { join, posix } from 'node:path';
import { DeployDeployParams } from '../../agents/tool-params.js';
import { AgentStateError } from '../../core/errors.js';
import { makeFolder } from '../../process/folders.js';
import type { Tool } from '../../runtime/tool.js';
import { artifactPath } from './build.js';
import { effectStep } from './effect-step.js';
import {
  appPaths,
  type DeployWorkspace,
  type Plan,
  readStepOutput,
  rejected,
  sha256,
  versionSlug,
} from './workspace.js';

/** Points `link` at `target` atomically: a new symlink under a temporary name renamed over the old one. */
function flipLink(link: string, target: string): void {
  const temp = `${link}.tmp-${process.pid}`;
  rmSync(temp, { force: true });
  symlinkSync(target, temp);
  renameSync(temp, link);
}

export function deployTool(ws: DeployWorkspace): Tool<DeployDeployParams> {
  return effectStep(ws, {
    name: 'deploy.deploy',
    description:
      'Release the built artifact: copy it to releases/<service>/<environment>/<version>-<hash>/, point current at it.',
    params: DeployDeployParams,
    async run(params) {
      const paths = appPaths(params);
      const plan = readStepOutput<Plan>(ws, paths.plan, 'deploy.plan');
      const artifact = artifactPath(plan);
      let bytes: Buffer;
      try {
        bytes = readFileSync(join(ws.dir, artifact));
      } catch {
        throw rejected(`${artifact} does not exist: run deploy.build first`);
      }
      const hash = sha256(bytes);
      const built = params.build as { sha256?: unknown } | null;
      if (typeof built?.sha256 === 'string' && built.sha256 !== hash) {
        throw rejected(`${artifact} is not the build given (sha256 ${hash} != ${built.sha256}): build again`);
      }
      const release = `${versionSlug(plan.version)}-${hash.slice(0, 12)}`;
      const releaseDir = posix.join(paths.releases, release);
      const absDir = join(ws.dir, releaseDir);
      makeFolder(absDir, 'for the release');
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
        service: plan.service,
        environment: plan.environment,
        version: plan.version,
        url: `https://${plan.environment}.demo.invalid/${plan.service}/${release}/`,
        release: releaseDir,
        current: posix.join(paths.releases, 'current'),
        sha256: hash,
      };
    },
  });
}
