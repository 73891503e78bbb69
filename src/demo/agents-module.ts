/**
 * The built-in agents with the demo tools, as an agents module (src/server/agents-modules.ts): the deploy
 * steps, working in `<dataDir>/workspace`, and `airline.book`, booking with the demo airline at
 * `airlineUrl`. `agentstate serve` and `chat` start that airline and give its URL in the options.
 */
import { resolve } from 'node:path';
import { BUILTIN_AGENTS } from '../agents/index.js';
import { invalidRequest } from '../core/errors.js';
import type { JsonValue } from '../core/json.js';
import type { ToolRegistry } from '../runtime/tool.js';
import { createDemoTools } from './tools.js';

/** This module, for an agents module ref. */
export const DEMO_AGENTS_MODULE = import.meta.url;

export const agents = [...BUILTIN_AGENTS];

/** `dataDir` (required): where the deploy tools work; `airlineUrl`: the demo airline, without which there is no `airline.book`. */
export function tools(options: Readonly<Record<string, JsonValue>>): ToolRegistry {
  const { dataDir, airlineUrl } = options;
  if (typeof dataDir !== 'string' || dataDir === '') {
    throw invalidRequest('the demo tools need a dataDir option: the directory they work in');
  }
  if (airlineUrl !== undefined && typeof airlineUrl !== 'string') {
    throw invalidRequest('the demo tools: airlineUrl must be a URL');
  }
  return createDemoTools({
    workspaceDir: resolve(dataDir, 'workspace'),
    ...(airlineUrl === undefined ? {} : { airlineUrl }),
  });
}
