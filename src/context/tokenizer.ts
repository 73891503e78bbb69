/**
 * Offline token counting with the real BPE encodings of OpenAI models (tiktoken, compiled to WebAssembly).
 *
 * An encoding is loaded on first use (o200k_base takes ~0.2 s) and cached for the process. Its tables live
 * in WebAssembly memory, outside the JavaScript heap, so the garbage collector never walks them (an
 * encoding held as JavaScript objects, ~24 MB of them, made every full collection of a server 10-19 ms).
 * Text is counted as plain text: a special-token string such as `<|endoftext|>` inside a message is
 * counted as the characters it is, never refused and never treated as a control token.
 */
import { invalidRequest } from '../core/errors.js';

export const ENCODINGS = ['o200k_base', 'cl100k_base'] as const;
export type EncodingName = (typeof ENCODINGS)[number];
export const DEFAULT_ENCODING: EncodingName = 'o200k_base';

/** What the context builder needs from a tokenizer. Any object with this shape may be passed instead. */
export interface Tokenizer {
  /** The encoding's name, reported in `included.tokenizer`. */
  readonly name: string;
  count(text: string): number;
}

type CountFn = (text: string) => number;

const loaded = new Map<EncodingName, Promise<Tokenizer>>();
/** The encodings whose load has finished, for `loadedTokenizer`. */
const ready = new Map<EncodingName, Tokenizer>();

async function importEncoding(name: EncodingName): Promise<CountFn> {
  const { get_encoding } = await import('tiktoken');
  // Kept for the life of the process (never freed): one per encoding, shared by every caller.
  const encoding = get_encoding(name);
  return (text: string) => encoding.encode_ordinary(text).length;
}

/** The encoding a model uses: o200k_base for GPT-4o, GPT-4.1, GPT-5 and the o-series; cl100k_base before. */
export function encodingForModel(model: string): EncodingName {
  const m = model.toLowerCase();
  if (/^(gpt-4o|gpt-4\.[1-9]|gpt-5|o[1-9]|chatgpt-4o|gpt-oss|codex)/.test(m)) return 'o200k_base';
  if (/^(gpt-4|gpt-3\.5|text-embedding-3|text-embedding-ada)/.test(m)) return 'cl100k_base';
  return DEFAULT_ENCODING;
}

function isEncodingName(value: string): value is EncodingName {
  return (ENCODINGS as readonly string[]).includes(value);
}

/**
 * The tokenizer of an encoding (`o200k_base`, `cl100k_base`) or of a model name (`gpt-4o`, `gpt-4`).
 * Default: o200k_base.
 */
export async function loadTokenizer(encodingOrModel: string = DEFAULT_ENCODING): Promise<Tokenizer> {
  if (typeof encodingOrModel !== 'string' || encodingOrModel === '') {
    throw invalidRequest('tokenizer: name an encoding (o200k_base, cl100k_base) or a model');
  }
  const name = isEncodingName(encodingOrModel) ? encodingOrModel : encodingForModel(encodingOrModel);
  let tokenizer = loaded.get(name);
  if (tokenizer === undefined) {
    tokenizer = importEncoding(name).then((count) => {
      const done: Tokenizer = { name, count: (text: string) => (text === '' ? 0 : count(text)) };
      ready.set(name, done);
      return done;
    });
    loaded.set(name, tokenizer);
  }
  return tokenizer;
}

/** The tokenizer of an encoding if this process has loaded it already, else null (never loads it). */
export function loadedTokenizer(name: EncodingName = DEFAULT_ENCODING): Tokenizer | null {
  return ready.get(name) ?? null;
}

/**
 * An upper bound of every encoding's count, with no encoding loaded: the text's UTF-8 bytes. The encodings
 * are byte-level BPE: each token stands for at least one byte of the text, and the tokens of a text
 * cover its bytes once, so a text of N bytes is at most N tokens. Deciding with it that a history fits
 * under a budget is exact; only a history it puts over needs the real count.
 */
export const UTF8_BYTES_BOUND: Tokenizer = {
  name: 'utf8-bytes-bound',
  count: (text: string) => Buffer.byteLength(text, 'utf8'),
};
