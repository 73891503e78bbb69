/** Recovery of a SIGKILLed server's run with no client request (recovery-kill.ts), on a SQLite file. */
import { join } from 'node:path';
import { describeRecoveryKill } from './recovery-kill.js';

describeRecoveryKill([{ label: 'SQLite', url: (dir) => `sqlite:${join(dir, 'recovery.db')}` }]);
