/**
 * How checkpoint channels are stored so that storage grows with what changed, not with the whole state.
 *
 * Each channel value is a blob addressed by a content hash, stored once per run (insert-or-ignore).
 * An array channel that extends the array of the previous checkpoint (the common case: a message list)
 * is stored as an append blob, holding only the new elements and the hash of its base. Its hash is a
 * chain hash over its elements, so it names the same content whether stored whole or as an append.
 * Chains are capped at MAX_CHAIN_DEPTH appends; the next write stores the array whole again.
 */
import { createHash } from 'node:crypto';
import type { JsonObject, JsonValue } from '../../core/json.js';
import { RecentMap } from '../../core/recent-map.js';

export const MAX_CHAIN_DEPTH = 16;

/**
 * Where a walk down a chain stops: far past the longest chain a store writes, so only damaged rows (a blob
 * whose bases lead back to itself) meet it, and their read fails instead of walking on forever.
 */
export const MAX_CHAIN_LINKS = 4 * MAX_CHAIN_DEPTH;

/** A chain of blobs that does not end in a whole value within MAX_CHAIN_LINKS links. */
export class DamagedChainError extends Error {
  constructor(readonly hash: string) {
    super(`checkpoint blob ${hash}: its chain does not end within ${MAX_CHAIN_LINKS} links`);
  }
}

/** Where a channel's value of one checkpoint lives. `n` (array length) is set for arrays only. */
export interface ChannelRef {
  readonly h: string;
  readonly n?: number;
  /** Appends between this blob and a whole value: 0 when stored whole. */
  readonly d: number;
}

export type Manifest = Record<string, ChannelRef>;

/** One stored blob: a whole value (`base` null) or the JSON array of elements appended to `base`. */
export interface BlobRow {
  readonly hash: string;
  readonly base: string | null;
  readonly data: string;
}

const EMPTY_CHAIN = 'a:';

/** Sets an own property, also for the key `__proto__` (plain assignment would change the prototype). */
function setOwn<T>(target: Record<string, T>, key: string, value: T): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

function digest(text: string): string {
  return createHash('sha256').update(text).digest('base64url').slice(0, 27);
}

function chainStep(previous: string, elementJson: string): string {
  return `a${digest(`${previous}\n${elementJson}`)}`;
}

/**
 * What hashing an array channel learned, kept between puts of one run by the caller (optional): the JSON
 * text of each element and the chain hash after each one. A chain hash is a pure function of the element
 * texts, so a memo can never be stale: it only spares re-hashing the prefix that the next value shares.
 */
export interface ChainMemo {
  elements: string[];
  /** chains[i]: the chain hash of the first i elements (chains[0] is the empty chain). */
  chains: string[];
  /** The array's JSON text, `[` + elements joined by `,` + `]`, when kept. */
  text?: string;
}

/** An array channel longer than this (in JSON characters) is not memoized: memory stays bounded. */
const MEMO_MAX_CHARS = 256 * 1024;

/** Per-channel memos of one run; `encodeChannels` reads and replaces them. */
export type RunMemo = Map<string, ChainMemo>;

/** The chain hashes of `elementJson`, reusing the longest prefix it shares with `memo`. */
function chainsOf(elementJson: string[], memo: ChainMemo | undefined): string[] {
  const chains = [EMPTY_CHAIN];
  let i = 0;
  if (memo !== undefined) {
    const shared = Math.min(memo.elements.length, elementJson.length);
    while (i < shared && memo.elements[i] === elementJson[i]) {
      i++;
      chains.push(memo.chains[i] as string);
    }
  }
  for (; i < elementJson.length; i++) chains.push(chainStep(chains[i] as string, elementJson[i] as string));
  return chains;
}

/**
 * The JSON text of each element of `value`, and of the whole array. With a memo that kept its text, the
 * array is written once and compared with it: when the memo's elements begin the text (a JSON value ends
 * where its text ends, so a shared text is shared elements), only the elements after them are written
 * one by one. Otherwise every element is written on its own.
 */
function elementsOf(
  value: JsonValue[],
  memo: ChainMemo | undefined,
): { elementJson: string[]; text: string } {
  const kept = memo?.text;
  if (memo !== undefined && kept !== undefined && memo.elements.length > 0) {
    const text = JSON.stringify(value);
    const shared = kept.length - 1; // the memo's text without its closing bracket
    const next = text.charCodeAt(shared);
    // (Equality of the two prefixes, not startsWith: that walks a sliced string many times slower.)
    if ((next === COMMA || next === CLOSE) && text.slice(0, shared) === kept.slice(0, shared)) {
      const elementJson = memo.elements.slice();
      let length = shared;
      for (let i = elementJson.length; i < value.length; i++) {
        const element = JSON.stringify(value[i]);
        elementJson.push(element);
        length += element.length + 1;
      }
      // The elements written one by one make up the rest of the text (a check against a value that
      // changed between the two writes: then every element is written again).
      if (length + 1 === text.length && elementJson.length === value.length) return { elementJson, text };
    }
  }
  const elementJson = value.map((element) => JSON.stringify(element));
  return { elementJson, text: `[${elementJson.join(',')}]` };
}

const COMMA = 44;
const CLOSE = 93;

/**
 * Encodes the channels of a new checkpoint against the manifest of the previous one of the same run.
 * `memo` (the run's, from earlier calls) spares re-hashing array prefixes already hashed.
 */
export function encodeChannels(
  channels: JsonObject,
  previous: Manifest | null,
  memo?: RunMemo,
): { manifest: Manifest; blobs: BlobRow[] } {
  const manifest: Manifest = {};
  const blobs: BlobRow[] = [];
  for (const [name, value] of Object.entries(channels)) {
    if (!Array.isArray(value)) {
      const data = JSON.stringify(value);
      const hash = `v${digest(data)}`;
      setOwn(manifest, name, { h: hash, d: 0 });
      const prior = previous !== null && Object.hasOwn(previous, name) ? previous[name] : undefined;
      if (prior?.h !== hash) blobs.push({ hash, base: null, data });
      memo?.delete(name);
      continue;
    }
    const before = previous !== null && Object.hasOwn(previous, name) ? previous[name] : undefined;
    const known = memo?.get(name);
    const { elementJson, text } = elementsOf(value, known);
    const chains = chainsOf(elementJson, known);
    if (memo !== undefined) {
      if (text.length <= MEMO_MAX_CHARS) memo.set(name, { elements: elementJson, chains, text });
      else memo.delete(name);
    }
    const n = elementJson.length;
    const chain = chains[n] as string;
    const baseLength = before?.n ?? -1;
    const prefixMatches = baseLength >= 0 && baseLength <= n && chains[baseLength] === before?.h;
    if (before !== undefined && chain === before.h) {
      setOwn<ChannelRef>(manifest, name, { h: chain, n, d: before.d });
    } else if (before !== undefined && prefixMatches && baseLength > 0 && before.d < MAX_CHAIN_DEPTH) {
      setOwn<ChannelRef>(manifest, name, { h: chain, n, d: before.d + 1 });
      blobs.push({ hash: chain, base: before.h, data: `[${elementJson.slice(baseLength).join(',')}]` });
    } else {
      setOwn<ChannelRef>(manifest, name, { h: chain, n, d: 0 });
      blobs.push({ hash: chain, base: null, data: text });
    }
  }
  if (memo !== undefined)
    for (const name of memo.keys()) if (!Object.hasOwn(channels, name)) memo.delete(name);
  return { manifest, blobs };
}

/** Every blob hash a manifest needs, given the blobs already known (to walk append chains). */
export function manifestHashes(manifest: Manifest): string[] {
  return Object.values(manifest).map((ref) => ref.h);
}

/** A blob a manifest needs was not found: removed (by a prune) between reading a row and its blobs. */
export class MissingBlobError extends Error {
  constructor(readonly hash: string) {
    super(`checkpoint blob ${hash} is missing`);
  }
}

/**
 * Rebuilds channel values. `blobs` must hold every blob of the manifests' chains (see `missingBases`).
 * A cache shared across calls of one read lets a history list parse each blob once; values built from
 * it may share unchanged sub-values between the checkpoints of that one read.
 */
export class ChannelDecoder {
  private readonly parsed = new Map<string, JsonValue>();
  constructor(private readonly blobs: ReadonlyMap<string, BlobRow>) {}

  decode(manifest: Manifest): JsonObject {
    const out: JsonObject = {};
    for (const [name, ref] of Object.entries(manifest)) setOwn(out, name, this.value(ref.h));
    return out;
  }

  private value(hash: string): JsonValue {
    const blob = this.blobs.get(hash);
    if (blob === undefined) throw new MissingBlobError(hash);
    if (blob.base === null) {
      let parsed = this.parsed.get(hash);
      if (parsed === undefined) {
        parsed = JSON.parse(blob.data) as JsonValue;
        this.parsed.set(hash, parsed);
        return parsed;
      }
      // A second use of the same whole value: hand out a fresh copy of its top level.
      return Array.isArray(parsed) ? parsed.slice() : JSON.parse(blob.data);
    }
    let appended = this.parsed.get(hash) as JsonValue[] | undefined;
    if (appended === undefined) {
      appended = JSON.parse(blob.data) as JsonValue[];
      this.parsed.set(hash, appended);
    }
    const base = this.value(blob.base) as JsonValue[];
    return base.concat(appended);
  }
}

/** The base hashes that `blobs` refers to but does not hold: fetch these and repeat until none remain. */
export function missingBases(blobs: ReadonlyMap<string, BlobRow>): string[] {
  const missing = new Set<string>();
  for (const blob of blobs.values()) {
    if (blob.base !== null && !blobs.has(blob.base)) missing.add(blob.base);
  }
  return [...missing];
}

/** Memos kept for the runs written most recently in this process. */
const MEMO_RUNS = 128;
const memos = new RecentMap<string, RunMemo>(MEMO_RUNS);

/**
 * The memo of one run (`key` names it uniquely, e.g. its tenant, user and run id), most recently used
 * last; the oldest is dropped past MEMO_RUNS. Safe to share between stores and processes' writes: a memo
 * only caches pure hashes of element texts, it never decides what the previous checkpoint was.
 */
export function runMemo(key: string): RunMemo {
  let memo = memos.use(key);
  if (memo === undefined) {
    memo = new Map();
    memos.set(key, memo);
  }
  return memo;
}
