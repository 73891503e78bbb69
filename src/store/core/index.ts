/** The store core's public surface: the StateStore over a driver, and the driver contract. */
export { Checks } from './checks.js';
export { CoreStore, createStateStore, MAX_SWEEP_LIMIT } from './create-store.js';
export type {
  ActionFilter,
  DriverFastPaths,
  DriverMaintenance,
  DriverReads,
  DriverTx,
  DriverWrites,
  HeadReads,
  LeaseRow,
  Listed,
  ListPosition,
  MemoryFilter,
  PageRequest,
  RequestKeyRow,
  SessionFilter,
  StoreDriver,
  TaskFilter,
} from './driver.js';
