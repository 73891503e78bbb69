/**
 * The conformance suite against the PostgreSQL store, in fresh random schemas dropped at the end: once as
 * users get it (with the driver's fast paths), once through the store core's generic path alone.
 */
import { openPostgresStore } from '../../src/store/postgres/index.js';
import { describeStoreConformance } from '../../src/testing/index.js';
import { dropSchema, randomSchema, schemaUrl } from './postgres-env.js';

for (const fastPaths of [true, false]) {
  const schema = randomSchema();
  const url = schemaUrl(schema);
  describeStoreConformance(fastPaths ? 'postgres' : 'postgres (generic path)', {
    // A small pool per store: the suite opens one store per test, and other test files share the server.
    open: (clock) => openPostgresStore({ url, clock, max: 4, fastPaths }),
    url,
    cleanup: () => dropSchema(schema),
  });
}
