/**
 * Every kind of value that is not plain JSON, with where inside it the guard must point and the exact
 * reason it must give (SPEC 2: refused at the write, naming its JSON path).
 */
import type { Segment } from './json-arbitraries.js';

export interface NonJsonCase {
  readonly name: string;
  /** Builds the bad value. `root` is the whole tree it will sit in, for cycles that point back to it. */
  readonly make: () => unknown;
  /** Called once the tree is built, so a cycle can point back to the root. */
  readonly link?: (bad: unknown, root: unknown) => void;
  /** The path from the planted value to the offending part (empty when the value itself is refused). */
  readonly inside: readonly Segment[];
  readonly reason: string;
}

class Booking {
  constructor(readonly date = '2026-03-01') {}
}

function sparse(): unknown[] {
  const holes: unknown[] = ['a'];
  holes[2] = 'c';
  return holes;
}

function selfCycle(): unknown {
  const node: { items: unknown[] } = { items: [1] };
  node.items.push(node);
  return node;
}

export const NON_JSON_CASES: readonly NonJsonCase[] = [
  {
    name: 'function',
    make: () => () => 1,
    inside: [],
    reason: 'a function is not plain JSON; register runtime objects by name instead',
  },
  {
    name: 'class instance',
    make: () => new Booking(),
    inside: [],
    reason: 'Booking instance is not plain JSON; store its data as a plain object',
  },
  {
    name: 'Date',
    make: () => new Date('2026-03-01T10:00:00Z'),
    inside: [],
    reason: 'Date instance is not plain JSON; store an ISO-8601 string',
  },
  {
    name: 'Map',
    make: () => new Map([['a', 1]]),
    inside: [],
    reason: 'Map is not plain JSON; store an object or an array of pairs',
  },
  { name: 'Set', make: () => new Set([1]), inside: [], reason: 'Set is not plain JSON; store an array' },
  { name: 'BigInt', make: () => 10n, inside: [], reason: 'BigInt is not plain JSON; store it as a string' },
  { name: 'NaN', make: () => Number.NaN, inside: [], reason: 'NaN is not plain JSON' },
  {
    name: 'Infinity',
    make: () => Number.POSITIVE_INFINITY,
    inside: [],
    reason: 'Infinity is not plain JSON; numbers must be finite',
  },
  {
    name: '-Infinity',
    make: () => Number.NEGATIVE_INFINITY,
    inside: [],
    reason: '-Infinity is not plain JSON; numbers must be finite',
  },
  { name: '-0', make: () => -0, inside: [], reason: '-0 is not representable in JSON; use 0' },
  {
    name: 'undefined value',
    make: () => undefined,
    inside: [],
    reason: 'undefined is not plain JSON; omit the key or store null',
  },
  {
    name: 'undefined in an array',
    make: () => [1, undefined],
    inside: [{ index: 1 }],
    reason: 'undefined is not plain JSON; omit the key or store null',
  },
  {
    name: 'undefined as a property value',
    make: () => ({ ok: 1, when: undefined }),
    inside: [{ key: 'when' }],
    reason: 'undefined is not plain JSON; omit the key or store null',
  },
  {
    name: 'sparse array',
    make: sparse,
    inside: [{ index: 1 }],
    reason: 'hole in a sparse array is not plain JSON',
  },
  { name: 'symbol', make: () => Symbol('s'), inside: [], reason: 'a symbol is not plain JSON' },
  {
    name: 'symbol key',
    make: () => ({ a: 1, [Symbol('k')]: 2 }),
    inside: [],
    reason: 'symbol keys are not plain JSON',
  },
  {
    name: 'lone high surrogate in a string',
    make: () => `ok \ud83d`,
    inside: [],
    reason: 'string holds a lone UTF-16 surrogate, which is not valid text',
  },
  {
    name: 'lone low surrogate in a string',
    make: () => '\ude00 x',
    inside: [],
    reason: 'string holds a lone UTF-16 surrogate, which is not valid text',
  },
  {
    name: 'lone surrogate in a key',
    make: () => ({ 'k\ud800': 1 }),
    inside: [{ key: 'k\ud800' }],
    reason: 'key holds a lone UTF-16 surrogate',
  },
  {
    name: 'cycle through itself',
    make: selfCycle,
    inside: [{ key: 'items' }, { index: 1 }],
    reason: 'cycle: this value contains itself',
  },
  {
    name: 'cycle back to the root',
    make: () => ({ up: null }),
    link: (bad, root) => {
      (bad as { up: unknown }).up = root;
    },
    inside: [{ key: 'up' }],
    reason: 'cycle: this value contains itself',
  },
  {
    name: 'Uint8Array',
    make: () => new Uint8Array([1, 2]),
    inside: [],
    reason: 'binary data is not plain JSON; store it base64-encoded as a string',
  },
  {
    name: 'Array subclass',
    make: () => {
      class Row extends Array<number> {}
      return Row.from([1]);
    },
    inside: [],
    reason: 'Row instance is not plain JSON; store its data as a plain object',
  },
];
