import { createMemoryStore } from '../../src/store/memory/index.js';
import { describeStoreConformance } from '../conformance/index.js';

describeStoreConformance('memory', {
  open: async (clock) => createMemoryStore({ clock }),
});
