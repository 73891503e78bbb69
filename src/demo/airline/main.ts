/**
 * The demo airline as its own process, so killing an agent process never kills the airline:
 *   node --import tsx src/demo/airline/main.ts --port 0 --data ./airline-data [--delay-ms 0]
 * Prints one JSON line `{"event":"listening","url":...}` on stdout once it accepts requests.
 */
import { parseArgs } from 'node:util';
import { startAirlineService } from './server.js';

function intOption(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0) {
    console.error(`--${name} must be a non-negative integer, got ${JSON.stringify(raw)}`);
    process.exit(2);
  }
  return value;
}

const { values } = parseArgs({
  options: {
    port: { type: 'string' },
    data: { type: 'string' },
    'delay-ms': { type: 'string' },
  },
});

if (values.data === undefined || values.data === '') {
  console.error('usage: airline --data DIR [--port P] [--delay-ms N]');
  process.exit(2);
}

const service = await startAirlineService({
  dataDir: values.data,
  port: intOption('port', values.port, 0),
  responseDelayMs: intOption('delay-ms', values['delay-ms'], 0),
});
process.stdout.write(
  `${JSON.stringify({ event: 'listening', url: service.url, ledger: service.ledgerPath })}\n`,
);

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    void service.close().then(() => process.exit(0));
  });
}
