/**
 * `agentstate/testing`: the StateStore conformance suite, for a store or driver written outside this package.
 * In a vitest test file:
 *
 *   import { describeStoreConformance } from 'agentstate/testing';
 *   describeStoreConformance('mystore', { open: (clock) => openMyStore({ clock }), cleanup });
 *
 * The suite registers its tests with vitest's `describe` and `it`, so vitest must be installed (it is an
 * optional peer dependency). The main export `agentstate` does not load this module.
 */
export { describeStoreConformance, type StoreHarness } from './conformance/index.js';
