/**
 * Recovery of a SIGKILLed server's run with no client request (recovery-kill.ts), on the tiered store
 * (Redis in front of PostgreSQL) when AGENTSTATE_TEST_REDIS_URL and AGENTSTATE_TEST_POSTGRES_URL are set:
 * a key prefix and a schema of this file's own, removed afterwards.
 */
import { describe, it } from 'vitest';
import { tieredEnv } from '../store/tiered-env.js';
import { describeRecoveryKill } from './recovery-kill.js';

if (process.env.AGENTSTATE_TEST_REDIS_URL && process.env.AGENTSTATE_TEST_POSTGRES_URL) {
  const env = tieredEnv();
  describeRecoveryKill([{ label: 'tiered', url: () => env.url, cleanup: () => env.cleanup() }]);
} else {
  describe('a run whose server is killed, on the tiered store', () => {
    it.skip('needs AGENTSTATE_TEST_REDIS_URL and AGENTSTATE_TEST_POSTGRES_URL', () => {});
  });
}
