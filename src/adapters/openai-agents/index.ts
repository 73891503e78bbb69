export { AgentStateSession, type AgentStateSessionOptions } from './session.js';
