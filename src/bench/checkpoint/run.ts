/**
 * Drives one system through the three phases (puts, latest-gets, history lists) with the same payload,
 * checking every read, then measures what it stored.
 */
import { type OpStats, summarize, timePhase } from './measure.js';
import { INITIAL_MESSAGES, type runStates } from './payload.js';
import type { OpenSystem, ReadBack, SystemContext, SystemSpec } from './system.js';

export interface BenchSize {
  readonly runs: number;
  readonly steps: number;
  readonly gets: number;
  readonly lists: number;
  readonly historyLimit: number;
  readonly warmupRuns: number;
}

export const SIZES: Readonly<Record<'full' | 'small' | 'tiny', BenchSize>> = {
  full: { runs: 50, steps: 40, gets: 2000, lists: 200, historyLimit: 40, warmupRuns: 2 },
  small: { runs: 10, steps: 40, gets: 400, lists: 50, historyLimit: 40, warmupRuns: 1 },
  tiny: { runs: 2, steps: 5, gets: 10, lists: 4, historyLimit: 5, warmupRuns: 1 },
};

export interface SystemResult {
  readonly name: string;
  readonly family: string;
  readonly backend: string;
  readonly concurrency: number;
  /** How many times it ran; figures are medians over the repeats. */
  readonly repeats: number;
  readonly ops: { readonly put: OpStats; readonly latest: OpStats; readonly history: OpStats } | null;
  readonly stored: {
    readonly method: string;
    readonly bytes: number;
    readonly checkpoints: number;
    readonly bytes_per_checkpoint: number;
    /** SQLite: growth of the file on disk per checkpoint; null elsewhere. */
    readonly file_bytes_per_checkpoint: number | null;
  } | null;
  /** Set when the system could not be run (for example a server that is not there). */
  readonly error: string | null;
}

function expectRead(what: string, got: ReadBack, step: number): void {
  const messages = INITIAL_MESSAGES + step;
  if (got.step !== step || got.messages !== messages) {
    throw new Error(
      `${what}: expected step ${step} with ${messages} messages, got step ${got.step} with ${got.messages}`,
    );
  }
}

async function drive(
  system: OpenSystem,
  size: BenchSize,
  states: ReturnType<typeof runStates>,
  concurrency: number,
): Promise<NonNullable<SystemResult['ops']>> {
  const last = size.steps - 1;
  const warmup = Array.from({ length: size.warmupRuns }, (_, w) =>
    states.map((state, step) => () => system.put(size.runs + w, step, state)),
  );
  await timePhase(warmup, concurrency);
  for (let w = 0; w < size.warmupRuns; w++)
    expectRead('warm-up latest', await system.latest(size.runs + w), last);

  const puts = Array.from({ length: size.runs }, (_, run) =>
    states.map((state, step) => () => system.put(run, step, state)),
  );
  const put = await timePhase(puts, concurrency);

  const gets = Array.from({ length: size.gets }, (_, i) => [
    async () => expectRead('latest', await system.latest(i % size.runs), last),
  ]);
  const latest = await timePhase(gets, concurrency);

  const expected = Math.min(size.historyLimit, size.steps);
  const lists = Array.from({ length: size.lists }, (_, i) => [
    async () => {
      const items = await system.history(i % size.runs, size.historyLimit);
      if (items.length !== expected)
        throw new Error(`history: expected ${expected} checkpoints, got ${items.length}`);
      for (const [k, item] of items.entries()) expectRead('history', item, last - k);
    },
  ]);
  const history = await timePhase(lists, concurrency);

  return {
    put: summarize(put.samples, put.wallMs, put.cpuMs),
    latest: summarize(latest.samples, latest.wallMs, latest.cpuMs),
    history: summarize(history.samples, history.wallMs, history.cpuMs),
  };
}

export async function runSystem(
  spec: SystemSpec,
  context: SystemContext,
  size: BenchSize,
  states: ReturnType<typeof runStates>,
): Promise<SystemResult> {
  const concurrency = spec.concurrency ?? 1;
  const base = { name: spec.name, family: spec.family, backend: spec.backend, concurrency, repeats: 1 };
  let system: OpenSystem | null = null;
  try {
    system = await spec.open(context);
    const ops = await drive(system, size, states, concurrency);
    const measured = await system.storedBytes();
    const checkpoints = (size.runs + size.warmupRuns) * size.steps;
    const stored =
      measured === null
        ? null
        : {
            method: measured.method,
            bytes: measured.bytes,
            checkpoints,
            bytes_per_checkpoint: Math.round(measured.bytes / checkpoints),
            file_bytes_per_checkpoint:
              measured.file_bytes === undefined ? null : Math.round(measured.file_bytes / checkpoints),
          };
    return { ...base, ops, stored, error: null };
  } catch (error) {
    return {
      ...base,
      ops: null,
      stored: null,
      error: error instanceof Error ? error.message : String(error),
    };
  } finally {
    await system?.close().catch(() => {});
  }
}
