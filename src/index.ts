export * from './core/clock.js';
export * from './core/errors.js';
export * from './core/ids.js';
export * from './core/json.js';
export * from './core/model.js';
export { DEFAULT_STORE_URL, type OpenStoreOptions, openStore } from './store/open.js';
export * from './store/types.js';
