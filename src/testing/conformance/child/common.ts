/** Shared by the child processes of the multi-process tests: wait for the parent's "go", report as JSON. */
import { createInterface } from 'node:readline';

/** Prints `ready` and resolves when the parent writes a line, so children start their work together. */
export async function readyThenWait(): Promise<void> {
  process.stdout.write('ready\n');
  const lines = createInterface({ input: process.stdin });
  await new Promise<void>((resolve) => lines.once('line', () => resolve()));
  lines.close();
}

export function report(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

export function args(count: number, usage: string): string[] {
  const given = process.argv.slice(2);
  if (given.length !== count) {
    process.stderr.write(`usage: ${usage}\n`);
    process.exit(2);
  }
  return given;
}
