/** The conformance suite against the PostgreSQL store, in a fresh random schema dropped at the end. */
import { openPostgresStore } from '../../src/store/postgres/index.js';
import { describeStoreConformance } from '../conformance/index.js';
import { dropSchema, randomSchema, schemaUrl } from './postgres-env.js';

const schema = randomSchema();
const url = schemaUrl(schema);

describeStoreConformance('postgres', {
  open: (clock) => openPostgresStore({ url, clock }),
  url,
  cleanup: () => dropSchema(schema),
});
