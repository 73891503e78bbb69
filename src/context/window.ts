/**
 * The message window: the newest messages that fit a token budget, read backwards page by page.
 *
 * Rules:
 * - A unit is kept or cut whole: an assistant message with tool calls and the tool messages that answer it
 *   (the run of tool messages right after it) are one unit.
 * - The window is contiguous: walking back, the first unit that does not fit ends the walk.
 * - A tool result whose call is not right before it (an orphan: its call was cut, lies below the floor, or
 *   never existed) is never included, so the window never starts with one.
 * - Messages at or below `floor` (covered by a summary) are never read.
 */
import { invalidRequest } from '../core/errors.js';
import type { Message } from '../core/model.js';
import type { MessageSource } from './source.js';

export interface WindowOptions {
  /** Tokens available to the messages. */
  readonly budget: number;
  /** The token cost of one message. */
  readonly cost: (message: Message) => number;
  /** Messages with seq <= floor are not read. Default 0. */
  readonly floor?: number;
  /** Size of the first page read; later pages double, up to 500. Default 32. */
  readonly pageSize?: number;
}

export interface MessageWindow {
  /** The window, ascending seq. */
  readonly messages: Message[];
  readonly tokens: number;
  /** Seqs of tool results skipped as orphans. */
  readonly orphans: number[];
  /** True when every message above the floor was considered (nothing was cut by the budget). */
  readonly complete: boolean;
  /** The highest seq above the floor that was cut by the budget, or null when nothing was cut. */
  readonly cut_to: number | null;
  /** Messages read from the source (for benchmarks and tests of the paging). */
  readonly read: number;
}

const MAX_PAGE = 500;

export async function selectWindow(source: MessageSource, options: WindowOptions): Promise<MessageWindow> {
  const floor = options.floor ?? 0;
  if (!Number.isInteger(options.budget) || options.budget < 0) {
    throw invalidRequest(`window: budget must be an integer >= 0, got ${String(options.budget)}`);
  }
  let page = Math.max(1, Math.min(MAX_PAGE, options.pageSize ?? 32));
  let buf: Message[] = [];
  let exhausted = false;
  let read = 0;

  /** Reads one more page below the buffer; returns how many messages were added. */
  const fetchOlder = async (): Promise<number> => {
    if (exhausted) return 0;
    const before = buf.length > 0 ? buf[0]!.seq : null;
    const got = await source.older(before, page, floor);
    read += got.length;
    if (got.length < page || got.length === 0 || got[0]!.seq <= floor + 1) exhausted = true;
    buf = [...got, ...buf];
    page = Math.min(MAX_PAGE, page * 2);
    return got.length;
  };

  const units: Message[][] = [];
  const orphans: number[] = [];
  let tokens = 0;
  let end = 0; // exclusive index into buf of what is left to consider
  let cut = false;

  end += await fetchOlder();
  for (;;) {
    if (end === 0) {
      if (exhausted) break;
      end += await fetchOlder();
      continue;
    }
    const last = buf[end - 1]!;
    let unit: Message[];
    let skipped: Message[] = [];
    let nextEnd: number;
    if (last.role === 'tool') {
      let j = end - 1;
      while (j >= 0 && buf[j]!.role === 'tool') j--;
      if (j < 0 && !exhausted) {
        end += await fetchOlder();
        continue;
      }
      const run = buf.slice(j + 1, end);
      const caller = j >= 0 ? buf[j]! : null;
      const ids = new Set((caller?.role === 'assistant' ? (caller.tool_calls ?? []) : []).map((c) => c.id));
      if (caller !== null && ids.size > 0) {
        unit = [caller, ...run.filter((t) => t.tool_call_id !== null && ids.has(t.tool_call_id))];
        skipped = run.filter((t) => t.tool_call_id === null || !ids.has(t.tool_call_id));
        nextEnd = j;
      } else {
        unit = [];
        skipped = run;
        nextEnd = j + 1;
      }
    } else {
      unit = [last];
      nextEnd = end - 1;
    }
    const cost = unit.reduce((sum, m) => sum + options.cost(m), 0);
    if (tokens + cost > options.budget) {
      cut = true;
      break;
    }
    if (unit.length > 0) units.push(unit);
    tokens += cost;
    for (const m of skipped) orphans.push(m.seq);
    end = nextEnd;
  }

  const messages = units.reverse().flat();
  const firstKept = messages.length > 0 ? messages[0]!.seq : null;
  let cutTo: number | null = null;
  if (cut) cutTo = firstKept === null ? buf[buf.length - 1]!.seq : firstKept - 1;
  return { messages, tokens, orphans: orphans.sort((a, b) => a - b), complete: !cut, cut_to: cutTo, read };
}
