/**
 * `agentstate sessions fork ID --at-seq N` (or `--checkpoint ID`), `agentstate sessions rewind ID --at-seq N`
 * and `agentstate sessions branches ID`: a session's branches, on the store of `--store`, as the other
 * `sessions` commands. A fork shares the history up to its point (nothing is copied); a rewind keeps what
 * came after as a branch (nothing is deleted).
 */
import { type Command, InvalidArgumentError } from 'commander';
import type { Session } from '../../core/model.js';
import { MAX_PAGE_LIMIT, type StateStore } from '../../store/types.js';
import {
  CliError,
  checkId,
  type StoreOptions,
  scopeOf,
  whereOf,
  withStore,
  withStoreOptions,
} from '../context.js';
import { print, printJson, shortTime, table } from '../format.js';

interface ForkOptions extends StoreOptions {
  readonly atSeq?: number;
  readonly checkpoint?: string;
  readonly id?: string;
  readonly ttl?: number;
  readonly json?: boolean;
}

interface RewindOptions extends StoreOptions {
  readonly atSeq: number;
  readonly expectedVersion?: number;
  readonly json?: boolean;
}

interface BranchesOptions extends StoreOptions {
  readonly json?: boolean;
}

/** A message seq: a whole number, 0 (before the first message) or more. */
export function parseSeq(value: string): number {
  if (!/^\d{1,15}$/.test(value)) throw new InvalidArgumentError('must be a whole number, 0 or more.');
  return Number(value);
}

function parsePositive(value: string): number {
  const n = Number(value);
  if (!/^\d{1,15}$/.test(value) || n < 1)
    throw new InvalidArgumentError('must be a whole number, 1 or more.');
  return n;
}

/** The session, or a sentence saying where it was looked for. */
async function requireSession(store: StateStore, options: StoreOptions, id: string): Promise<Session> {
  const scope = scopeOf(options);
  const session = await store.getSession(scope, id);
  if (session === null) throw new CliError(`session ${id} not found in ${whereOf(scope)}`);
  return session;
}

/** `after message 3` or `at checkpoint ckpt_... (after message 3)`. */
/** Every branch of the session, page after page. */
async function allBranches(store: StateStore, scope: Parameters<StateStore['listBranches']>[0], id: string) {
  const items: Session[] = [];
  let cursor: string | null = null;
  do {
    const page = await store.listBranches(scope, id, { limit: MAX_PAGE_LIMIT, cursor });
    items.push(...page.items);
    cursor = page.next_cursor;
  } while (cursor !== null);
  return items;
}

function pointOf(session: Session): string {
  const origin = session.forked_from;
  if (origin === undefined) return '';
  const after = origin.seq === 0 ? 'before its first message' : `after message ${origin.seq}`;
  return origin.checkpoint_id === null ? after : `at checkpoint ${origin.checkpoint_id} (${after})`;
}

export function registerBranchCommands(sessions: Command): void {
  withStoreOptions(
    sessions
      .command('fork <id>')
      .description('a new session from this one at a message or a checkpoint (shares, never copies)'),
  )
    .option('--at-seq <n>', 'the fork sees the messages up to this seq (0: none)', parseSeq)
    .option('--checkpoint <id>', 'the fork sees the messages written before this checkpoint of the session')
    .option('--id <id>', "the fork's id (default: a new one)")
    .option('--ttl <seconds>', "the fork's sliding TTL (default: the session's)", parsePositive)
    .option('--json', 'print the new session as JSON')
    .action(async (id: string, options: ForkOptions) => {
      checkId(id, 'session');
      if ((options.atSeq === undefined) === (options.checkpoint === undefined)) {
        throw new CliError('say where the fork starts: --at-seq N or --checkpoint ID (one of them)');
      }
      if (options.checkpoint !== undefined) checkId(options.checkpoint, 'checkpoint');
      if (options.id !== undefined) checkId(options.id, 'session');
      const fork = await withStore(options, async (store) => {
        await requireSession(store, options, id);
        return store.forkSession(scopeOf(options), id, {
          ...(options.atSeq !== undefined ? { at_seq: options.atSeq } : {}),
          ...(options.checkpoint !== undefined ? { checkpoint_id: options.checkpoint } : {}),
          ...(options.id !== undefined ? { id: options.id } : {}),
          ...(options.ttl !== undefined ? { ttl_seconds: options.ttl } : {}),
        });
      });
      if (options.json) return printJson(fork);
      print(`${fork.id} forked from ${id} ${pointOf(fork)}`);
      print(`user ${fork.user_id}, expires ${shortTime(fork.expires_at)}`);
    });

  withStoreOptions(
    sessions
      .command('rewind <id>')
      .description('continue the session after a message; what came after becomes a branch'),
  )
    .requiredOption('--at-seq <n>', 'the session continues after this message (0: from the start)', parseSeq)
    .option(
      '--expected-version <v>',
      "refuse unless the session is at this version (another writer's change wins)",
      parsePositive,
    )
    .option('--json', 'print the session and the branch as JSON')
    .action(async (id: string, options: RewindOptions) => {
      checkId(id, 'session');
      const result = await withStore(options, async (store) => {
        const current = await requireSession(store, options, id);
        if (current.status === 'ended') {
          throw new CliError(`session ${id} has ended; fork it instead (sessions fork ${id} --at-seq N)`);
        }
        return store.rewindSession(scopeOf(options), id, {
          at_seq: options.atSeq,
          ...(options.expectedVersion !== undefined ? { expected_version: options.expectedVersion } : {}),
        });
      });
      if (options.json) return printJson(result);
      const { session, branch } = result;
      print(`${session.id} now continues after message ${options.atSeq} (version ${session.version})`);
      print(`what came after is branch ${branch.id} (${branch.status}): sessions branches ${session.id}`);
    });

  withStoreOptions(
    sessions.command('branches <id>').description('the sessions forked from this one (rewinds included)'),
  )
    .option('--json', 'print JSON')
    .action(async (id: string, options: BranchesOptions) => {
      checkId(id, 'session');
      const { session, items } = await withStore(options, async (store) => {
        const session = await requireSession(store, options, id);
        return { session, items: await allBranches(store, scopeOf(options), id) };
      });
      if (options.json) return printJson({ items });
      if (session.forked_from !== undefined) {
        print(`${session.id} is a fork of ${session.forked_from.session_id} ${pointOf(session)}`);
      }
      if (items.length === 0) return print(`no branches of ${id}`);
      const rows = items.map((s) => [
        s.id,
        String(s.forked_from?.seq ?? '-'),
        s.forked_from?.checkpoint_id ?? '-',
        s.status,
        shortTime(s.created_at),
        shortTime(s.expires_at),
      ]);
      print(table(['ID', 'AFTER SEQ', 'CHECKPOINT', 'STATUS', 'CREATED', 'EXPIRES'], rows));
    });
}
