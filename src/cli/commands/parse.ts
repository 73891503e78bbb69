/** Option parsers that refuse bad values with one sentence. */
import { InvalidArgumentError } from 'commander';

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

export function parseJsonOption(value: string): unknown {
  try {
    return JSON.parse(value);
  } catch {
    throw new InvalidArgumentError('must be JSON, for example \'{"booking":"ABC123"}\'.');
  }
}
