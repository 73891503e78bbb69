/**
 * `makeFolder`: creates a folder and its missing parents, one level at a time. Node's recursive mkdir never
 * returns where mkdir(2) answers ENOENT under a parent that exists (a path under /proc or /sys): this fails at
 * once instead, naming the folder, and names an ancestor that is a file rather than a folder.
 */
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { dirname } from 'node:path';

/** `what` says what the folder is for, in the error: "for the database", "for the report". */
export function makeFolder(folder: string, what: string): void {
  const missing: string[] = [];
  let at = folder;
  while (!existsSync(at)) {
    missing.push(at);
    const parent = dirname(at);
    if (parent === at) break;
    at = parent;
  }
  if (existsSync(at) && !statSync(at).isDirectory()) {
    throw new Error(`cannot create ${folder} ${what}: ${at} is a file, not a folder`);
  }
  for (const dir of missing.reverse()) {
    try {
      mkdirSync(dir);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'EEXIST') continue;
      throw new Error(`cannot create ${dir} ${what} (${code ?? String(error)})`);
    }
  }
}
