/** `deploy.run_tests`: really runs the service's `*.test.mjs` files with `node --test` in a child process. */
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { DeployRunTestsParams } from '../../agents/tool-params.js';
import type { Tool } from '../../runtime/tool.js';
import { effectStep } from './effect-step.js';
import { appPaths, type DeployWorkspace, rejected, writeFileAtomic } from './workspace.js';

export interface TestCounts {
  readonly tests: number;
  readonly passed: number;
  readonly failed: number;
}

const TEST_TIMEOUT_MS = 60_000;

function count(tap: string, label: string): number {
  const match = new RegExp(`^# ${label} (\\d+)$`, 'm').exec(tap);
  return match ? Number(match[1]) : 0;
}

/** Runs `node --test` on the files; resolves with the counts from its TAP summary (never with timings). */
export function runNodeTests(
  cwd: string,
  files: readonly string[],
  signal: AbortSignal,
): Promise<TestCounts> {
  return new Promise((resolve, reject) => {
    const env = { ...process.env };
    delete env.NODE_OPTIONS;
    delete env.NODE_TEST_CONTEXT;
    const child = spawn(process.execPath, ['--test', '--test-reporter=tap', ...files], {
      cwd,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
      signal: AbortSignal.any([signal, AbortSignal.timeout(TEST_TIMEOUT_MS)]),
    });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
    });
    child.stderr.resume();
    child.once('error', reject);
    child.once('close', () => {
      resolve({ tests: count(out, 'tests'), passed: count(out, 'pass'), failed: count(out, 'fail') });
    });
  });
}

export function runTestsTool(ws: DeployWorkspace): Tool<DeployRunTestsParams> {
  return effectStep(ws, {
    name: 'deploy.run_tests',
    description: "Run the service's tests (node --test on its src/*.test.mjs) and record pass/fail.",
    params: DeployRunTestsParams,
    async run(params, ctx) {
      const paths = appPaths(params);
      const srcDir = join(ws.dir, paths.src);
      let files: string[];
      try {
        files = readdirSync(srcDir)
          .filter((name) => name.endsWith('.test.mjs'))
          .sort();
      } catch {
        throw rejected(`${paths.src} does not exist: run deploy.write_files first`);
      }
      if (files.length === 0) throw rejected(`${paths.src} holds no *.test.mjs file to run`);
      const counts = await runNodeTests(srcDir, files, ctx.signal);
      const ok = counts.tests > 0 && counts.failed === 0 && counts.passed === counts.tests;
      const report = { service: params.service, environment: params.environment, ok, files, ...counts };
      writeFileAtomic(join(ws.dir, paths.testReport), `${JSON.stringify(report, null, 2)}\n`);
      return { ...report, report: paths.testReport };
    },
  });
}
