/** Yes / no / cancel / "another", enum values, person names and identifiers, in English and Chinese. */

const YES = [
  'yes',
  'y',
  'yeah',
  'yep',
  'yup',
  'sure',
  'ok',
  'okay',
  'confirm',
  'confirmed',
  'correct',
  'right',
  'go ahead',
  'do it',
  'please do',
  'book it',
  'sounds good',
  'that is right',
  "that's right",
  '是',
  '是的',
  '对',
  '对的',
  '好',
  '好的',
  '确认',
  '确定',
  '可以',
  '没问题',
  '行',
  '没错',
  '嗯',
];
const NO = [
  'no',
  'n',
  'nope',
  'not yet',
  'wrong',
  "don't",
  'do not',
  '不',
  '不是',
  '不对',
  '否',
  '不用',
  '不行',
  '错了',
];
const CANCEL = /\b(?:cancel|abort|never ?mind|forget it|call it off)\b|取消|算了|不要了|不订了|别订了/i;
const ANOTHER = /\b(?:another|one more|also|a second)\b|再|又|另外|还要/i;

function normalize(text: string): string {
  return text
    .trim()
    .toLowerCase()
    .replace(/[\s.!?。！？~～]+$/u, '');
}

function startsWithPhrase(text: string, phrase: string): boolean {
  if (text === phrase) return true;
  if (!text.startsWith(phrase)) return false;
  const next = text.slice(phrase.length, phrase.length + 1);
  if (/[\s,，、;；:：.。!！]/u.test(next)) return true;
  // Chinese phrases of two or more characters may run straight into the next word: 确认预订.
  return /[\u4e00-\u9fff]/u.test(phrase) && phrase.length >= 2 && !phrase.startsWith('不');
}

/** 'yes' or 'no' when the input starts with an answer word; null otherwise. */
const byLength = (a: string, b: string) => b.length - a.length;
const YES_LONGEST_FIRST = [...YES].sort(byLength);
const NO_LONGEST_FIRST = [...NO].sort(byLength);

export function detectAnswer(input: string): 'yes' | 'no' | null {
  const text = normalize(input);
  const yes = YES_LONGEST_FIRST.find((phrase) => startsWithPhrase(text, phrase));
  const no = NO_LONGEST_FIRST.find((phrase) => startsWithPhrase(text, phrase));
  if (yes !== undefined && no !== undefined) return no.length >= yes.length ? 'no' : 'yes';
  if (no !== undefined) return 'no';
  if (yes !== undefined) return 'yes';
  return null;
}

export function detectCancel(input: string): boolean {
  return CANCEL.test(input);
}

export function detectAnother(input: string): boolean {
  return ANOTHER.test(input);
}

function phraseIn(lower: string, phrase: string): number {
  const p = phrase.toLowerCase();
  let from = 0;
  for (;;) {
    const index = lower.indexOf(p, from);
    if (index < 0) return -1;
    from = index + 1;
    if (/[\u4e00-\u9fff]/u.test(p)) return index;
    const before = lower[index - 1] ?? ' ';
    const after = lower[index + p.length] ?? ' ';
    if (!/[a-z0-9]/.test(before) && !/[a-z0-9]/.test(after)) return index;
  }
}

/** The enum value whose synonym appears in the text (the longest synonym wins), or null. */
export function findEnum(input: string, values: Readonly<Record<string, readonly string[]>>): string | null {
  const lower = input.toLowerCase();
  let best: { value: string; length: number } | null = null;
  for (const [value, synonyms] of Object.entries(values)) {
    for (const synonym of [value, ...synonyms]) {
      if (
        phraseIn(lower, synonym.replace(/_/g, ' ')) >= 0 &&
        (best === null || synonym.length > best.length)
      ) {
        best = { value, length: synonym.length };
      }
    }
  }
  return best?.value ?? null;
}

const EN_NAME_MARKERS =
  /\b(?:my name is|my name's|name is|name:|passenger(?: name)?(?: is|:)?|traveller(?: is)?|traveler(?: is)?|book it for|for passenger)\s+([a-z][a-z'.-]*(?:\s+[a-z][a-z'.-]*){0,3})/i;
const ZH_NAME_MARKERS =
  /(?:我叫|我的名字是|名字是|名字叫|乘客是|乘客叫|乘机人是|乘机人|姓名是|姓名[:：]?)\s*([\u4e00-\u9fff·]{2,6}|[a-z][a-z' -]{1,40})/i;
const EN_SELF = /^(?:i am|i'm|it's|it is|this is|call me)\s+([a-z][a-z'.-]*(?:\s+[a-z][a-z'.-]*){0,3})$/i;
const STOP_WORDS = /\s+(?:and|please|thanks|thank|from|to|on|in|with|flying|travel+ing)\b.*$/i;

function titleCase(name: string): string {
  return name.replace(/(^|[\s'-])([a-z])/g, (_all, sep: string, ch: string) => sep + ch.toUpperCase());
}

/**
 * A person's name after a marker ("my name is", "我叫"), or the whole short input when the name is
 * what the conversation is waiting for.
 */
export function findPersonName(input: string, expecting: boolean): string | null {
  const zh = input.match(ZH_NAME_MARKERS);
  if (zh?.[1] !== undefined) return zh[1].trim();
  const en = input.match(EN_NAME_MARKERS);
  if (en?.[1] !== undefined) {
    const name = en[1].replace(STOP_WORDS, '').trim();
    if (name.length > 0) return titleCase(name);
  }
  if (!expecting) return null;
  const self = input
    .trim()
    .replace(/[.。!！]+$/u, '')
    .match(EN_SELF);
  if (self?.[1] !== undefined) return titleCase(self[1].replace(STOP_WORDS, '').trim());
  const bare = input.trim().replace(/[.。!！]+$/u, '');
  if (/^[\u4e00-\u9fff·]{2,6}$/u.test(bare)) return bare;
  if (/^[a-z][a-z'.-]*(?:\s+[a-z][a-z'.-]*){0,3}$/i.test(bare)) return titleCase(bare);
  return null;
}

/** An identifier (lowercase letters, digits, dashes) following one of the marker words. */
export function findIdentifier(input: string, after: readonly string[]): string | null {
  for (const marker of after) {
    const escaped = marker.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const match = input.match(
      new RegExp(`${escaped}\\s*(?:the\\s+|service\\s+|服务\\s*)?([a-z][a-z0-9-]{0,62})\\b`, 'i'),
    );
    const value = match?.[1]?.toLowerCase();
    if (value !== undefined && !['the', 'to', 'service', 'app', 'a', 'it'].includes(value)) return value;
  }
  return null;
}

export function findVersion(input: string): string | null {
  const match = input.match(/\b(v\d+(?:\.\d+){0,3}|\d+\.\d+(?:\.\d+){0,2})\b/i);
  return match?.[1] ?? null;
}

/** True when the text holds Chinese characters. */
export function looksChinese(text: string): boolean {
  return /[\u4e00-\u9fff]/u.test(text);
}
