/**
 * Recovery of a SIGKILLed server's run with no client request (recovery-kill.ts), on Redis when
 * AGENTSTATE_TEST_REDIS_URL is set: a key prefix of this file's own, its keys removed afterwards.
 */
import { describe, it } from 'vitest';
import { randomPrefix, removePrefix, urlWithPrefix } from '../store/redis-env.js';
import { describeRecoveryKill } from './recovery-kill.js';

if (process.env.AGENTSTATE_TEST_REDIS_URL) {
  const prefix = randomPrefix();
  describeRecoveryKill([
    { label: 'Redis', url: () => urlWithPrefix(prefix), cleanup: () => removePrefix(prefix) },
  ]);
} else {
  describe('a run whose server is killed, on Redis', () => {
    it.skip('needs AGENTSTATE_TEST_REDIS_URL', () => {});
  });
}
