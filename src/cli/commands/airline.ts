/**
 * `agentstate airline`: the demo airline on its own, for several `serve` instances to share
 * (AGENTSTATE_AIRLINE_URL). A booking's idempotency key is only known to the airline that made it, so
 * instances that continue each other's sessions must book with one airline, or a resumed run on another
 * instance would book again.
 */
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { startAirlineService } from '../../demo/index.js';
import { print } from '../format.js';
import { parsePort } from './parse.js';

interface AirlineOptions {
  readonly port: number;
  readonly dataDir: string;
}

export function registerAirlineCommands(program: Command): void {
  program
    .command('airline')
    .description('run the demo airline that serve instances share (set AGENTSTATE_AIRLINE_URL to its URL)')
    .option('--port <port>', 'port on 127.0.0.1; 0 picks a free one', parsePort, 4100)
    .option('--data-dir <dir>', 'where its ledger of bookings lives', '.agentstate/airline')
    .action(async (options: AirlineOptions) => {
      const service = await startAirlineService({ dataDir: resolve(options.dataDir), port: options.port });
      print(`demo airline serving ${service.url} (ledger ${service.ledgerPath})`);
      print(`  share it: AGENTSTATE_AIRLINE_URL=${service.url} agentstate serve ...`);
      await new Promise<void>((done) => {
        for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => done());
      });
      await service.close();
    });
}
