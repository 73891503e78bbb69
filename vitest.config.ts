import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'examples/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Most test files wait on real servers and child processes rather than the CPU: run three at once
    // even on two cores. Every file uses its own schema, key prefix or temp directory.
    maxWorkers: 3,
  },
});
