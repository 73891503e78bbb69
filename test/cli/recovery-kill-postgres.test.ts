/**
 * Recovery of a SIGKILLed server's run with no client request (recovery-kill.ts), on PostgreSQL when
 * AGENTSTATE_TEST_POSTGRES_URL is set: a schema of this file's own, dropped afterwards.
 */
import { describe, it } from 'vitest';
import { dropSchema, randomSchema, schemaUrl } from '../store/postgres-env.js';
import { describeRecoveryKill } from './recovery-kill.js';

const base = process.env.AGENTSTATE_TEST_POSTGRES_URL;
if (base !== undefined && base !== '') {
  const schema = randomSchema();
  describeRecoveryKill([
    { label: 'PostgreSQL', url: () => schemaUrl(schema, base), cleanup: () => dropSchema(schema) },
  ]);
} else {
  describe('a run whose server is killed, on PostgreSQL', () => {
    it.skip('needs AGENTSTATE_TEST_POSTGRES_URL', () => {});
  });
}
