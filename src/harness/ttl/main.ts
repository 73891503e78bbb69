/**
 * Runs the expiry harness from a shell, until the CLI wires `agentstate ttltest`:
 *   node --import tsx src/harness/ttl/main.ts --store URL [--sessions N] [--ttl S] [--wait S]
 *     [--messages N] [--sweep-interval MS] [--report PATH]
 */
import { parseArgs } from 'node:util';
import { runTtlTest } from './run.js';

const { values } = parseArgs({
  options: {
    store: { type: 'string' },
    sessions: { type: 'string', default: '1000' },
    ttl: { type: 'string', default: '60' },
    wait: { type: 'string', default: '120' },
    messages: { type: 'string', default: '4' },
    'sweep-interval': { type: 'string', default: '30000' },
    report: { type: 'string' },
  },
});
if (values.store === undefined) throw new Error('--store URL is required');
const report = await runTtlTest({
  storeUrl: values.store,
  sessions: Number(values.sessions),
  ttlSeconds: Number(values.ttl),
  waitSeconds: Number(values.wait),
  messagesPerSession: Number(values.messages),
  sweepIntervalMs: Number(values['sweep-interval']),
  ...(values.report === undefined ? {} : { reportPath: values.report }),
  onProgress: (p) => {
    const stored = p.stored === undefined ? '' : `, ${p.stored} stored`;
    process.stderr.write(`\r${p.phase} ${p.done}/${p.total}${stored}        `);
    if (p.phase === 'done') process.stderr.write('\n');
  },
});
const { samples: _samples, ...figures } = report;
process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
