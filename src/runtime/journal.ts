/**
 * The run journal: every non-deterministic result of a run (store reads, clock, random values, model
 * answers, tool outcomes) and every commit, in order. It is saved in each checkpoint; a resumed run executes
 * the same code again and takes recorded results from the journal instead of calling again, so its output
 * is that of a run that was never interrupted.
 */
import { AgentStateError } from '../core/errors.js';
import { assertPlainJson, type JsonValue } from '../core/json.js';

export interface JournalEntry {
  /** What produced the value: 'load', 'clock', 'random', 'model.extract', 'tool', 'commit', ... */
  readonly k: string;
  readonly v: JsonValue;
}

export class Journal {
  private readonly recorded: readonly JournalEntry[];
  private position = 0;
  readonly entries: JournalEntry[];

  constructor(recorded: readonly JournalEntry[] = []) {
    this.recorded = recorded;
    this.entries = [...recorded];
  }

  /** True while entries recorded by an earlier process remain to be replayed. */
  get replaying(): boolean {
    return this.position < this.recorded.length;
  }

  /** How many entries came from an earlier process. */
  get replayed(): number {
    return Math.min(this.position, this.recorded.length);
  }

  /** The next recorded entry when it is of `kind`; throws when the run took a different path. */
  private take(kind: string): JournalEntry | null {
    if (this.position >= this.recorded.length) return null;
    const entry = this.recorded[this.position]!;
    if (entry.k !== kind) {
      throw new AgentStateError(
        'internal',
        `replay diverged at journal entry ${this.position}: the run asks for ${kind} but ${entry.k} was recorded (did the agent's code change?)`,
        { details: { position: this.position, expected: entry.k, actual: kind } },
      );
    }
    this.position++;
    return entry;
  }

  /** The recorded value of the next step of `kind`, or the value `produce` gives now (recorded). */
  async step<T extends JsonValue>(kind: string, produce: () => Promise<T>): Promise<T> {
    const entry = this.take(kind);
    if (entry !== null) return entry.v as T;
    const value = await produce();
    assertPlainJson(value, `journal.${kind}`);
    this.entries.push({ k: kind, v: value });
    this.position++;
    return value;
  }

  /** The recorded marker of `kind` when one is next (the step happened before), else undefined. */
  replayMarker(kind: string): JsonValue | undefined {
    const entry = this.take(kind);
    return entry === null ? undefined : entry.v;
  }

  /** Records a marker now; `undo` removes it again when the step it marks did not happen. */
  mark(kind: string, value: JsonValue): { undo: () => void } {
    this.entries.push({ k: kind, v: value });
    this.position++;
    return {
      undo: () => {
        this.entries.pop();
        this.position--;
      },
    };
  }

  /**
   * Removes `count` entries this attempt recorded, from `index` on (a deferred commit that is never
   * written); never entries recorded by an earlier process.
   */
  drop(index: number, count: number): void {
    if (index < this.recorded.length || index + count > this.entries.length) {
      throw new AgentStateError(
        'internal',
        `journal: entries ${index} to ${index + count - 1} cannot be dropped`,
      );
    }
    this.entries.splice(index, count);
    this.position -= count;
  }

  /** True when the next recorded entry is the marker of a commit labelled `label`. */
  nextIsCommit(label: string): boolean {
    if (!this.nextIs('commit')) return false;
    const marker = this.recorded[this.position]?.v;
    return typeof marker === 'object' && marker !== null && !Array.isArray(marker) && marker.label === label;
  }

  /** True when the next recorded entry (if any) is of `kind`. */
  nextIs(kind: string): boolean {
    return this.position < this.recorded.length && this.recorded[this.position]?.k === kind;
  }
}
