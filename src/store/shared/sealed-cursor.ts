/**
 * List cursors sealed with AES-256-GCM under a key of the store. A page's position is a store-wide write
 * counter (SQL `ord`, the memory store's `seq`): shown in clear, the gap between two of a user's records
 * would tell how many records other tenants wrote meanwhile. Sealed, a cursor says nothing, cannot be
 * forged, and opens only for the list and the scope (tenant, and user or the whole tenant) that got it.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { MAX_CURSOR_LENGTH } from '../limits.js';
import type { ReadScope } from '../types.js';

export type CursorPosition = { readonly s: number } | { readonly k: string };

const IV_BYTES = 12;
const TAG_BYTES = 16;

export const CURSOR_KEY_BYTES = 32;

/** A new random key, for a store that keeps its cursors' key in its own process. */
export function newCursorKey(): Buffer {
  return randomBytes(CURSOR_KEY_BYTES);
}

/** The key from its hex form as a store keeps it; throws when it is not 32 bytes of hex. */
export function cursorKeyFromHex(hex: string): Buffer {
  if (!/^[0-9a-f]{64}$/i.test(hex)) throw new Error('the stored cursor key is not 32 bytes of hex');
  return Buffer.from(hex, 'hex');
}

function scopeLabel(list: string, scope: ReadScope): string {
  return JSON.stringify([list, scope.tenant_id, scope.user_id ?? null]);
}

export function sealCursor(key: Buffer, list: string, scope: ReadScope, position: CursorPosition): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(scopeLabel(list, scope), 'utf8'));
  const body = Buffer.concat([cipher.update(JSON.stringify(position), 'utf8'), cipher.final()]);
  return Buffer.concat([iv, body, cipher.getAuthTag()]).toString('base64url');
}

/**
 * The position a cursor names, checked against the list and scope it is used with. `fail` throws the
 * adapter's refusal: a cursor of another list or scope, or one this store did not hand out, is refused.
 */
export function openCursor(
  key: Buffer,
  list: string,
  scope: ReadScope,
  cursor: unknown,
  fail: (message: string) => never,
): CursorPosition {
  if (typeof cursor !== 'string' || cursor.length === 0) fail('cursor must be a string from next_cursor');
  if (cursor.length > MAX_CURSOR_LENGTH || !/^[A-Za-z0-9_-]+$/.test(cursor))
    fail('cursor is not one this store handed out');
  const bytes = Buffer.from(cursor, 'base64url');
  if (bytes.length <= IV_BYTES + TAG_BYTES) fail('cursor is not one this store handed out');
  let text: string;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(scopeLabel(list, scope), 'utf8'));
    decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
    text = Buffer.concat([
      decipher.update(bytes.subarray(IV_BYTES, bytes.length - TAG_BYTES)),
      decipher.final(),
    ]).toString('utf8');
  } catch {
    return fail(`cursor is not one this store handed out for this list (${list}) and this caller`);
  }
  const body = JSON.parse(text) as { s?: unknown; k?: unknown };
  if (typeof body.s === 'number' && Number.isSafeInteger(body.s)) return { s: body.s };
  if (typeof body.k === 'string') return { k: body.k };
  return fail('cursor is not one this store handed out');
}
