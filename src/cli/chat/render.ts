/**
 * The chat screen: the agent's reply on the left, the open tasks (state, slots, status line) beside it on
 * the right; stacked when the terminal is narrow.
 */
import type { JsonValue } from '../../core/json.js';
import type { Task } from '../../core/model.js';

const SIDE_BY_SIDE_MIN = 90;

export function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  for (const paragraph of text.split('\n')) {
    let line = '';
    for (const word of paragraph.split(/\s+/).filter((w) => w !== '')) {
      if (line !== '' && line.length + 1 + word.length > width) {
        lines.push(line);
        line = '';
      }
      line = line === '' ? word : `${line} ${word}`;
      while (line.length > width) {
        lines.push(line.slice(0, width));
        line = line.slice(width);
      }
    }
    lines.push(line);
  }
  return lines;
}

function slotText(value: JsonValue): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

export function taskLines(tasks: readonly Task[], width: number): string[] {
  if (tasks.length === 0) return ['no open tasks'];
  const lines: string[] = [];
  for (const task of tasks) {
    lines.push(`■ ${task.type} · ${task.state}`);
    const slots = Object.entries(task.slots).map(([k, v]) => `${k}=${slotText(v)}`);
    if (slots.length > 0) lines.push(...wrap(`slots: ${slots.join(', ')}`, width - 2).map((l) => `  ${l}`));
    lines.push(...wrap(task.status_line, width - 2).map((l) => `  ${l}`));
  }
  return lines;
}

export function renderTurn(speaker: string, reply: string, tasks: readonly Task[], columns: number): string {
  const head = `${speaker}> `;
  if (columns < SIDE_BY_SIDE_MIN) {
    const left = wrap(reply, Math.max(20, columns - head.length));
    const body = left.map((l, i) => (i === 0 ? head : ' '.repeat(head.length)) + l);
    return [...body, '', ...taskLines(tasks, columns - 2).map((l) => `  ${l}`)].join('\n');
  }
  const leftWidth = Math.floor(columns * 0.5) - head.length;
  const rightWidth = columns - leftWidth - head.length - 3;
  const left = wrap(reply, leftWidth).map((l, i) => (i === 0 ? head : ' '.repeat(head.length)) + l);
  const right = ['tasks', ...taskLines(tasks, rightWidth)];
  const rows = Math.max(left.length, right.length);
  const out: string[] = [];
  for (let i = 0; i < rows; i++) {
    out.push(`${(left[i] ?? '').padEnd(leftWidth + head.length)} │ ${right[i] ?? ''}`.trimEnd());
  }
  return out.join('\n');
}
