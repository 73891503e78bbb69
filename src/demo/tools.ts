/** The registry of every demo tool: the five deploy steps, and `airline.book` when an airline URL is given. */
import { createToolRegistry, defineTool, type Tool, type ToolRegistry } from '../runtime/tool.js';
import { createAirlineBookTool } from './airline/tool.js';
import { createDeployTools } from './deploy/index.js';
import type { DemoHooks } from './deploy/workspace.js';

export interface DemoToolsOptions {
  /** The directory the deploy tools work in (plan, sources, build, releases, their ledger). */
  readonly workspaceDir: string;
  /** The demo airline's base URL; without it there is no `airline.book`. */
  readonly airlineUrl?: string;
  /** Time-out of each airline call in ms. Default 5000. */
  readonly airlineTimeoutMs?: number;
  /** Fault injection points inside every tool call (the crash harness uses them). */
  readonly hooks?: DemoHooks;
}

export function createDemoTools(options: DemoToolsOptions): ToolRegistry {
  const hooks = options.hooks ?? {};
  const tools: Tool[] = createDeployTools(options.workspaceDir, hooks);
  if (options.airlineUrl !== undefined) {
    const airline = { baseUrl: options.airlineUrl, timeoutMs: options.airlineTimeoutMs ?? 5_000 };
    tools.push(defineTool(createAirlineBookTool(airline, hooks)));
  }
  return createToolRegistry(tools);
}
