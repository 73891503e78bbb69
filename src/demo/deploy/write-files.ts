/** `deploy.write_files`: writes the service's source files (the planned template, or `sources` when given). */
import { join, posix } from 'node:path';
import { z } from 'zod';
import { DeployWriteFilesParams } from '../../agents/tool-params.js';
import type { Tool } from '../../runtime/tool.js';
import { effectStep } from './effect-step.js';
import { templateFiles } from './template.js';
import {
  appPaths,
  type DeployWorkspace,
  type Plan,
  readStepOutput,
  sha256,
  writeFileAtomic,
} from './workspace.js';

const FileNameSchema = z
  .string()
  .regex(/^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}$/, 'must be a plain file name (no directories, no leading dot)');

export const WriteFilesParamsSchema = DeployWriteFilesParams.extend({
  /** File name -> content, replacing the planned template (the agent never sends it; tests do). */
  sources: z.record(FileNameSchema, z.string().max(256 * 1024)).optional(),
});
export type WriteFilesParams = z.infer<typeof WriteFilesParamsSchema>;

export function writeFilesTool(ws: DeployWorkspace): Tool<WriteFilesParams> {
  return effectStep(ws, {
    name: 'deploy.write_files',
    description:
      "Write the service's source files and tests into apps/<service>/<environment>/src as planned.",
    params: WriteFilesParamsSchema,
    async run(params) {
      const paths = appPaths(params);
      const plan = readStepOutput<Plan>(ws, paths.plan, 'deploy.plan');
      const files = params.sources ?? templateFiles(plan);
      const written = Object.keys(files)
        .sort()
        .map((name) => {
          const content = files[name] ?? '';
          const path = posix.join(paths.src, name);
          writeFileAtomic(join(ws.dir, path), content);
          return { path, bytes: Buffer.byteLength(content), sha256: sha256(content) };
        });
      return { service: params.service, environment: params.environment, files: written };
    },
  });
}
