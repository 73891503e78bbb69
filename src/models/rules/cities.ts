/**
 * City names (English and Chinese) to IATA metropolitan codes, and finding origin and destination in text:
 * "from Beijing to Shanghai", "北京 -> 上海", "从北京飞上海", "订去上海的票", "BJS to SHA".
 */

export const CITIES: Readonly<Record<string, readonly string[]>> = {
  BJS: ['beijing', 'peking', '北京'],
  SHA: ['shanghai', '上海'],
  CAN: ['guangzhou', 'canton', '广州'],
  SZX: ['shenzhen', '深圳'],
  CTU: ['chengdu', '成都'],
  HGH: ['hangzhou', '杭州'],
  XIY: ["xi'an", 'xian', '西安'],
  CKG: ['chongqing', '重庆'],
  NKG: ['nanjing', '南京'],
  WUH: ['wuhan', '武汉'],
  KMG: ['kunming', '昆明'],
  XMN: ['xiamen', '厦门'],
  TAO: ['qingdao', '青岛'],
  CSX: ['changsha', '长沙'],
  HKG: ['hong kong', '香港'],
  TPE: ['taipei', '台北'],
  TYO: ['tokyo', '东京'],
  SEL: ['seoul', '首尔'],
  SIN: ['singapore', '新加坡'],
  LON: ['london', '伦敦'],
  PAR: ['paris', '巴黎'],
  NYC: ['new york', '纽约'],
};

const CODE_PATTERNS: Readonly<Record<string, RegExp>> = Object.fromEntries(
  Object.keys(CITIES).map((code) => [code, new RegExp(`\\b${code}\\b`, 'g')]),
);

export interface CityMention {
  readonly code: string;
  readonly index: number;
  readonly end: number;
  readonly role: 'origin' | 'destination' | null;
}

const ORIGIN_BEFORE = /(?:\bfrom|\bleaving|\bdeparting|从|由|自)\s*$/i;
const DESTINATION_BEFORE = /(?:\bto|\binto|\bfor|->|→|—>|=>|-|到|去|往|至|飞|抵达|前往)\s*$/i;
const ORIGIN_AFTER = /^\s*(?:出发|起飞|始发)/;

function isLatin(text: string): boolean {
  return /^[a-z' ]+$/i.test(text);
}

/** Every city named in the text, in order, with the role its surrounding words give it. */
export function findCities(text: string): CityMention[] {
  const lower = text.toLowerCase();
  const found: { code: string; index: number; end: number }[] = [];
  for (const [code, names] of Object.entries(CITIES)) {
    for (const name of names) {
      let from = 0;
      for (;;) {
        const index = lower.indexOf(name, from);
        if (index < 0) break;
        from = index + name.length;
        if (isLatin(name)) {
          const before = lower[index - 1] ?? ' ';
          const after = lower[index + name.length] ?? ' ';
          if (/[a-z]/.test(before) || /[a-z]/.test(after)) continue;
        }
        found.push({ code, index, end: index + name.length });
      }
    }
    // The code itself, typed in capitals: "BJS to SHA".
    for (const match of text.matchAll(CODE_PATTERNS[code]!)) {
      found.push({ code, index: match.index, end: match.index + code.length });
    }
  }
  found.sort((a, b) => a.index - b.index || b.end - a.end);
  const mentions: CityMention[] = [];
  let lastEnd = -1;
  for (const hit of found) {
    if (hit.index < lastEnd) continue; // overlapping a longer or earlier name
    lastEnd = hit.end;
    const before = text.slice(Math.max(0, hit.index - 12), hit.index);
    const after = text.slice(hit.end, hit.end + 6);
    let role: CityMention['role'] = null;
    if (ORIGIN_BEFORE.test(before) || ORIGIN_AFTER.test(after)) role = 'origin';
    else if (DESTINATION_BEFORE.test(before)) role = 'destination';
    mentions.push({ ...hit, role });
  }
  return mentions;
}

/**
 * Origin and destination from the mentions. Explicit roles win; two cities without roles read as
 * "origin then destination"; a single city without a role goes to `fallback` (the slot being asked for).
 */
export function cityRoles(
  text: string,
  fallback: 'origin' | 'destination' | null,
): { origin?: string; destination?: string } {
  const mentions = findCities(text);
  const out: { origin?: string; destination?: string } = {};
  const unassigned: CityMention[] = [];
  for (const mention of mentions) {
    if (mention.role !== null && out[mention.role] === undefined) out[mention.role] = mention.code;
    else if (mention.role === null) unassigned.push(mention);
  }
  for (const mention of unassigned) {
    const slot =
      unassigned.length === 1 && mentions.length === 1 && fallback !== null
        ? fallback
        : out.origin === undefined && mentions.length > 1
          ? 'origin'
          : out.destination === undefined && mentions.length > 1
            ? 'destination'
            : null;
    if (slot !== null && out[slot] === undefined) out[slot] = mention.code;
  }
  return out;
}
