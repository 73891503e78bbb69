/**
 * Finding many known values in a text in one pass: each value is filed under its first few characters,
 * and the text is read once with a rolling key of the same length, so a body is searched in time that
 * grows with its length, not with the number of values (thousands in a run: every user's ids, names,
 * tokens and one marker per turn).
 */

/** Characters of the key; shorter values are searched one by one. */
const KEY_CHARS = 6;
/** 128^(KEY_CHARS - 1): what the key is reduced by before the next character is added (below 2^53). */
const HEAD = 128 ** (KEY_CHARS - 1);

function keyOf(text: string, from: number): number {
  let key = 0;
  for (let i = from; i < from + KEY_CHARS; i++) key = key * 128 + (text.charCodeAt(i) & 127);
  return key;
}

export class ValueIndex<T extends { readonly value: string }> {
  private readonly byKey = new Map<number, T[]>();
  private readonly short: T[] = [];
  readonly size: number;

  constructor(items: Iterable<T>) {
    let size = 0;
    for (const item of items) {
      if (item.value.length === 0) continue;
      size++;
      if (item.value.length < KEY_CHARS) {
        this.short.push(item);
        continue;
      }
      const key = keyOf(item.value, 0);
      const list = this.byKey.get(key);
      if (list === undefined) this.byKey.set(key, [item]);
      else list.push(item);
    }
    this.size = size;
  }

  /** Every item whose value occurs in `text`, each once. */
  find(text: string): T[] {
    const found = new Set<T>();
    for (const item of this.short) if (text.includes(item.value)) found.add(item);
    if (this.byKey.size === 0) return [...found];
    let key = 0;
    for (let i = 0; i < text.length; i++) {
      key = (key % HEAD) * 128 + (text.charCodeAt(i) & 127);
      if (i < KEY_CHARS - 1) continue;
      const list = this.byKey.get(key);
      if (list === undefined) continue;
      const start = i - KEY_CHARS + 1;
      for (const item of list) if (!found.has(item) && text.startsWith(item.value, start)) found.add(item);
    }
    return [...found];
  }
}
