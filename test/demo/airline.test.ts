import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type AirlineService, startAirlineService } from '../../src/demo/airline/server.js';
import { tallyEffectLog } from '../../src/demo/effects.js';
import { readLedger } from '../../src/demo/ledger.js';

/** Lines of the airline's idempotency index per key (1 each: a key books once). */
function perKey(path: string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const entry of readLedger(path)) counts[entry.key] = (counts[entry.key] ?? 0) + 1;
  return counts;
}

const trip = {
  origin: 'CDG',
  destination: 'JFK',
  date: '2026-12-24',
  cabin: 'business',
  passenger: 'Ada Lovelace',
};

let dir: string;
let airline: AirlineService;

async function post(body: unknown, key: string | null, url = airline.url): Promise<Response> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (key !== null) headers['idempotency-key'] = key;
  return fetch(`${url}/bookings`, { method: 'POST', headers, body: JSON.stringify(body) });
}

const newKey = () => `key-${Math.random().toString(36).slice(2)}`;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'airline-'));
  airline = await startAirlineService({ dataDir: dir, port: 0 });
});

afterEach(async () => {
  await airline.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('demo airline: idempotency', () => {
  it('books once for one key and answers the same booking on a replay', async () => {
    const key = newKey();
    const first = await post(trip, key);
    expect(first.status).toBe(201);
    const booking = (await first.json()) as Record<string, unknown>;
    expect(booking.pnr).toMatch(/^[A-HJ-NP-Z2-9]{6}$/);
    expect(booking).toMatchObject({
      status: 'CONFIRMED',
      origin: 'CDG',
      destination: 'JFK',
      cabin: 'business',
    });

    const second = await post(trip, key);
    expect(second.status).toBe(200);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(await second.json()).toEqual(booking);
    expect(perKey(airline.ledgerPath)).toEqual({ [key]: 1 });
    // The effect log shows both calls: one booking made, and a second call for a booking already made.
    const effects = tallyEffectLog(airline.effectsPath);
    expect(effects).toMatchObject({ calls: 2, effects: 1, duplicate_effects: 0, redundant_calls: 1 });
  });

  it('books twice for two keys, with different booking ids and PNRs', async () => {
    const a = (await (await post(trip, newKey())).json()) as Record<string, unknown>;
    const b = (await (await post(trip, newKey())).json()) as Record<string, unknown>;
    expect(a.booking_id).not.toBe(b.booking_id);
    expect(a.pnr).not.toBe(b.pnr);
    expect(readLedger(airline.ledgerPath)).toHaveLength(2);
    // Two bookings of one trip under two keys: the airline made both, and its effect log counts the second.
    expect(tallyEffectLog(airline.effectsPath).duplicate_effects).toBe(1);
  });

  it('answers 409 for the same key with a different body and books nothing more', async () => {
    const key = newKey();
    expect((await post(trip, key)).status).toBe(201);
    const reused = await post({ ...trip, cabin: 'economy' }, key);
    expect(reused.status).toBe(409);
    expect(((await reused.json()) as { error: string }).error).toContain('different booking request');
    expect(perKey(airline.ledgerPath)).toEqual({ [key]: 1 });
  });

  it('serializes concurrent requests with one key into one booking', async () => {
    const key = newKey();
    const answers = await Promise.all(Array.from({ length: 8 }, () => post(trip, key)));
    const bodies = await Promise.all(answers.map((r) => r.json()));
    expect(answers.map((r) => r.status).sort()).toEqual([200, 200, 200, 200, 200, 200, 200, 201]);
    expect(new Set(bodies.map((b) => JSON.stringify(b))).size).toBe(1);
    expect(perKey(airline.ledgerPath)[key]).toBe(1);
  });
});

describe('demo airline: lookups and restart', () => {
  it('finds a booking by key, and 404s for an unknown key', async () => {
    const key = `with/slash:${newKey()}`;
    const booking = await (await post(trip, key)).json();
    const found = await fetch(`${airline.url}/bookings/by-key/${encodeURIComponent(key)}`);
    expect(found.status).toBe(200);
    expect(await found.json()).toEqual(booking);
    const missing = await fetch(`${airline.url}/bookings/by-key/${newKey()}`);
    expect(missing.status).toBe(404);
  });

  it('remembers its ledger after a restart', async () => {
    const key = newKey();
    const booking = await (await post(trip, key)).json();
    await airline.close();
    airline = await startAirlineService({ dataDir: dir });
    expect(await (await fetch(`${airline.url}/bookings/by-key/${key}`)).json()).toEqual(booking);
    const replay = await post(trip, key);
    expect(replay.status).toBe(200);
    expect(await replay.json()).toEqual(booking);
    expect((await post({ ...trip, passenger: 'Someone Else' }, key)).status).toBe(409);
    expect(perKey(airline.ledgerPath)).toEqual({ [key]: 1 });
  });
});

describe('demo airline: validation', () => {
  const cases: [string, unknown, string][] = [
    ['a lowercase airport', { ...trip, origin: 'cdg' }, 'origin'],
    ['the same origin and destination', { ...trip, destination: 'CDG' }, 'destination: must differ'],
    ['an impossible date', { ...trip, date: '2026-02-30' }, 'date: is not a real calendar date'],
    ['an unknown cabin', { ...trip, cabin: 'cargo' }, 'cabin'],
    ['an empty passenger', { ...trip, passenger: '  ' }, 'passenger: must not be empty'],
    ['an unknown field', { ...trip, seat: '1A' }, 'seat'],
    [
      'a missing field',
      { origin: 'CDG', destination: 'JFK', date: '2026-12-24', cabin: 'first' },
      'passenger',
    ],
  ];
  for (const [what, body, mention] of cases) {
    it(`answers 400 naming the field for ${what}`, async () => {
      const res = await post(body, newKey());
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: string }).error).toContain(mention);
    });
  }

  it('answers 400 without an Idempotency-Key and for a body that is not JSON', async () => {
    const noKey = await post(trip, null);
    expect(noKey.status).toBe(400);
    expect(((await noKey.json()) as { error: string }).error).toContain('Idempotency-Key');
    const notJson = await fetch(`${airline.url}/bookings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': newKey() },
      body: '{"origin":',
    });
    expect(notJson.status).toBe(400);
    expect(readLedger(airline.ledgerPath)).toHaveLength(0);
  });
});

describe('demo airline: bookings at once (group commit)', () => {
  it('writes each of 30 keys once while 11 more requests at once reuse one of the keys', async () => {
    const keys = Array.from({ length: 30 }, newKey);
    const shared = keys[0] as string;
    const other = { ...trip, passenger: 'Grace Hopper' };
    const bodiesSent = [...keys.map(() => trip), ...Array.from({ length: 10 }, () => trip), other];
    const keysSent = [...keys, ...Array.from({ length: 11 }, () => shared)];
    const answers = await Promise.all(bodiesSent.map((body, i) => post(body, keysSent[i] as string)));
    const statuses = answers.map((a) => a.status);
    const bodies = (await Promise.all(answers.map((a) => a.json()))) as Record<string, unknown>[];
    // Every other key books once.
    expect(statuses.slice(1, 30)).toEqual(keys.slice(1).map(() => 201));
    // The shared key: exactly one request books it; the others with the same trip get that booking
    // (200, replayed), those with another trip get 409.
    const sharedAt = keysSent.flatMap((key, i) => (key === shared ? [i] : []));
    const winners = sharedAt.filter((i) => statuses[i] === 201);
    expect(winners).toHaveLength(1);
    const winner = winners[0] as number;
    for (const i of sharedAt) {
      if (i === winner) continue;
      const same = bodiesSent[i] === bodiesSent[winner];
      expect(statuses[i]).toBe(same ? 200 : 409);
      if (same) expect(bodies[i]?.booking_id).toBe(bodies[winner]?.booking_id);
    }
    const counts = perKey(airline.ledgerPath);
    expect(Object.keys(counts).sort()).toEqual([...keys].sort());
    expect(Object.values(counts).every((n) => n === 1)).toBe(true);
    const pnrs = new Set(readLedger(airline.ledgerPath).map((e) => (e.result as { pnr: string }).pnr));
    expect(pnrs.size).toBe(30);
  });

  it('remembers every booking of a burst after a restart', async () => {
    const keys = Array.from({ length: 20 }, newKey);
    const made = await Promise.all(keys.map((key) => post(trip, key)));
    expect(made.every((a) => a.status === 201)).toBe(true);
    await airline.close();
    airline = await startAirlineService({ dataDir: dir, port: 0 });
    const again = await Promise.all(keys.map((key) => post(trip, key)));
    expect(again.map((a) => a.status)).toEqual(keys.map(() => 200));
  });
});

describe('demo airline: its own time per booking', () => {
  const timings = async (since: string | number) => {
    const response = await fetch(`${airline.url}/timings?since=${since}`);
    return { status: response.status, body: (await response.json()) as { bookings?: [number, number][] } };
  };

  it('keeps when each booking request arrived and how long it took, refused ones too', async () => {
    const before = Date.now();
    expect((await post(trip, newKey())).status).toBe(201);
    expect((await post({ ...trip, cabin: 'sofa' }, newKey())).status).toBe(400);
    const after = Date.now();
    const { status, body } = await timings(before);
    expect(status).toBe(200);
    expect(body.bookings).toHaveLength(2);
    for (const [at, ms] of body.bookings ?? []) {
      expect(at).toBeGreaterThanOrEqual(before);
      expect(at).toBeLessThanOrEqual(after);
      expect(ms).toBeGreaterThan(0);
      expect(ms).toBeLessThanOrEqual(after - before + 1);
    }
    // reads are not bookings
    await fetch(`${airline.url}/health`);
    expect((await timings(before)).body.bookings).toHaveLength(2);
    expect((await timings(after + 1)).body.bookings).toEqual([]);
    expect((await timings(0)).body.bookings).toHaveLength(2);
  });

  it('keeps a booking whose caller stopped waiting, with the time until it went', async () => {
    const slowDir = mkdtempSync(join(tmpdir(), 'airline-slow-'));
    const slow = await startAirlineService({ dataDir: slowDir, port: 0, responseDelayMs: 3_000 });
    try {
      const before = Date.now();
      await expect(
        fetch(`${slow.url}/bookings`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'idempotency-key': newKey() },
          body: JSON.stringify(trip),
          signal: AbortSignal.timeout(100),
        }),
      ).rejects.toThrow();
      let bookings: [number, number][] = [];
      for (let waited = 0; waited < 2_500 && bookings.length === 0; waited += 50) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        const response = await fetch(`${slow.url}/timings?since=${before}`);
        bookings = ((await response.json()) as { bookings: [number, number][] }).bookings;
      }
      expect(bookings).toHaveLength(1);
      // it went when the caller did (at 100 ms), long before the answer was due (3 s: a margin for a loaded
      // machine; the loop above gives up at 2.5 s, so a booking timed at the answer would not be seen at all).
      // The request reaches the airline some ms after `before` (more on a loaded machine), so the time it
      // kept is checked as the moment it ended: when the caller gave up (times in whole ms, timers ±1 ms).
      const [at = 0, ms = 0] = bookings[0] ?? [];
      expect(at + ms).toBeGreaterThanOrEqual(before + 100 - 2);
      expect(at + ms).toBeLessThan(before + 3_000);
      expect(ms).toBeLessThan(3_000);
    } finally {
      await slow.close();
      rmSync(slowDir, { recursive: true, force: true });
    }
  });

  it('refuses a since that is not a time in ms', async () => {
    for (const bad of ['soon', '-5', '1.5', '1e3', '99999999999999999']) {
      const { status, body } = await timings(bad);
      expect(status, bad).toBe(400);
      expect(JSON.stringify(body)).toContain('since');
    }
  });
});
