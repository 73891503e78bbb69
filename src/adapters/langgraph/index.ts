export { AgentStateSaver, type AgentStateSaverOptions } from './saver.js';
