import { cryptoRandom, type RandomSource } from './clock.js';
import { invalidRequest } from './errors.js';

export const ID_PREFIXES = {
  session: 'sess_',
  task: 'task_',
  action: 'act_',
  checkpoint: 'ckpt_',
  event: 'evt_',
  message: 'msg_',
  run: 'run_',
} as const;

export type IdKind = keyof typeof ID_PREFIXES;

/** 16 random bytes = 128 bits, base32 (lowercase, no padding) so ids are URL- and key-safe. */
const ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567';

function base32(bytes: Uint8Array): string {
  let out = '';
  let buffer = 0;
  let bits = 0;
  for (const byte of bytes) {
    buffer = (buffer << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(buffer >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += ALPHABET[(buffer << (5 - bits)) & 31];
  return out;
}

/** A new id of `kind`; an unknown kind (a typo, or a prefix such as 'sess' passed for 'session') is refused. */
export function newId(kind: IdKind, random: RandomSource = cryptoRandom): string {
  if (typeof kind !== 'string' || !Object.hasOwn(ID_PREFIXES, kind)) {
    throw invalidRequest(
      `unknown id kind ${JSON.stringify(kind) ?? String(kind)}: expected one of ${Object.keys(ID_PREFIXES).join(', ')}`,
      { kind: String(kind), kinds: Object.keys(ID_PREFIXES) },
    );
  }
  return ID_PREFIXES[kind] + base32(random(16));
}

const ID_PATTERN = /^(sess|task|act|ckpt|evt|msg|run)_[a-z2-7]{26}$/;

/** True when `value` has the shape of an id of `kind` (prefix + 128 bits). */
export function isId(value: string, kind?: IdKind): boolean {
  if (!ID_PATTERN.test(value)) return false;
  return kind === undefined || value.startsWith(ID_PREFIXES[kind]);
}
