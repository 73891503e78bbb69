/** Stopping a harness's child process: SIGTERM, then SIGKILL after a grace period; safe to call twice. */
import type { ChildProcess } from 'node:child_process';

/** Returns a function that stops `child` and resolves once it is gone. */
export function childStopper(child: ChildProcess, graceMs: number): () => Promise<void> {
  const gone = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
  return async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const force = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await gone;
      clearTimeout(force);
    }
    await gone;
  };
}
