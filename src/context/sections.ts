/** The text of the system part's sections: long-term memory and what came before the window. */
import type { JsonValue } from '../core/json.js';
import type { MemoryItem } from '../core/model.js';
import type { SummaryRecord } from './summary-store.js';

export const MEMORY_HEADER = '# What we know about this user (long-term memory)';
const VALUE_LIMIT = 200;

function show(value: JsonValue): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text.length > VALUE_LIMIT ? `${text.slice(0, VALUE_LIMIT - 1)}…` : text;
}

/** Most recently updated first: the order in which memory competes for the budget. */
export function rankMemory(items: readonly MemoryItem[]): MemoryItem[] {
  return [...items].sort((a, b) => {
    if (a.updated_at !== b.updated_at) return a.updated_at < b.updated_at ? 1 : -1;
    const ak = `${a.namespace}\u0000${a.key}`;
    const bk = `${b.namespace}\u0000${b.key}`;
    return ak < bk ? -1 : ak > bk ? 1 : 0;
  });
}

export function memoryLine(item: MemoryItem): string {
  return `- ${item.namespace}.${item.key}: ${show(item.value)}`;
}

export function memorySection(lines: readonly string[]): string {
  return lines.length === 0 ? '' : [MEMORY_HEADER, ...lines].join('\n');
}

/** Raw messages that are neither in the window nor covered by the summary. */
export interface OmittedRange {
  readonly from_seq: number;
  readonly to_seq: number;
}

export function summaryHeader(head: SummaryRecord | null): string {
  return head === null
    ? '# Earlier in this session'
    : `# Earlier in this session (messages ${head.from_seq}-${head.to_seq}, summarized)`;
}

export function omittedNote(omitted: OmittedRange): string {
  return omitted.from_seq === omitted.to_seq
    ? `(message ${omitted.from_seq} is not shown)`
    : `(messages ${omitted.from_seq}-${omitted.to_seq} are not shown)`;
}

/** The section, or '' when there is nothing to say. `points` are the newest points that fit, oldest first. */
export function earlierSection(
  head: SummaryRecord | null,
  points: readonly string[],
  omitted: OmittedRange | null,
): string {
  const body = [...points.map((p) => `- ${p}`), ...(omitted === null ? [] : [omittedNote(omitted)])];
  if (body.length === 0) return '';
  return [summaryHeader(points.length > 0 ? head : null), ...body].join('\n');
}

export function joinSections(sections: readonly string[]): string {
  return sections.filter((s) => s !== '').join('\n\n');
}
