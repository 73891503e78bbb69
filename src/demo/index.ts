/** The demo downstream services the built-in agents call, and their tools. */
export { type Booking, type BookingRequest, BookingRequestSchema, CABINS } from './airline/booking.js';
export { type AirlineClient, type AirlineClientOptions, createAirlineClient } from './airline/client.js';
export { type AirlineService, type AirlineServiceOptions, startAirlineService } from './airline/server.js';
export { createAirlineBookTool } from './airline/tool.js';
export { createDeployTools, DEPLOY_STEPS, type DemoHooks, type ToolPoint } from './deploy/index.js';
export {
  type EffectLine,
  type EffectTally,
  effectsPerStep,
  readEffectLog,
  type StepTally,
  tallyEffectLog,
  tallyEffects,
} from './effects.js';
export { appendLedger, fingerprintOf, type LedgerEntry, readLedger } from './ledger.js';
export { createDemoTools, type DemoToolsOptions } from './tools.js';
