/**
 * A turn's time as what it reads grows: the session's conversation (messages) and the user's finished tasks.
 * A turn reads the session's head (newest message, open tasks) and writes its batch; none of it should read
 * past history, so the time of a turn at 20,000 messages or 5,000 finished tasks is the time at none.
 */
import { createBuiltinAgents } from '../../agents/index.js';
import type { TaskState } from '../../core/model.js';
import { createAgentRuntime } from '../../runtime/runtime.js';
import { createToolRegistry } from '../../runtime/tool.js';
import type { Scope, StateStore } from '../../store/types.js';
import { percentile } from '../checkpoint/measure.js';

export interface GrowthLevel {
  /** Messages in the session, or finished tasks of the user, when the turns ran. */
  readonly size: number;
  readonly turns: number;
  readonly p50_ms: number;
  readonly p95_ms: number;
}

export interface GrowthAxis {
  readonly axis: 'messages' | 'finished_tasks';
  readonly levels: GrowthLevel[];
  /** p50 at the largest size over p50 at the smallest: 1 when a turn does not read history. */
  readonly growth_p50: number;
}

export interface GrowthBenchResult {
  readonly store: string;
  readonly axes: GrowthAxis[];
}

export interface GrowthBenchOptions {
  readonly store: StateStore;
  readonly label: string;
  readonly messageLevels: readonly number[];
  readonly taskLevels: readonly number[];
  /** Timed turns per level. */
  readonly turns: number;
  readonly onProgress?: (text: string) => void;
}

const INPUTS = ['hello there', 'what can you do?'];
const FINISHED: readonly TaskState[] = ['DONE', 'CANCELLED'];
const BATCH = 100;

const ms = (value: number) => Math.round(value * 100) / 100;

export async function runGrowthBench(options: GrowthBenchOptions): Promise<GrowthBenchResult> {
  const { store, label } = options;
  const runtime = createAgentRuntime({ store, agents: createBuiltinAgents(), tools: createToolRegistry([]) });
  const say = options.onProgress ?? (() => {});

  /** One untimed turn (it may compact what was just added), then the timed ones. */
  const timeTurns = async (scope: Scope, sessionId: string, size: number): Promise<GrowthLevel> => {
    await runtime.turn(scope, sessionId, INPUTS[0] as string);
    const times: number[] = [];
    for (let i = 0; i < options.turns; i++) {
      const started = performance.now();
      await runtime.turn(scope, sessionId, INPUTS[i % INPUTS.length] as string);
      times.push(performance.now() - started);
    }
    times.sort((a, b) => a - b);
    return {
      size,
      turns: times.length,
      p50_ms: ms(percentile(times, 50)),
      p95_ms: ms(percentile(times, 95)),
    };
  };

  const axis = (name: GrowthAxis['axis'], levels: GrowthLevel[]): GrowthAxis => {
    const first = levels[0]?.p50_ms ?? 0;
    const last = levels[levels.length - 1]?.p50_ms ?? 0;
    return { axis: name, levels, growth_p50: first > 0 ? Math.round((last / first) * 100) / 100 : 0 };
  };

  // Warm-up: the first turns of a process compile the code they run.
  const warm: Scope = { tenant_id: `growth-${label}`, user_id: 'warm-up' };
  const warmSession = await store.createSession(warm, { agent: 'assistant' });
  await timeTurns(warm, warmSession.id, 0);

  // The conversation grows: messages appended in batches between the levels (the turns add theirs too).
  const talker: Scope = { tenant_id: `growth-${label}`, user_id: 'talker' };
  const talk = await store.createSession(talker, { agent: 'assistant' });
  const byMessages: GrowthLevel[] = [];
  for (const target of options.messageLevels) {
    let count = (await store.getSessionHead(talker, talk.id))?.last_message?.seq ?? 0;
    while (count < target) {
      const n = Math.min(BATCH, target - count);
      const items = Array.from({ length: n }, (_, i) => ({
        role: (count + i) % 2 === 0 ? ('user' as const) : ('assistant' as const),
        content: `message ${count + i}: a line of an old conversation about trips and builds`,
      }));
      await store.appendMessages(talker, talk.id, items);
      count += n;
    }
    const level = await timeTurns(talker, talk.id, count);
    byMessages.push(level);
    say(`${label}: ${count} messages, turn p50 ${level.p50_ms} ms`);
  }

  // The user's history grows: finished tasks in this session and in the user's other sessions.
  const booker: Scope = { tenant_id: `growth-${label}`, user_id: 'booker' };
  const here = await store.createSession(booker, { agent: 'assistant' });
  const elsewhere = await store.createSession(booker, { agent: 'assistant' });
  const byTasks: GrowthLevel[] = [];
  let made = 0;
  for (const target of options.taskLevels) {
    for (; made < target; made++) {
      await store.createTask(booker, {
        type: 'flight_booking',
        session_id: made % 2 === 0 ? here.id : elsewhere.id,
        state: FINISHED[made % FINISHED.length] as TaskState,
      });
    }
    const level = await timeTurns(booker, here.id, made);
    byTasks.push(level);
    say(`${label}: ${made} finished tasks, turn p50 ${level.p50_ms} ms`);
  }
  return { store: label, axes: [axis('messages', byMessages), axis('finished_tasks', byTasks)] };
}

export function growthBenchMarkdown(results: readonly GrowthBenchResult[], when: string): string {
  const lines = [
    '# A turn against a growing history',
    '',
    `Run ${when}. A turn of the \`assistant\` agent, timed in-process through the runtime (no HTTP), as the`,
    "session's conversation and the user's finished tasks grow. `growth` is the p50 at the largest size over",
    'the p50 at the smallest: 1 means a turn does not read history.',
    '',
    '| store | grows | size | turns | p50 ms | p95 ms |',
    '| --- | --- | --- | --- | --- | --- |',
  ];
  for (const result of results)
    for (const axis of result.axes)
      for (const level of axis.levels)
        lines.push(
          `| ${result.store} | ${axis.axis} | ${level.size} | ${level.turns} | ${level.p50_ms} | ${level.p95_ms} |`,
        );
  lines.push('', '| store | grows | growth (p50) |', '| --- | --- | --- |');
  for (const result of results)
    for (const axis of result.axes) lines.push(`| ${result.store} | ${axis.axis} | ${axis.growth_p50} |`);
  return `${lines.join('\n')}\n`;
}
