/**
 * A turn as it happens in the terminal chat: the reply written as its pieces arrive (`message.delta`), and
 * one short line per task or action change (`task.updated`, `action.updated`) in the style of the task
 * panel (`■ type · STATE · status line`, `▸ tool · STATUS`).
 *
 * The change lines stay; the streamed reply is the bottom of the screen (a change that comes in the middle
 * of it is written above it: the reply is drawn again below). On a terminal, `finish` erases the streamed
 * reply so that the turn's usual screen (the reply beside the open tasks) takes its place; elsewhere (a
 * pipe), nothing can be taken back, so the streamed reply stays and only the tasks are shown after it.
 */

/** An event of the run, as the HTTP stream and the store both give it. */
export interface LiveEvent {
  readonly type: string;
  readonly data: Readonly<Record<string, unknown>>;
}

export interface LiveOutput {
  write(text: string): void;
  /** A terminal: lines can be erased. */
  readonly isTTY: boolean;
  readonly columns: number;
}

const WIDE = /[\u1100-\u115F\u2E80-\uA4CF\uAC00-\uD7A3\uF900-\uFAFF\uFE30-\uFE4F\uFF00-\uFF60\uFFE0-\uFFE6]/u;

/** Columns `text` takes in a terminal, roughly: wide East Asian characters take two, marks none. */
export function displayWidth(text: string): number {
  let width = 0;
  for (const char of text) {
    const code = char.codePointAt(0) ?? 0;
    // Combining marks, zero-width spaces and joiners, variation selectors.
    if ((code >= 0x300 && code <= 0x36f) || (code >= 0x200b && code <= 0x200f) || code === 0xfe0f) continue;
    width += WIDE.test(char) || code > 0xffff ? 2 : 1;
  }
  return width;
}

/** The rows `text` (lines without a line end) takes on a terminal `columns` wide. */
export function rowsOf(text: string, columns: number): number {
  return text
    .split('\n')
    .reduce((rows, line) => rows + Math.max(1, Math.ceil(displayWidth(line) / Math.max(1, columns))), 0);
}

function cut(text: string, width: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= width ? flat : `${flat.slice(0, Math.max(0, width - 1))}…`;
}

/** The line of a task change; null when the event says too little. */
export function taskChangeLine(data: Readonly<Record<string, unknown>>, width: number): string | null {
  if (typeof data.type !== 'string' || typeof data.state !== 'string') return null;
  const status =
    typeof data.status_line === 'string' && data.status_line !== '' ? ` · ${data.status_line}` : '';
  return cut(`■ ${data.type} · ${data.state}${status}`, width);
}

/** The line of an action change; null when the event says too little. */
export function actionChangeLine(data: Readonly<Record<string, unknown>>, width: number): string | null {
  if (typeof data.status !== 'string') return null;
  const tool = typeof data.tool === 'string' && data.tool !== '' ? data.tool : 'action';
  const attempts =
    typeof data.attempts === 'number' && data.attempts > 1 ? ` · attempt ${data.attempts}` : '';
  const error = data.error as { message?: unknown } | null | undefined;
  const why = typeof error?.message === 'string' ? ` · ${error.message}` : '';
  return cut(`▸ ${tool} · ${data.status}${attempts}${why}`, width);
}

export class LiveTurn {
  /** The reply streamed so far, as written (`agent> ` and indented continuation lines). */
  private shown = '';
  private readonly head: string;
  /** Some of the reply was streamed. */
  streamed = false;

  constructor(
    private readonly out: LiveOutput,
    speaker = 'agent',
  ) {
    this.head = `${speaker}> `;
  }

  event(event: LiveEvent): void {
    if (event.type === 'message.delta') {
      const text = typeof event.data.text === 'string' ? event.data.text : '';
      if (text !== '') this.delta(text);
      return;
    }
    const width = Math.max(20, this.out.columns - 3);
    const line =
      event.type === 'task.updated'
        ? taskChangeLine(event.data, width)
        : event.type === 'action.updated'
          ? actionChangeLine(event.data, width)
          : null;
    if (line !== null) this.line(`  ${line}`);
  }

  private delta(text: string): void {
    const indent = ' '.repeat(this.head.length);
    const indented = text.replace(/\r?\n/g, `\n${indent}`);
    // The reply's first piece, or its first after a change line on a pipe, begins its own line.
    const start = this.shown !== '' ? null : this.streamed ? indent : this.head;
    const piece = start === null ? indented : `${start}${indented.replace(/^\s+/, '')}`;
    if (piece === start) return;
    this.shown += piece;
    this.streamed = true;
    this.out.write(piece);
  }

  /** A change line above the reply being streamed (which is drawn again below it). */
  private line(text: string): void {
    if (this.shown === '') {
      this.out.write(`${text}\n`);
      return;
    }
    if (this.out.isTTY) {
      this.erase();
      this.out.write(`${text}\n${this.shown}`);
    } else {
      // A pipe cannot take the reply back: the line goes below it, and the reply goes on under it.
      this.out.write(`\n${text}\n`);
      this.shown = '';
    }
  }

  /** On a terminal, takes the streamed reply off the screen (the cursor ends where it began). */
  private erase(): void {
    if (this.shown === '') return;
    const up = rowsOf(this.shown, this.out.columns) - 1;
    this.out.write(`\r${up > 0 ? `\u001b[${up}A` : ''}\u001b[J`);
  }

  /**
   * The turn is over: on a terminal, with `replace`, the streamed reply is erased (the caller writes the
   * turn's screen in its place); otherwise its line is ended. Answers whether the streamed reply stays.
   */
  finish(replace: boolean): boolean {
    const erased = this.out.isTTY && replace;
    if (this.shown !== '') {
      if (erased) this.erase();
      else this.out.write('\n');
    }
    this.shown = '';
    return this.streamed && !erased;
  }
}
