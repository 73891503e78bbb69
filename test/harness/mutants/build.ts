/**
 * Builds a runtime copy to test: `src/` and the runtime tests copied into a folder of their own, the
 * mutation's edits applied (each must match exactly once), and the sources compiled with esbuild so the
 * crash harness's children start as fast as the real build's. `node_modules` is a link to the project's.
 */
import { execFile } from 'node:child_process';
import {
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import type { CrashReport } from '../../../src/harness/crash/report.js';
import type { Mutation } from './mutations.js';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '../../..');

export interface BuiltCopy {
  readonly dir: string;
  /** `node <cli> crashtest ...` runs the copy's crash harness. */
  readonly cli: string;
  remove(): void;
}

function sources(dir: string): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile() && entry.name.endsWith('.ts')) files.push(join(entry.parentPath, entry.name));
  }
  return files;
}

export async function buildCopy(mutation: Mutation | null): Promise<BuiltCopy> {
  const dir = mkdtempSync(join(tmpdir(), `agentstate-${mutation?.name ?? 'control'}-`));
  cpSync(join(ROOT, 'src'), join(dir, 'src'), { recursive: true });
  cpSync(join(ROOT, 'test/runtime'), join(dir, 'test/runtime'), { recursive: true });
  cpSync(join(ROOT, 'package.json'), join(dir, 'package.json'));
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
  writeFileSync(
    join(dir, 'vitest.config.ts'),
    "import { defineConfig } from 'vitest/config';\nexport default defineConfig({ test: { include: ['test/**/*.test.ts'], testTimeout: 20_000, pool: 'forks', maxWorkers: 1 } });\n",
  );
  for (const edit of mutation?.edits ?? []) {
    const path = join(dir, edit.file);
    const text = readFileSync(path, 'utf8');
    const found = text.split(edit.find).length - 1;
    if (found !== 1)
      throw new Error(`${mutation?.name}: ${edit.file} has ${found} copies of ${JSON.stringify(edit.find)}`);
    writeFileSync(
      path,
      text.replace(edit.find, () => edit.replace),
    );
  }
  const out = join(dir, 'dist');
  mkdirSync(out);
  await build({
    entryPoints: sources(join(dir, 'src')),
    outdir: join(out, 'src'),
    outbase: join(dir, 'src'),
    format: 'esm',
    platform: 'node',
    target: 'node20',
    logLevel: 'error',
  });
  return {
    dir,
    cli: join(out, 'src/cli/main.js'),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

export interface CrashRun {
  readonly exitCode: number;
  readonly report: CrashReport;
}

/** `agentstate crashtest` of the copy, as a user runs it, on a fresh SQLite file (`args`: `--agent`...). */
export async function crashTest(
  copy: BuiltCopy,
  kills: number,
  args: readonly string[] = [],
): Promise<CrashRun> {
  const name = args.length === 0 ? 'crash' : `crash-${args.join('-').replace(/[^a-z0-9-]/gi, '')}`;
  const reportPath = join(copy.dir, `reports/${name}.json`);
  const argv = [
    copy.cli,
    'crashtest',
    '--store',
    `sqlite:${join(copy.dir, `${name}.db`)}`,
    '--kills',
    String(kills),
    '--report',
    reportPath,
    ...args,
  ];
  let exitCode = 0;
  try {
    await run(process.execPath, argv, { cwd: copy.dir, maxBuffer: 16 * 1024 * 1024 });
  } catch (error) {
    exitCode = (error as { code?: number }).code ?? -1;
  }
  return { exitCode, report: JSON.parse(readFileSync(reportPath, 'utf8')) as CrashRun['report'] };
}

export interface TestRun {
  readonly failed: number;
  readonly passed: number;
  /** Names of the failed tests. */
  readonly failures: string[];
}

/** Runs test files of the copy with vitest (its own sources), and counts what failed. */
export async function runtimeTests(copy: BuiltCopy, files: readonly string[]): Promise<TestRun> {
  const output = join(copy.dir, 'vitest.json');
  const vitest = join(ROOT, 'node_modules/vitest/vitest.mjs');
  try {
    await run(process.execPath, [vitest, 'run', ...files, '--reporter=json', `--outputFile=${output}`], {
      cwd: copy.dir,
      env: { ...process.env, NODE_OPTIONS: '' },
      maxBuffer: 16 * 1024 * 1024,
    });
  } catch {
    // a failing run exits 1; its JSON report says what failed
  }
  const report = JSON.parse(readFileSync(output, 'utf8')) as {
    numFailedTests: number;
    numPassedTests: number;
    testResults: { name: string; assertionResults: { fullName: string; status: string }[] }[];
  };
  return {
    failed: report.numFailedTests,
    passed: report.numPassedTests,
    failures: report.testResults.flatMap((file) =>
      file.assertionResults
        .filter((test) => test.status === 'failed')
        .map((test) => `${relative(copy.dir, file.name)}: ${test.fullName}`),
    ),
  };
}
