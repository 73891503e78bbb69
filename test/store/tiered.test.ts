/**
 * The conformance suite against the tiered store: Redis under a random key prefix and PostgreSQL in a
 * random schema, both removed afterwards. The url lets the multi-process tests' children open the same data.
 */
import { openTieredStore } from '../../src/store/tiered/index.js';
import { describeStoreConformance } from '../conformance/index.js';
import { dropSchema, randomSchema, schemaUrl } from './postgres-env.js';
import { REDIS_URL, randomPrefix, removePrefix } from './redis-env.js';

const prefix = randomPrefix();
const schema = randomSchema();
const url = `${REDIS_URL}/?prefix=${prefix}&durable=${encodeURIComponent(schemaUrl(schema))}`;

describeStoreConformance('tiered', {
  open: (clock) => openTieredStore(url, { clock }),
  url,
  cleanup: async () => {
    await removePrefix(prefix);
    await dropSchema(schema);
  },
});
