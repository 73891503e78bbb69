export {
  CONTEXT_NAMESPACES,
  FACTS,
  isReservedNamespace,
  PREFERENCES,
  RESERVED_PREFIX,
} from './namespaces.js';
export {
  DEFAULT_OUTCOME_RULES,
  type OutcomeRules,
  type ProposeOptions,
  preferenceKey,
  proposalsAsSlots,
  proposedSlots,
  type RememberedSlot,
  type RememberOptions,
  rememberTaskOutcome,
  type SlotProposal,
} from './outcomes.js';
export {
  type AllOptions,
  type ListOptions,
  type MemoryNamespace,
  type PutOptions,
  type UserMemory,
  type UserMemoryOptions,
  userMemory,
} from './user-memory.js';
