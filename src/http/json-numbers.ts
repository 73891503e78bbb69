/**
 * Numbers of a JSON body that JavaScript cannot keep as written: an integer beyond 2^53 (9007199254740993
 * parses as 9007199254740992), a number whose exponent underflows to 0 (`1e-400`) or overflows to Infinity
 * (`1e999`). JSON.parse changes them without a word, so the request's text is read again to name the first
 * one and its field: an order id or an amount must never be stored as another number than the one sent.
 */
import { childPath } from '../core/json.js';

/** Only a body holding 16 digits in a row or an exponent of 3 digits can hold such a number. */
const MAY_HOLD_LOSSY = /\d{16}|[eE][-+]?\d{3}/;

/** Why `literal` (a JSON number as written) does not survive Number(), or null when it does. */
function lossOf(literal: string): string | null {
  const value = Number(literal);
  if (!Number.isFinite(value)) return 'is too large for a number';
  if (/^-?\d+$/.test(literal)) {
    return BigInt(literal) === BigInt(value)
      ? null
      : `is an integer beyond 2^53, which would be kept as ${BigInt(value)}; send it as a string`;
  }
  const mantissa = literal.split(/[eE]/)[0] ?? '';
  return value === 0 && /[1-9]/.test(mantissa) ? 'is too small for a number and would be kept as 0' : null;
}

interface Frame {
  readonly path: string;
  readonly array: boolean;
  index: number;
  key: string;
}

/**
 * The first number of `text` (valid JSON, already parsed) that would not be kept as written, as a sentence
 * naming its path (`body.value.order_id: ...`), or null.
 */
export function lossyNumberOf(text: string): string | null {
  if (!MAY_HOLD_LOSSY.test(text)) return null;
  const frames: Frame[] = [];
  let expectingKey = false;
  const here = (): string => {
    const top = frames.at(-1);
    if (top === undefined) return 'body';
    return top.array ? childPath(top.path, top.index) : childPath(top.path, top.key);
  };
  let i = 0;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      let end = i + 1;
      while (text.charCodeAt(end) !== 0x22) end += text.charCodeAt(end) === 0x5c /* \ */ ? 2 : 1;
      const top = frames.at(-1);
      if (expectingKey && top !== undefined && !top.array) {
        top.key = JSON.parse(text.slice(i, end + 1)) as string;
        expectingKey = false;
      }
      i = end + 1;
    } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      frames.push({ path: here(), array: c === 0x5b, index: 0, key: '' });
      expectingKey = c === 0x7b;
      i++;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      frames.pop();
      i++;
    } else if (c === 0x2c /* , */) {
      const top = frames.at(-1);
      if (top?.array) top.index++;
      else expectingKey = true;
      i++;
    } else if (c === 0x2d /* - */ || (c >= 0x30 && c <= 0x39)) {
      let end = i + 1;
      while (end < text.length && /[0-9eE.+-]/.test(text.charAt(end))) end++;
      const literal = text.slice(i, end);
      const loss = lossOf(literal);
      if (loss !== null) return `${here()}: ${literal} ${loss}`;
      i = end;
    } else {
      i++;
    }
  }
  return null;
}
