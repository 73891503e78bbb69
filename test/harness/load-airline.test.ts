/**
 * The demo airline's time per booking in the load report: its ring of timings, the window a phase reads,
 * and the pooling of several runs of a phase.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BookingTimings } from '../../src/demo/airline/timings.js';
import { readAirlineTimings } from '../../src/harness/load/airline-timings.js';
import type { PhaseResult, PhaseRun } from '../../src/harness/load/phase.js';
import { pooledPhase } from '../../src/harness/load/pool.js';
import { latencies } from '../../src/harness/load/stats.js';

describe('booking timings', () => {
  it('answers the requests since a time by arrival, though they ended in another order', () => {
    const kept = new BookingTimings();
    // recorded as they end: the one that arrived at 300 ended before the one of 200
    for (const [at, ms] of [
      [100, 1],
      [300, 2],
      [200, 9],
      [400, 1],
    ] as const)
      kept.record(at, ms);
    expect(kept.since(250)).toEqual([
      [300, 2],
      [400, 1],
    ]);
    expect(kept.since(200)).toEqual([
      [200, 9],
      [300, 2],
      [400, 1],
    ]);
    expect(kept.since(401)).toEqual([]);
  });

  it('keeps only the newest, in a ring', () => {
    const kept = new BookingTimings(3);
    for (let i = 1; i <= 7; i++) kept.record(i * 100, i);
    expect(kept.since(0)).toEqual([
      [500, 5],
      [600, 6],
      [700, 7],
    ]);
  });
});

describe('reading the airline timings of a phase', () => {
  let server: Server;
  let url: string;
  let answer: unknown = { bookings: [] };
  beforeAll(async () => {
    server = createServer((_request, response) => {
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify(answer));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('keeps the bookings that arrived before the phase ended, and gives null for an answer it cannot read', async () => {
    answer = {
      bookings: [
        [1000, 4.5],
        [2000, 9],
        [3001, 2],
      ],
    };
    expect(await readAirlineTimings(url, 1000, 3000)).toEqual([4.5, 9]);
    answer = { bookings: [[1000, 'slow']] };
    expect(await readAirlineTimings(url, 1000, 3000)).toBeNull();
    answer = { nothing: true };
    expect(await readAirlineTimings(url, 1000, 3000)).toBeNull();
    expect(await readAirlineTimings('http://127.0.0.1:1', 0, 1)).toBeNull();
  });
});

describe('pooling the airline timings of several runs', () => {
  const run = (airlineMs: number[] | null, turnMs: number[]): PhaseRun => {
    const result = {
      ...latencies(turnMs),
      phase: 'load',
      users: 1,
      think_ms: 1000,
      concurrent: true,
      ramp_ms: 0,
      turns_per_s: 1,
      wall_ms: 1000,
      by_turn: [latencies(turnMs)],
      errors: 0,
      server: null,
      airline: airlineMs === null ? null : latencies(airlineMs),
      machine: null,
      cpu: null,
      slowest: [],
    } satisfies PhaseResult;
    const user = {
      turns: turnMs.map((ms) => ({ ms, startedAt: 0, endedAt: ms })),
    } as unknown as PhaseRun['users'][number];
    return { result, users: [user], slowest: [], airlineMs };
  };

  it('pools every booking of every run, or gives null when a run has none to give', () => {
    const pooled = pooledPhase([run([1, 2, 3], [10]), run([4, 100], [20])]);
    expect(pooled.airline).toEqual(latencies([1, 2, 3, 4, 100]));
    expect(pooledPhase([run([1, 2], [10]), run(null, [20])]).airline).toBeNull();
  });
});
