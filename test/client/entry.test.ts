/**
 * `agentstate/client` is its own entry: the main `agentstate` entry never loads it (nor openapi-fetch),
 * statically or on demand, and the client loads nothing of the server (it runs in browsers too).
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..', '..');

/** Every module of src reachable from `entry` by static and dynamic imports, and the packages they import. */
function reachable(entry: string): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const queue = [resolve(ROOT, entry)];
  while (queue.length > 0) {
    const file = queue.pop() as string;
    if (files.has(file)) continue;
    files.add(file);
    const info = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    for (const { fileName } of info.importedFiles) {
      if (!fileName.startsWith('.')) {
        packages.add(fileName);
        continue;
      }
      const target = resolve(dirname(file), fileName);
      const found = [target.replace(/\.js$/, '.ts'), target].find((candidate) => existsSync(candidate));
      if (found !== undefined) queue.push(found);
    }
  }
  return { files: new Set([...files].map((file) => relative(ROOT, file))), packages };
}

describe('agentstate/client as its own entry', () => {
  it('the main entry reaches no module of src/client and not openapi-fetch', () => {
    const main = reachable('src/index.ts');
    expect(main.files.size).toBeGreaterThan(20);
    expect([...main.files].filter((file) => file.startsWith(join('src', 'client')))).toEqual([]);
    expect(main.packages.has('openapi-fetch')).toBe(false);
  });

  it('the client reaches only its own modules and openapi-fetch', () => {
    const client = reachable('src/client/index.ts');
    expect([...client.files].every((file) => file.startsWith(join('src', 'client')))).toBe(true);
    expect(client.files.has(join('src', 'client', 'generate.ts'))).toBe(false);
    expect([...client.packages]).toEqual(['openapi-fetch']);
  });

  it('package.json exports it from the built client', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      exports: Record<string, { import: string; types: string }>;
    };
    expect(pkg.exports['./client']).toEqual({
      types: './dist/src/client/index.d.ts',
      import: './dist/src/client/index.js',
    });
  });
});
