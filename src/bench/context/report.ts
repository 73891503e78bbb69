/** The context benchmark's report as Markdown. */
import type { ContextBenchResult } from './bench.js';

export function contextBenchMarkdown(results: readonly ContextBenchResult[], when: string): string {
  const lines = [
    '# Context build: cost follows the window, not the history',
    '',
    `Run ${when}. Same budget for both sessions; builds alternate between them. Goal: long/short p50 <= 2.`,
    '',
    '| store | max tokens | history | p50 ms | p95 ms | mean ms | messages in window | messages read | tokens |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const r of results) {
    for (const s of [r.short, r.long]) {
      lines.push(
        `| ${r.store} | ${r.max_tokens} | ${s.history} | ${s.p50_ms} | ${s.p95_ms} | ${s.mean_ms} | ${s.messages_in_window} | ${s.messages_read} | ${s.token_count} |`,
      );
    }
  }
  lines.push(
    '',
    '| store | ratio p50 (long/short) | ratio p95 | goal met | reading the whole long history once (ms) |',
  );
  lines.push('| --- | ---: | ---: | --- | ---: |');
  for (const r of results) {
    lines.push(
      `| ${r.store} | ${r.ratio_p50} | ${r.ratio_p95} | ${r.ratio_p50 <= 2 ? 'yes' : 'NO'} | ${r.full_history_read_ms} |`,
    );
  }
  return `${lines.join('\n')}\n`;
}
