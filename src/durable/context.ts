/**
 * The context a durable run's code gets: every value that is not deterministic goes through the run's
 * journal (`RunContext.read`), and every write through a commit that carries a checkpoint of the journal
 * (`RunContext.commit`), so running the same code again over the journal replays the interrupted run.
 *
 * Calls are one at a time, in the order the code makes them: the journal is a sequence, and a replay
 * checks that the code asks for what was recorded, in the same order.
 */
import { cryptoRandom } from '../core/clock.js';
import { AgentStateError, invalidRequest, isAgentStateError } from '../core/errors.js';
import { assertPlainJson, type JsonObject, type JsonValue } from '../core/json.js';
import type { Task } from '../core/model.js';
import { sessionStatusPatch } from '../lifecycle/session-policy.js';
import type { RetryPolicy } from '../runtime/actions.js';
import type { CommitBatch, CommitResult, RunContext, RunIdentity } from '../runtime/run-context.js';
import type { SessionPatch } from '../store/types.js';
import { runAction } from './action.js';
import {
  type Codec,
  codecIn,
  decodeRecorded,
  jsonCodec,
  type MaybeTyped,
  roundTrip,
  type Typed,
} from './codec.js';
import { type Pause, RunPaused } from './signals.js';
import type { ActionHandlers, DurableContext, WaitOptions } from './types.js';

export const MAX_NAME_LENGTH = 200;
/** The longest `sleep`: about 24.8 days (what a timer can wait). */
export const MAX_SLEEP_MS = 2_147_483_647;

/** What a run's durable context stands for: the task its actions belong to, and the run's name and key. */
export interface RunTaskIdentity {
  readonly taskId: string;
  /** The type of the run's task. */
  readonly name: string;
  readonly key: string | null;
}

export interface ContextEnv {
  readonly policy: RetryPolicy;
  readonly waitingTtlSeconds: number | undefined;
  /** The input this call brought, when the run may take it (a new run, or one waiting for input). */
  readonly input: { readonly value: JsonValue } | null;
}

export function checkName(name: unknown, what: string): string {
  if (typeof name !== 'string' || name.length === 0 || name.length > MAX_NAME_LENGTH) {
    throw invalidRequest(`${what}: must be a string of 1 to ${MAX_NAME_LENGTH} characters`);
  }
  return name;
}

/** The codec of a value that was declared plain JSON (the overloads without a codec or a schema). */
function plain<T>(): Codec<T> {
  // Only reached through overloads that require T to be plain JSON.
  return jsonCodec() as Codec<T>;
}

function never(): Promise<never> {
  return Promise.reject(new AgentStateError('internal', 'a recorded value was expected here'));
}

export class DurableRunContext implements DurableContext {
  private busy = false;
  private over = false;
  private stopped: RunPaused | null = null;
  private actions = 0;
  private input: { readonly value: JsonValue } | null;
  private used = false;
  private unwritten = false;

  constructor(
    private readonly rt: RunContext<RunIdentity>,
    private readonly env: ContextEnv,
    private readonly identity: RunTaskIdentity,
  ) {
    this.input = env.input;
  }

  get runId(): string {
    return this.rt.header.run_id;
  }
  get sessionId(): string {
    return this.rt.header.session_id;
  }
  get taskId(): string {
    return this.identity.taskId;
  }
  get scope() {
    return this.rt.scope;
  }
  get replaying(): boolean {
    return this.rt.journal.replaying;
  }
  /** Why the run stopped, once it did. */
  get pause(): Pause | null {
    return this.stopped?.pause ?? null;
  }
  get inputUsed(): boolean {
    return this.used;
  }

  /** Called when `durableRun` returns: the context records nothing more. */
  close(): void {
    this.over = true;
  }

  /** One call at a time; after a pause, every call throws it again; none once the run is over. */
  private async guard<T>(work: () => Promise<T>): Promise<T> {
    if (this.over) throw invalidRequest('durable context: the run is over; it records nothing more');
    if (this.stopped !== null) throw this.stopped;
    if (this.busy) {
      throw invalidRequest('durable context: calls are one at a time (await each before the next)');
    }
    this.busy = true;
    try {
      return await work();
    } catch (error) {
      if (error instanceof RunPaused) this.stopped = error;
      throw error;
    } finally {
      this.busy = false;
    }
  }

  /**
   * A commit whose batch is built only when it is written now (a replayed commit is not written again),
   * from the records as they are then; a session changed meanwhile is read again, once.
   */
  private async commitWith(
    label: string,
    build: () => Promise<CommitBatch | null>,
  ): Promise<{ result: CommitResult; replayed: boolean }> {
    if (this.rt.journal.nextIs('commit')) return this.rt.commit(label, null, this.taskId);
    try {
      return await this.rt.commit(label, await build(), this.taskId);
    } catch (error) {
      if (!isAgentStateError(error, 'version_conflict')) throw error;
      return this.rt.commit(label, await build(), this.taskId);
    }
  }

  private async task(): Promise<Task> {
    const task = await this.rt.store.getTask(this.rt.scope, this.taskId);
    if (task === null) throw new AgentStateError('not_found', `the run's task ${this.taskId} is gone`);
    return task;
  }

  /** The run's task patched, and the session moved to `status` when it is not there yet. */
  private async taskAndSession(
    patch: (task: Task) => CommitBatch['update_tasks'],
    status: 'active' | 'waiting_for_user' | null,
  ): Promise<CommitBatch> {
    const { store, scope } = this.rt;
    const task = await this.task();
    let session: CommitBatch['session'];
    if (status !== null) {
      const current = await store.getSession(scope, this.sessionId);
      const moves = current !== null && current.status !== status;
      const from = status === 'active' ? current?.status === 'waiting_for_user' : moves;
      if (current !== null && from) {
        const change: SessionPatch = sessionStatusPatch(current, status, {
          ...(this.env.waitingTtlSeconds === undefined
            ? {}
            : { waitingTtlSeconds: this.env.waitingTtlSeconds }),
        });
        session = { id: current.id, expected_version: current.version, patch: change };
      }
    }
    return { update_tasks: patch(task), ...(session === undefined ? {} : { session }) };
  }

  /** The task that stands for the run while it is open. */
  private taskBatch(): CommitBatch {
    const { taskId, name, key } = this.identity;
    const { header } = this.rt;
    return {
      create_tasks: [
        {
          id: taskId,
          session_id: header.session_id,
          type: name,
          state: 'EXECUTING',
          status_line: 'running',
          data: { durable: true, run_id: header.run_id, key },
        },
      ],
    };
  }

  /** The run's first commit: its task (standing for the run while it is open) and its first checkpoint. */
  async start(): Promise<void> {
    await this.rt.commit('start', this.taskBatch(), this.taskId);
  }

  /**
   * For a run that writes its own first and last commits (a turn's tool loop): its task is written by the
   * commit that begins its first action, so a run that calls no tool writes no task.
   */
  startWithFirstAction(): void {
    this.unwritten = true;
  }

  /** Whether the run's task was written (always, but after `startWithFirstAction` and no action yet). */
  get taskWritten(): boolean {
    return !this.unwritten;
  }

  /** The run's last commit: its task DONE with the result, or FAILED with the error. */
  async finish(outcome: { readonly result: JsonValue } | { readonly error: JsonObject }): Promise<string> {
    const done = 'result' in outcome;
    const { result } = await this.commitWith(done ? 'done' : 'failed', () =>
      this.taskAndSession((task) => {
        const { waiting: _waiting, ...data } = task.data;
        return [
          {
            id: task.id,
            expected_version: task.version,
            patch: {
              state: done ? 'DONE' : 'FAILED',
              status_line: done ? 'done' : `failed: ${String(outcome.error.message)}`.slice(0, 500),
              data: { ...data, ...outcome },
              cause: done ? 'the run finished' : 'the run failed',
            },
          },
        ];
      }, null),
    );
    return result.checkpoint_id;
  }

  step<T extends JsonValue>(name: string, fn: () => Promise<T> | T): Promise<T>;
  step<T>(name: string, fn: () => Promise<T> | T, typed: Typed<T>): Promise<T>;
  step<T>(name: string, fn: () => Promise<T> | T, typed?: MaybeTyped<T>): Promise<T> {
    return this.guard(async () => {
      checkName(name, 'step name');
      if (typeof fn !== 'function') throw invalidRequest(`step ${name}: fn must be a function`);
      const codec: Codec<T> = codecIn(typed, `step ${name}`) ?? plain<T>();
      const made: { fresh: { readonly value: T } | null } = { fresh: null };
      const json = await this.rt.read(`step:${name}`, async () => {
        const produced = roundTrip(codec, await fn(), `step ${name}`);
        made.fresh = { value: produced.value };
        return produced.json;
      });
      await this.commitWith(`step ${name}`, async () => null);
      return made.fresh === null ? decodeRecorded(codec, json, `step ${name}`) : made.fresh.value;
    });
  }

  action<R extends JsonValue>(name: string, params: JsonValue, handlers: ActionHandlers<R>): Promise<R>;
  action<R>(name: string, params: JsonValue, handlers: ActionHandlers<R> & Typed<R>): Promise<R>;
  action<R>(name: string, params: JsonValue, handlers: ActionHandlers<R> & MaybeTyped<R>): Promise<R> {
    return this.guard(async () => {
      checkName(name, 'action name');
      assertPlainJson(params, `action ${name} params`);
      if (typeof handlers?.run !== 'function')
        throw invalidRequest(`action ${name}: handlers.run must be a function`);
      if (handlers.lookup !== undefined && typeof handlers.lookup !== 'function')
        throw invalidRequest(`action ${name}: handlers.lookup must be a function when given`);
      const codec: Codec<R> = codecIn(handlers, `action ${name}`) ?? plain<R>();
      const ordinal = this.actions++;
      const withTask = this.unwritten ? this.taskBatch() : null;
      this.unwritten = false;
      const env = { rt: this.rt, taskId: this.taskId, policy: this.env.policy, withBegin: withTask };
      return runAction(env, ordinal, name, params, handlers, codec);
    });
  }

  now(): Promise<number> {
    return this.guard(() => this.rt.now());
  }

  random(): Promise<number> {
    return this.guard(async () => {
      const value = await this.rt.read('random', async () => {
        const bytes = cryptoRandom(6);
        let n = 0;
        for (const byte of bytes) n = n * 256 + byte;
        return n / 2 ** 48;
      });
      if (typeof value !== 'number')
        throw new AgentStateError('internal', 'the recorded random value is not a number');
      return value;
    });
  }

  sleep(ms: number): Promise<void> {
    return this.guard(async () => {
      if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0 || ms > MAX_SLEEP_MS)
        throw invalidRequest(`sleep: ms must be a number from 0 to ${MAX_SLEEP_MS}, got ${String(ms)}`);
      const { clock } = this.rt;
      const until = await this.rt.read('sleep', async () => clock.now() + ms);
      if (typeof until !== 'number')
        throw new AgentStateError('internal', 'the recorded wake-up time is not a number');
      // The deadline is stored before the wait: a run resumed later waits only what is left of it.
      await this.commitWith('sleep', async () => null);
      const left = until - clock.now();
      if (left > 0) await new Promise((resolve) => setTimeout(resolve, left));
    });
  }

  waitForInput(options?: WaitOptions): Promise<JsonValue>;
  waitForInput<T>(options: WaitOptions & Typed<T>): Promise<T>;
  waitForInput<T>(options?: WaitOptions & MaybeTyped<T>): Promise<T> {
    return this.guard(async () => {
      const prompt = options?.prompt ?? null;
      if (prompt !== null && typeof prompt !== 'string')
        throw invalidRequest('waitForInput: prompt must be a string');
      const codec: Codec<T> = codecIn(options, 'waitForInput') ?? plain<T>();
      const { journal } = this.rt;
      if (journal.nextIs('input')) {
        return decodeRecorded(codec, await this.rt.read('input', never), 'input');
      }
      // The run paused here before: its 'wait' and the commit that recorded it are replayed.
      const waited = journal.nextIs('wait');
      if (waited) {
        await this.rt.read('wait', never);
        await this.commitWaiting(prompt);
        if (journal.nextIs('input')) {
          const recorded = decodeRecorded(codec, await this.rt.read('input', never), 'input');
          await this.commitAnswered();
          return recorded;
        }
      }
      const given = this.input;
      let decoded: { readonly value: T } | null = null;
      let invalid: AgentStateError | null = null;
      if (given !== null) {
        try {
          decoded = { value: codec.decode(given.value) };
        } catch (error) {
          invalid = isAgentStateError(error)
            ? invalidRequest(`input: ${error.message}`, error.details)
            : invalidRequest(`input: ${error instanceof Error ? error.message : String(error)}`);
        }
      }
      if (given === null || decoded === null) {
        if (!waited) {
          await this.rt.read('wait', async () => prompt);
          await this.commitWaiting(prompt);
        }
        throw new RunPaused({ kind: 'waiting', prompt, invalid });
      }
      this.input = null;
      this.used = true;
      await this.rt.read('input', async () => given.value);
      if (waited) await this.commitAnswered();
      return decoded.value;
    });
  }

  /** The run waits: its task says for what, and the session waits for its user (with the longer TTL). */
  private async commitWaiting(prompt: string | null): Promise<void> {
    await this.commitWith('waiting', () =>
      this.taskAndSession(
        (task) => [
          {
            id: task.id,
            expected_version: task.version,
            patch: {
              status_line: prompt === null ? 'waiting for input' : `waiting for input: ${prompt}`,
              data: { ...task.data, waiting: { prompt } },
            },
          },
        ],
        'waiting_for_user',
      ),
    );
  }

  /** The input arrived: the run runs again, and so does its session. */
  private async commitAnswered(): Promise<void> {
    await this.commitWith('input', () =>
      this.taskAndSession((task) => {
        const { waiting: _waiting, ...data } = task.data;
        return [{ id: task.id, expected_version: task.version, patch: { status_line: 'running', data } }];
      }, 'active'),
    );
  }
}
