/**
 * One run of a turn: its journal, its checkpoints and its commits. Every commit carries a checkpoint (in the
 * same atomic batch) whose `journal` channel holds everything recorded so far, so "commit k happened" and
 * "checkpoint k exists" are one fact. A resumed run replays commits it finds in the journal instead of
 * writing them again; the last one's result is read back from the store, which holds exactly its writes.
 */
import type { Clock } from '../core/clock.js';
import { AgentStateError } from '../core/errors.js';
import { newId } from '../core/ids.js';
import type { JsonObject, JsonValue } from '../core/json.js';
import type { Action, Message, Session, Task } from '../core/model.js';
import { inSpan, traceparentOf } from '../observability/tracing.js';
import type { NewRunEvent, Scope, StateStore, TurnBatch, TurnResult } from '../store/types.js';
import type { CancelWatch } from './cancel.js';
import { reloadCommit } from './commit-reload.js';
import { Journal, type JournalEntry } from './journal.js';
import type { HeldLease } from './lease.js';
import type { RunEventLog } from './run-events.js';
import type { RunMarkWrites } from './run-marks.js';

/** What a commit returns to the run (plain JSON, so it is recorded). */
export interface CommitResult {
  readonly session: Session | null;
  readonly tasks: Task[];
  readonly actions: Action[];
  readonly checkpoint_id: string;
  /** With the batch's `list_open_tasks`: the session's open tasks after the commit (none when replayed). */
  readonly open_tasks?: Task[];
}

export type CommitBatch = Omit<TurnBatch, 'checkpoint'>;

interface CommitMarker {
  readonly step: number;
  readonly label: string;
  readonly checkpoint_id: string;
  /** The traceparent of the span that made the commit (the attempt that wrote it), when traced. */
  readonly tp?: string;
}

/** What every run's header holds: recorded in each checkpoint's `run` channel, with whatever else it names. */
export interface RunIdentity {
  readonly run_id: string;
  readonly session_id: string;
  readonly [field: string]: JsonValue;
}

export interface RunHeader extends RunIdentity {
  readonly agent: string;
  readonly model: string;
  readonly input: string;
}

/** How long a deferred checkpoint waits for the run's next commit before it is sent on its own (ms). */
export const DEFERRED_CHECKPOINT_MS = 50;

/** A deferred checkpoint-only commit, recorded in the journal but not sent yet. */
interface WaitingCheckpoint {
  /** Sends it (once); its write is then in flight. */
  readonly send: () => void;
  /** Where its two journal entries (the commit's marker and result) are. */
  readonly journalAt: number;
  readonly step: number;
  readonly parentId: string | null;
  readonly timer: NodeJS.Timeout;
  /** Left out of the journal by a final commit that did not succeed (yet): sent if the run fails. */
  dropped: boolean;
}

export class RunContext<H extends RunIdentity = RunHeader> {
  readonly journal: Journal;
  private nextStep = 0;
  private parentId: string | null = null;
  lastCheckpointId: string | null = null;
  /** Messages the commits of this attempt appended (not those of replayed commits), with their seqs. */
  readonly appended: Message[] = [];
  /**
   * The run's lease, when its final commit (label 'turn') is to free it in the same write: a round trip
   * fewer per turn. Null (the default) leaves the lease to its holder.
   */
  freeWithFinalCommit: HeldLease | null = null;
  /**
   * The write of a deferred checkpoint-only commit, still in flight: the next commit (and `settle`) waits for
   * it and throws its error. Handled at once, so a run that fails first leaves no unhandled rejection.
   */
  private inFlight: Promise<void> | null = null;
  /** A deferred checkpoint not sent yet (see `commit`). */
  private waiting: WaitingCheckpoint | null = null;
  /**
   * The traceparent of this attempt's run span (null when not traced): kept in each checkpoint's metadata, so
   * an attempt that resumes the run links to this one.
   */
  traceparent: string | null = null;
  /** The run's event log: its commits carry its waiting events, and events of what they write. */
  events: RunEventLog | null = null;
  /**
   * The run's last events, built inside a commit that ends an attempt (label 'turn' for a turn's run; a
   * durable run's `done`, `failed` and `waiting`) from what that commit wrote and its `extra` channels;
   * `beforeFinal` runs first, outside it, to read what the event needs.
   */
  finalEvent:
    | ((written: TurnResult, extra: JsonObject, checkpointId: string, label: string) => NewRunEvent)
    | null = null;
  /** The labels of the commits that end an attempt (see `finalEvent`). */
  finalLabels: readonly string[] = ['turn'];
  beforeFinal: ((extra: JsonObject, batch: CommitBatch) => Promise<void>) | null = null;
  /**
   * The run's recovery mark, written and removed with its commits (run-marks.ts); null: the run has none.
   */
  marks: RunMarkWrites | null = null;
  /** Cancel requests for the run, looked at its safe points (cancel.ts); null: it cannot be cancelled. */
  cancel: CancelWatch | null = null;
  /**
   * How long a deferred checkpoint waits for the run's next commit before it is sent on its own (ms; see
   * `commitLater`).
   */
  deferMs = DEFERRED_CHECKPOINT_MS;
  /** Actions this attempt began: after the first, a model call is no safe point any more. */
  private begun = 0;
  /** Every task the run's commits wrote (replayed ones included), as the last one left it. */
  readonly written = { tasks: new Map<string, Task>() };

  constructor(
    readonly store: StateStore,
    readonly scope: Scope,
    readonly header: H,
    readonly clock: Clock,
    recorded: readonly JournalEntry[],
    private readonly onCommit: () => Promise<void>,
  ) {
    this.journal = new Journal(recorded);
  }

  /** Checkpoints the run has written so far (those of earlier attempts included, when resumed). */
  get checkpointCount(): number {
    return this.nextStep;
  }

  get runId(): string {
    return this.header.run_id;
  }

  /** A non-deterministic value: recorded now, or replayed from the journal. */
  read<T extends JsonValue>(kind: string, produce: () => Promise<T>): Promise<T> {
    if (this.cancel === null || !kind.startsWith('model.')) return this.journal.step(kind, produce);
    return this.journal.step(kind, async () => {
      if (this.begun === 0) await this.cancel?.check();
      return produce();
    });
  }

  now(): Promise<number> {
    return this.read('clock', async () => this.clock.now());
  }

  /** Sends a deferred checkpoint still waiting, waits for its write (see `commit`), throws its error. */
  settle(): Promise<void> {
    this.waiting?.send();
    return this.inFlightDone();
  }

  /** Waits for the write in flight, if any, and throws its error. */
  private async inFlightDone(): Promise<void> {
    const write = this.inFlight;
    this.inFlight = null;
    if (write !== null) await write;
  }

  /**
   * A checkpoint alone, deferred: the commit is recorded and the run goes on without waiting for its
   * write. The write is sent by the run's next checkpoint alone, by `settle`, by the run's first stored
   * event (a streamed text, `run.failed`) or after `deferMs`, whichever comes first. When
   * the run's next commit with a batch comes before any of these (nothing stored in between), the deferred
   * checkpoint is never written: the journal drops its entries, so that commit's checkpoint holds what a run
   * without it would have recorded, and the run writes once instead of twice. A commit waits for a deferred
   * write in flight and throws its error.
   *
   * Nothing outside the run sees the difference: the answer comes only after the final commit, and a side
   * effect only after a commit that begins its action or, for an action an earlier run left behind, after
   * `settle` (`executeTask`), so the run has a stored checkpoint before either. A process killed before the
   * first commit of a run that stored nothing leaves no run to resume: as if the run had not begun (a retry
   * with the same input runs it; a recovery mark written meanwhile finds no run and is removed). A resumed
   * run passes over a deferred checkpoint whose marker its journal lacks (a later commit took it in).
   */
  async commitLater(label: string): Promise<void> {
    if (this.journal.replaying && !this.journal.nextIsCommit(label)) return;
    await this.commit(label, null, null, {}, true);
  }

  /**
   * Writes `batch` and a checkpoint atomically (a checkpoint alone when `batch` is null), or replays the
   * commit when the journal shows it happened. `replayed` tells the caller which. `deferred`: see
   * `commitLater`.
   */
  async commit(
    label: string,
    batch: CommitBatch | null,
    taskId: string | null,
    extra: JsonObject = {},
    deferred = false,
  ): Promise<{ result: CommitResult; replayed: boolean; recordedBy?: string }> {
    if (deferred && batch !== null)
      throw new AgentStateError('internal', `commit ${label}: only a checkpoint alone can be deferred`);
    const final = this.finalLabels.includes(label) ? this.finalEvent : null;
    if (batch === null) this.waiting?.send();
    await this.inFlightDone();
    const marker = this.journal.replayMarker('commit') as CommitMarker | undefined;
    if (marker !== undefined) {
      this.nextStep = marker.step + 1;
      this.parentId = marker.checkpoint_id;
      this.lastCheckpointId = marker.checkpoint_id;
      const result = (await this.journal.step('commit.result', async () =>
        reloadCommit(this.store, this.scope, batch, marker.checkpoint_id),
      )) as unknown as CommitResult;
      this.remember(result);
      this.begun += batch?.begin_actions?.length ?? 0;
      return { result, replayed: true, ...(typeof marker.tp === 'string' ? { recordedBy: marker.tp } : {}) };
    }
    // A commit that begins an action is a safe point: every earlier action of the run has its outcome.
    if (batch !== null && (batch.begin_actions?.length ?? 0) > 0) {
      await this.cancel?.check();
      this.begun += batch.begin_actions?.length ?? 0;
    }
    if (final !== null && batch !== null) await this.beforeFinal?.(extra, batch);
    if (batch !== null) {
      // A deferred checkpoint not sent yet is folded into this one (see `commitLater`); one its timer or a
      // streamed text sent meanwhile lands first.
      this.dropWaiting(final !== null);
      await this.inFlightDone();
    }
    const journalAt = this.journal.entries.length;
    const checkpointId = newId('checkpoint');
    const tp = traceparentOf();
    const mark: CommitMarker = {
      step: this.nextStep,
      label,
      checkpoint_id: checkpointId,
      ...(tp === null ? {} : { tp }),
    };
    const undo = this.journal.mark('commit', { ...mark });
    const checkpoint = {
      id: checkpointId,
      run_id: this.header.run_id,
      session_id: this.header.session_id,
      task_id: taskId,
      step: mark.step,
      parent_id: this.parentId,
      label,
      channels: { run: { ...this.header }, journal: this.journal.entries.map((e) => ({ ...e })), ...extra },
      metadata: {
        label,
        replayed_entries: this.journal.replayed,
        ...(this.traceparent === null ? {} : { traceparent: this.traceparent }),
      },
    };
    const traced = {
      'agentstate.checkpoint.label': label,
      'agentstate.checkpoint.step': mark.step,
      'agentstate.run.id': this.header.run_id,
      'agentstate.checkpoint.with_batch': batch !== null,
    };
    let summary: CommitResult;
    try {
      const log = this.events;
      const events = (withFinal: boolean) =>
        log === null
          ? {}
          : {
              events: {
                // The log's run: this run's own, or the run it streams into (a turn running an agent's code).
                session_id: log.sessionId,
                run_id: log.runId,
                items: log.take(),
                ...(withFinal && final !== null
                  ? { final: (written: TurnResult) => final(written, extra, checkpointId, label) }
                  : {}),
              },
            };
      // The events are taken now, when the write joins the log's queue, as a flush of streamed text takes
      // its own: events are stored in the order they were taken (text taken by a flush queued after this
      // commit would otherwise be stored after the run's final event).
      if (batch === null) {
        // The events are taken when the write is sent (a deferred one's later: what the run added since).
        const send = (): Promise<void> => {
          const taken = events(false);
          const put = async (): Promise<void> => {
            if (log === null) await this.store.putCheckpoint(this.scope, checkpoint);
            else await this.store.commitTurn(this.scope, { checkpoint, ...taken });
          };
          return inSpan('agentstate.checkpoint', traced, () => (log === null ? put() : log.serial(put)));
        };
        if (deferred) this.defer(send, { journalAt, step: mark.step, parentId: this.parentId });
        else await send();
        summary = { session: null, tasks: [], actions: [], checkpoint_id: checkpointId };
      } else {
        const lease = label === 'turn' && this.freeWithFinalCommit?.held ? this.freeWithFinalCommit : null;
        const release =
          lease === null
            ? {}
            : { release_lease: { name: lease.name, owner: lease.owner, expires_at: lease.expiresAt } };
        const taken = events(true);
        const beginsAction = (batch.begin_actions?.length ?? 0) > 0;
        const mark = this.marks?.part({ beginsAction, ends: final !== null }) ?? null;
        const other = mark === null ? {} : { other_memory: mark };
        const write = () =>
          this.store.commitTurn(this.scope, { ...batch, checkpoint, ...release, ...taken, ...other });
        const done = await inSpan('agentstate.checkpoint', traced, () =>
          log === null ? write() : log.serial(write),
        ).catch((error: unknown) => {
          // Not written: its events wait for the run's next write (a retry of the commit, `run.failed`).
          if (log !== null && taken.events !== undefined) log.putBack(taken.events.items);
          throw error;
        });
        this.forgetWaiting();
        if (mark !== null) this.marks?.written(mark);
        if (done.lease_released === true) lease?.releasedWith();
        this.appended.push(...done.messages);
        summary = {
          session: done.session,
          tasks: done.tasks,
          actions: done.actions,
          checkpoint_id: checkpointId,
          ...(done.open_tasks === undefined ? {} : { open_tasks: done.open_tasks }),
        };
      }
    } catch (error) {
      undo.undo();
      throw error;
    }
    this.nextStep = mark.step + 1;
    this.parentId = checkpointId;
    this.lastCheckpointId = checkpointId;
    this.remember(summary);
    await this.onCommit();
    const result = (await this.journal.step(
      'commit.result',
      async () => summary as unknown as JsonValue,
    )) as unknown;
    return { result: result as CommitResult, replayed: false };
  }

  /** Holds a deferred checkpoint's write until it is needed (see `commit`). */
  private defer(
    send: () => Promise<void>,
    at: Pick<WaitingCheckpoint, 'journalAt' | 'step' | 'parentId'>,
  ): void {
    const sendNow = (): void => {
      if (this.waiting !== waiting) return;
      this.forgetWaiting();
      const settled = send().then(() => undefined);
      settled.catch(() => undefined);
      this.inFlight = settled;
    };
    const timer = setTimeout(sendNow, this.deferMs);
    timer.unref();
    const waiting: WaitingCheckpoint = { ...at, send: sendNow, timer, dropped: false };
    this.waiting = waiting;
    if (this.events !== null) this.events.beforeWrite = sendNow;
  }

  /**
   * A commit with a batch comes next: the waiting checkpoint leaves the journal, unwritten. Dropped for a
   * final commit, it is still sent if the run fails (`settle`, an event stored on its own), so the next turn
   * with the same input resumes the run. Dropped for any other commit, it is forgotten: had that commit
   * landed with its error lost, the checkpoint sent after it would stand as the run's latest without it.
   */
  private dropWaiting(final: boolean): void {
    const waiting = this.waiting;
    if (waiting === null || waiting.dropped) return;
    waiting.dropped = true;
    clearTimeout(waiting.timer);
    this.journal.drop(waiting.journalAt, 2);
    this.nextStep = waiting.step;
    this.parentId = waiting.parentId;
    this.lastCheckpointId = waiting.parentId;
    if (!final) this.forgetWaiting();
  }

  private forgetWaiting(): void {
    if (this.waiting === null) return;
    clearTimeout(this.waiting.timer);
    this.waiting = null;
    if (this.events !== null) this.events.beforeWrite = null;
  }

  private remember(result: CommitResult): void {
    for (const task of result.tasks) this.written.tasks.set(task.id, task);
  }
}
