/** The conformance suite against the PostgreSQL store, in a fresh random schema dropped at the end. */
import { openPostgresStore } from '../../src/store/postgres/index.js';
import { describeStoreConformance } from '../../src/testing/index.js';
import { dropSchema, randomSchema, schemaUrl } from './postgres-env.js';

const schema = randomSchema();
const url = schemaUrl(schema);

describeStoreConformance('postgres', {
  // A small pool per store: the suite opens one store per test, and other test files share the server.
  open: (clock) => openPostgresStore({ url, clock, max: 4 }),
  url,
  cleanup: () => dropSchema(schema),
});
