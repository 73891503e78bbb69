/**
 * Every file a deploy wrote, as a user would look at it: path -> sha256 of its bytes, or `-> target` for a
 * link. The effect log is left out (its keys name the run's ids); it is checked on its own (effects.ts).
 */
import { createHash } from 'node:crypto';
import { lstatSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join, posix } from 'node:path';
import { DEPLOY_EFFECTS_FILE } from '../../demo/deploy/workspace.js';

export function workspaceFiles(dir: string): Record<string, string> {
  const files: Record<string, string> = {};
  const walk = (rel: string) => {
    let names: string[];
    try {
      names = readdirSync(join(dir, rel)).sort();
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw error;
    }
    for (const name of names) {
      const path = rel === '' ? name : posix.join(rel, name);
      if (path === DEPLOY_EFFECTS_FILE) continue;
      const stat = lstatSync(join(dir, path));
      if (stat.isSymbolicLink()) files[path] = `-> ${readlinkSync(join(dir, path))}`;
      else if (stat.isDirectory()) walk(path);
      else
        files[path] = createHash('sha256')
          .update(readFileSync(join(dir, path)))
          .digest('hex');
    }
  };
  walk('');
  return files;
}
