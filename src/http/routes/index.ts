/** Every route group of the API. A new group is one file with a `xRoutes(app, deps)` function, listed here. */
import type { RouteDeps, ZodApp } from '../deps.js';
import { actionRoutes } from './actions.js';
import { branchRoutes } from './branches.js';
import { contextRoutes } from './context.js';
import { healthRoutes } from './health.js';
import { memoryRoutes } from './memory.js';
import { messageRoutes } from './messages.js';
import { runRoutes } from './runs.js';
import { sessionEventRoutes } from './session-events.js';
import { sessionRoutes } from './sessions.js';
import { taskRoutes } from './tasks.js';
import { tokenRoutes } from './tokens.js';
import { turnRoutes } from './turns.js';

const GROUPS = [
  healthRoutes,
  tokenRoutes,
  sessionRoutes,
  branchRoutes,
  messageRoutes,
  turnRoutes,
  runRoutes,
  sessionEventRoutes,
  contextRoutes,
  taskRoutes,
  actionRoutes,
  memoryRoutes,
];

export function registerRoutes(app: ZodApp, deps: RouteDeps): void {
  for (const group of GROUPS) group(app, deps);
}
