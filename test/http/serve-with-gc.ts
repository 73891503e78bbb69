/**
 * `agentstate serve` for memory measurements: run under `node --expose-gc`, it answers SIGUSR2 with a full
 * garbage collection and then a line `memory {process.memoryUsage() as JSON}` on stderr.
 */
process.on('SIGUSR2', () => {
  (globalThis as { gc?: () => void }).gc?.();
  process.stderr.write(`memory ${JSON.stringify(process.memoryUsage())}\n`);
});
await import('../../src/cli/main.js');
