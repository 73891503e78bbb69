/**
 * `agentstate/testing` as a user imports it: the built package, by its name, resolved through the `exports`
 * of package.json (a package may import itself by its own name), and its conformance suite run here against
 * a store over a driver this file defines. That driver is what another team could write: a `StoreDriver`
 * named 'forwarding' that keeps its rows in the memory driver of the built `agentstate` and counts the
 * transactions it runs; `createStateStore` of the built package puts the store core over it.
 *
 * The names are imported from variables: type checking runs before the build, so the types come from the
 * source, while the tests run the built files. The suite's `describe` and `it` must register in this file's
 * run; a hook of this file counts the tests they add.
 */
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import type * as Library from '../../src/index.js';
import type { DriverReads, DriverTx, StoreDriver } from '../../src/index.js';
import type * as Testing from '../../src/testing/index.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const BUILT = {
  agentstate: join(ROOT, 'dist/src/index.js'),
  'agentstate/testing': join(ROOT, 'dist/src/testing/index.js'),
};
for (const file of Object.values(BUILT))
  if (!existsSync(file)) throw new Error(`${file} is missing: run npm run build (npm test does)`);

const LIBRARY: string = 'agentstate';
const TESTING: string = 'agentstate/testing';
const { createMemoryDriver, createStateStore } = (await import(LIBRARY)) as typeof Library;
const { describeStoreConformance } = (await import(TESTING)) as typeof Testing;

/** A driver written outside the package: its own name, its rows in another driver, its transactions counted. */
class ForwardingDriver implements StoreDriver {
  readonly name = 'forwarding';
  /** Transactions whose work ran (a retried one counts each time). */
  transactions = 0;

  constructor(private readonly rows: StoreDriver) {}

  get capabilities(): StoreDriver['capabilities'] {
    return this.rows.capabilities;
  }

  transaction<T>(work: (tx: DriverTx) => Promise<T>, options?: { readonly single?: boolean }): Promise<T> {
    return this.rows.transaction((tx) => {
      this.transactions++;
      return work(tx);
    }, options);
  }
  read<T>(work: (tx: DriverReads) => Promise<T>): Promise<T> {
    return this.rows.read(work);
  }
  cursorKey(): Promise<Buffer> {
    return this.rows.cursorKey();
  }

  readonly sweepExpired: StoreDriver['sweepExpired'] = (...a) => this.rows.sweepExpired(...a);
  readonly sessionStats: StoreDriver['sessionStats'] = (...a) => this.rows.sessionStats(...a);
  readonly actionStats: StoreDriver['actionStats'] = () => this.rows.actionStats();
  readonly sweepRetention: StoreDriver['sweepRetention'] = (...a) => this.rows.sweepRetention(...a);

  ping(): Promise<boolean> {
    return this.rows.ping();
  }
  close(): Promise<void> {
    return this.rows.close();
  }
}

const drivers: ForwardingDriver[] = [];
let ran = 0;
beforeEach(() => {
  ran++;
});
afterAll(() => {
  // Well over a hundred tests of the suite ran in this file, each on a store it opened through the harness,
  // and the core wrote through this file's driver.
  expect(ran).toBeGreaterThan(100);
  expect(drivers.length).toBeGreaterThanOrEqual(ran - 1);
  expect(drivers.reduce((sum, driver) => sum + driver.transactions, 0)).toBeGreaterThan(ran);
});

describe('agentstate/testing, built', () => {
  it('resolves both names to the built files through the package exports', () => {
    for (const [name, file] of Object.entries(BUILT))
      expect(import.meta.resolve(name)).toBe(pathToFileURL(file).href);
  });
});

describeStoreConformance('a driver defined outside the package', {
  open: async (clock) => {
    const driver = new ForwardingDriver(createMemoryDriver());
    drivers.push(driver);
    return createStateStore(driver, { clock });
  },
});
