/**
 * The conformance suite against the tiered store: Redis under a random key prefix and PostgreSQL in a
 * random schema, both removed afterwards. The url lets the multi-process tests' children open the same data.
 */
import { openTieredStore } from '../../src/store/tiered/index.js';
import { describeStoreConformance } from '../../src/testing/index.js';
import { tieredEnv } from './tiered-env.js';

const env = tieredEnv();

describeStoreConformance('tiered', {
  open: (clock) => openTieredStore(env.url, { clock }),
  url: env.url,
  cleanup: () => env.cleanup(),
});
