/**
 * Dates in text, resolved against "now" in the user's time zone (Intl API): ISO dates, 2026年12月9日,
 * 12月9日, today/今天, tomorrow/明天, the day after tomorrow/后天, in 3 days/3天后, next Wednesday/下周三,
 * this Friday/这周五, on Friday/周五.
 */

const WEEKDAYS_EN = ['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday'];
const WEEKDAYS_EN_SHORT = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'];
const WEEKDAYS_ZH = ['一', '二', '三', '四', '五', '六', '日'];
const MONTHS_EN = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];

/** A calendar date as days since 1970-01-01 (UTC arithmetic on local dates, no DST trouble). */
function dayNumber(year: number, month: number, day: number): number {
  return Math.floor(Date.UTC(year, month - 1, day) / 86_400_000);
}

function formatDay(days: number): string {
  return new Date(days * 86_400_000).toISOString().slice(0, 10);
}

/** Monday = 0 ... Sunday = 6. */
function weekdayOf(days: number): number {
  return (new Date(days * 86_400_000).getUTCDay() + 6) % 7;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

/** One formatter per zone: building an Intl.DateTimeFormat costs far more than using one. */
function formatterFor(timezone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timezone);
  if (formatter === undefined) {
    formatter = new Intl.DateTimeFormat('en-CA', {
      timeZone: timezone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
    });
    if (formatters.size > 500) formatters.clear();
    formatters.set(timezone, formatter);
  }
  return formatter;
}

/** The last day found per zone and the UTC minute it was found for. */
const WHOLE_MINUTE_OFFSETS_MS = Date.UTC(1972, 0, 1);
const todays = new Map<string, { minute: number; day: number }>();

/**
 * Today's date in the time zone, as a day number. Throws on an unknown zone (Intl's RangeError). Kept per
 * zone for the current UTC minute: every zone's offset since 1972 is a whole number of minutes, so a
 * local date never changes within one (older instants are looked up every time).
 */
export function localToday(nowMs: number, timezone: string): number {
  const minute = nowMs >= WHOLE_MINUTE_OFFSETS_MS ? Math.floor(nowMs / 60_000) : Number.NaN;
  const known = todays.get(timezone);
  if (known !== undefined && known.minute === minute) return known.day;
  const parts = formatterFor(timezone).formatToParts(new Date(nowMs));
  const get = (type: string) => Number(parts.find((part) => part.type === type)?.value);
  const day = dayNumber(get('year'), get('month'), get('day'));
  if (todays.size > 500) todays.clear();
  todays.set(timezone, { minute, day });
  return day;
}

export function isValidTimezone(timezone: string): boolean {
  try {
    formatterFor(timezone);
    return true;
  } catch {
    return false;
  }
}

function validDate(year: number, month: number, day: number): number | null {
  if (month < 1 || month > 12 || day < 1 || day > 31) return null;
  const days = dayNumber(year, month, day);
  return formatDay(days) === `${year}-${String(month).padStart(2, '0')}-${String(day).padStart(2, '0')}`
    ? days
    : null;
}

/** A month and day without a year: this year's, or next year's when it has passed. */
function nextMonthDay(today: number, month: number, day: number): number | null {
  const year = Number(formatDay(today).slice(0, 4));
  const thisYear = validDate(year, month, day);
  if (thisYear !== null && thisYear >= today) return thisYear;
  return validDate(year + 1, month, day);
}

function weekdayIndex(word: string): number {
  const lower = word.toLowerCase();
  const long = WEEKDAYS_EN.indexOf(lower);
  if (long >= 0) return long;
  const short = WEEKDAYS_EN_SHORT.indexOf(lower.slice(0, 3));
  if (short >= 0 && lower.length <= 4) return short;
  if (word === '天') return 6;
  return WEEKDAYS_ZH.indexOf(word);
}

/** The weekday of the week after this one (weeks start on Monday): 下周三 said on a Wednesday is 7 days on. */
function nextWeek(today: number, weekday: number): number {
  return today - weekdayOf(today) + 7 + weekday;
}

function thisWeek(today: number, weekday: number): number {
  return today - weekdayOf(today) + weekday;
}

/** The first such weekday after today. */
function upcoming(today: number, weekday: number): number {
  const delta = (weekday - weekdayOf(today) + 7) % 7;
  return today + (delta === 0 ? 7 : delta);
}

const EN_WEEKDAY =
  '(monday|tuesday|wednesday|thursday|friday|saturday|sunday|mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun)';
const ZH_WEEKDAY = '(?:周|星期|礼拜)([一二三四五六日天])';
const NUMBER_WORDS: Readonly<Record<string, number>> = {
  one: 1,
  two: 2,
  three: 3,
  four: 4,
  five: 5,
  six: 6,
  seven: 7,
};

type DateRule = [RegExp, (m: RegExpMatchArray, today: number) => number | null];

const RULES: readonly DateRule[] = [
  [/(\d{4})-(\d{1,2})-(\d{1,2})/, (m) => validDate(Number(m[1]), Number(m[2]), Number(m[3]))],
  [
    /(\d{4})\s*年\s*(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]/,
    (m) => validDate(Number(m[1]), Number(m[2]), Number(m[3])),
  ],
  [/(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]/, (m, today) => nextMonthDay(today, Number(m[1]), Number(m[2]))],
  [/\bday after tomorrow\b/, (_m, today) => today + 2],
  [/大后天/, (_m, today) => today + 3],
  [/后天/, (_m, today) => today + 2],
  [/\btomorrow\b|明天|明日/, (_m, today) => today + 1],
  [/\btoday\b|今天|今日/, (_m, today) => today],
  [
    /\bin (\d{1,3}|one|two|three|four|five|six|seven) days?\b/,
    (m, today) => today + (NUMBER_WORDS[m[1]!] ?? Number(m[1])),
  ],
  [/(\d{1,3})\s*天[以之]?后/, (m, today) => today + Number(m[1])],
  [new RegExp(`\\bnext (?:week )?${EN_WEEKDAY}\\b`), (m, today) => nextWeek(today, weekdayIndex(m[1]!))],
  [new RegExp(`下个?${ZH_WEEKDAY}`), (m, today) => nextWeek(today, weekdayIndex(m[1]!))],
  [new RegExp(`\\bthis ${EN_WEEKDAY}\\b`), (m, today) => thisWeek(today, weekdayIndex(m[1]!))],
  [new RegExp(`(?:这|本)${ZH_WEEKDAY}`), (m, today) => thisWeek(today, weekdayIndex(m[1]!))],
  [new RegExp(`\\b(?:on )?${EN_WEEKDAY}\\b`), (m, today) => upcoming(today, weekdayIndex(m[1]!))],
  [new RegExp(ZH_WEEKDAY), (m, today) => upcoming(today, weekdayIndex(m[1]!))],
  [
    /\b(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.? (\d{1,2})(?:st|nd|rd|th)?\b/,
    (m, today) => nextMonthDay(today, MONTHS_EN.indexOf(m[1]!) + 1, Number(m[2])),
  ],
  [
    /\b(\d{1,2})(?:st|nd|rd|th)? (jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b/,
    (m, today) => nextMonthDay(today, MONTHS_EN.indexOf(m[2]!) + 1, Number(m[1])),
  ],
];

/** The first date the text names, as YYYY-MM-DD, or null. */
export function extractDate(text: string, nowMs: number, timezone: string): string | null {
  const lower = text.toLowerCase();
  let today: number | null = null;
  for (const [pattern, resolve] of RULES) {
    const match = lower.match(pattern);
    if (match === null) continue;
    today ??= localToday(nowMs, timezone);
    const days = resolve(match, today);
    if (days !== null) return formatDay(days);
  }
  return null;
}

/** Today's date in the zone, as YYYY-MM-DD (for validators: "not in the past"). */
export function todayIn(nowMs: number, timezone: string): string {
  return formatDay(localToday(nowMs, timezone));
}
