/** Option parsers that refuse bad values with one sentence. */
import { InvalidArgumentError } from 'commander';
import { CliError } from '../context.js';

export function parseLimit(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < 1 || n > 500)
    throw new InvalidArgumentError('must be a whole number from 1 to 500.');
  return n;
}

export function parsePort(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n > 65535)
    throw new InvalidArgumentError('must be a port number from 0 to 65535.');
  return n;
}

/** A port from an environment variable (AGENTSTATE_PORT), checked as `--port` is; `fallback` when unset. */
export function portFromEnv(value: string | undefined, fallback: number, name = 'AGENTSTATE_PORT'): number {
  if (value === undefined || value === '') return fallback;
  try {
    return parsePort(value.trim());
  } catch {
    throw new CliError(`${name} must be a port number from 0 to 65535, got ${JSON.stringify(value)}`);
  }
}

export function parseJsonOption(value: string): unknown {
  try {
    return JSON.parse(value);
  } catch {
    throw new InvalidArgumentError('must be JSON, for example \'{"booking":"ABC123"}\'.');
  }
}
