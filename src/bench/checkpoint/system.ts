/**
 * What the benchmark drives: one "system" (a store, a LangGraph saver, or the raw driver) seen through
 * three operations on runs of checkpoints. Adding a backend is adding one entry to the registry.
 */
import type { JsonObject } from '../../core/json.js';

export type Backend = 'memory' | 'sqlite' | 'postgres' | 'redis';
export type Family = 'agentstate' | 'langgraph' | 'raw';

export interface RunState {
  readonly messages: JsonObject[];
  readonly task: JsonObject;
}

/** What a read hands back, reduced to what the driver checks: the step and the message count. */
export interface ReadBack {
  readonly step: number;
  readonly messages: number;
}

/** An open system. `run` is the run's index in 0..runs-1; each system maps it to its own run/thread id. */
export interface OpenSystem {
  /** Stores the checkpoint of `step` (0-based; 0 has no parent) of run `run`. */
  put(run: number, step: number, state: RunState): Promise<void>;
  /** The newest checkpoint of the run. */
  latest(run: number): Promise<ReadBack>;
  /** The newest `limit` checkpoints of the run, newest first. */
  history(run: number, limit: number): Promise<ReadBack[]>;
  /**
   * Bytes this system holds for everything written so far, measured after `close()` for files.
   * Memory systems: serialized size of what they keep. Null when the system cannot tell.
   */
  storedBytes(): Promise<StoredBytes | null>;
  close(): Promise<void>;
}

export interface StoredBytes {
  /** How it was measured, for the report. */
  readonly method: string;
  readonly bytes: number;
  /** SQLite only: growth of the file on disk (database plus WAL), as a cross-check of `bytes`. */
  readonly file_bytes?: number;
}

export interface SystemContext {
  /** A directory of this benchmark run, for files. */
  readonly dir: string;
  /** SQLite `synchronous` for every SQLite system. */
  readonly synchronous: 'OFF' | 'NORMAL' | 'FULL';
  readonly postgresUrl: string;
  readonly redisUrl: string;
  /** Unique per benchmark invocation, so runs never collide on a shared server. */
  readonly tag: string;
}

export interface SystemSpec {
  /** The name used by `--systems`, e.g. `agentstate-sqlite`. */
  readonly name: string;
  readonly family: Family;
  readonly backend: Backend;
  /** Runs driven at once (for example 8 for a pool of 8 connections). Default 1. */
  readonly concurrency?: number;
  /** Needs a server that may be absent: only run when asked for by name. */
  readonly optIn?: boolean;
  open(context: SystemContext): Promise<OpenSystem>;
}

export function readBack(step: unknown, messages: unknown): ReadBack {
  if (typeof step !== 'number' || !Array.isArray(messages)) {
    throw new Error(`a read returned an unexpected checkpoint (step ${String(step)})`);
  }
  return { step, messages: messages.length };
}
