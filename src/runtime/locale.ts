/** The language and time zone of a turn: from the session's context (language, timezone), else guessed. */
import type { JsonObject } from '../core/json.js';
import { isValidTimezone } from '../models/rules/dates.js';
import { looksChinese } from '../models/rules/words.js';
import type { Language } from '../models/types.js';

export function chooseLanguage(context: JsonObject, input: string): Language {
  const preferred = context.language;
  if (typeof preferred === 'string') {
    if (preferred.toLowerCase().startsWith('zh')) return 'zh';
    if (preferred.toLowerCase().startsWith('en')) return 'en';
  }
  return looksChinese(input) ? 'zh' : 'en';
}

export function chooseTimezone(context: JsonObject, fallback: string): string {
  const zone = context.timezone;
  return typeof zone === 'string' && isValidTimezone(zone) ? zone : fallback;
}
