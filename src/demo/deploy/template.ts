/** The source files `deploy.write_files` writes when the caller gives none: a tiny module and its tests. */
import type { Plan } from './workspace.js';

export const TEMPLATE_FILES = ['greet.mjs', 'greet.test.mjs'] as const;

export function templateFiles(plan: Plan): Record<string, string> {
  const expected = `${plan.greeting}, Ada! (v${plan.version})`;
  return {
    'greet.mjs': [
      `const GREETING = ${JSON.stringify(plan.greeting)};`,
      `export const VERSION = ${JSON.stringify(plan.version)};`,
      'export function greet(name) {',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: this is generated JavaScript source
      '  return `${GREETING}, ${name}! (v${VERSION})`;',
      '}',
      '',
    ].join('\n'),
    'greet.test.mjs': [
      "import assert from 'node:assert/strict';",
      "import { test } from 'node:test';",
      "import { greet, VERSION } from './greet.mjs';",
      '',
      "test('greets by name', () => {",
      `  assert.equal(greet('Ada'), ${JSON.stringify(expected)});`,
      '});',
      '',
      "test('carries the planned version', () => {",
      `  assert.equal(VERSION, ${JSON.stringify(plan.version)});`,
      '});',
      '',
    ].join('\n'),
  };
}
