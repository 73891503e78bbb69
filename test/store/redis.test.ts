/** The conformance suite against the Redis store, under a random key prefix removed afterwards. */
import { openRedisStore } from '../../src/store/redis/index.js';
import { describeStoreConformance } from '../../src/testing/index.js';
import { REDIS_URL, randomPrefix, removePrefix, urlWithPrefix } from './redis-env.js';

const prefix = randomPrefix();

describeStoreConformance('redis', {
  open: (clock) => openRedisStore(REDIS_URL, { clock, prefix }),
  url: urlWithPrefix(prefix),
  cleanup: () => removePrefix(prefix),
});
