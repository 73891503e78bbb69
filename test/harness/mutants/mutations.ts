/**
 * Deliberately broken runtimes: each is a text change to a copy of `src/` (never to the product), naming
 * the exactly-once rule it breaks. A mutation whose text is not found exactly once fails the build of the
 * mutant, so a refactor of the runtime cannot turn a mutant into the unchanged code unnoticed.
 */

export interface Edit {
  readonly file: string;
  readonly find: string;
  readonly replace: string;
}

export interface Mutation {
  readonly name: string;
  readonly breaks: string;
  readonly edits: readonly Edit[];
  /** The runtime test files expected to fail on it (each must fail at least one test). */
  readonly runtimeTests: readonly string[];
  /** The crash report's figure that catches it, and the test of that figure. */
  readonly caughtBy: { readonly metric: string; readonly caught: (report: CrashFigures) => boolean };
}

/** The crash report's figures the mutants are caught by. */
export interface CrashFigures {
  readonly scenarios: number;
  readonly identical_output: number;
  readonly duplicate_side_effects: number;
  readonly redundant_calls: number;
  readonly effect_log: { readonly unmatched_keys: number };
}

const duplicates = {
  metric: 'duplicate_side_effects',
  caught: (r: CrashFigures) => r.duplicate_side_effects > 0,
};

/** A tool call with a context made up on the spot, as a broken runtime would make it. */
const call = (params: string, key: string) =>
  `await tool.execute(${params} as never, { idempotencyKey: ${key}, signal: new AbortController().signal, attempt: 1 })`;

export const MUTATIONS: readonly Mutation[] = [
  {
    name: 'reexecute-success',
    breaks: 'a resumed run calls the tool again for every step already done (its outcome replayed)',
    edits: [
      {
        file: 'src/durable/action.ts',
        find: '  const runner = { store, scope, tool, policy: request.policy };\n',
        replace: `  const runner = { store, scope, tool, policy: request.policy };\n  if (rt.journal.nextIs(request.kind)) ${call('action.params', 'action.idempotency_key')};\n`,
      },
      {
        file: 'src/durable/action.ts',
        find: '    action = request.existing;\n',
        replace: `    action = request.existing;\n    if (action.status === 'SUCCESS') ${call('action.params', 'action.idempotency_key')};\n`,
      },
    ],
    runtimeTests: ['test/runtime/recovery.test.ts'],
    // Its output is identical: only the effect log shows the tool ran again.
    caughtBy: {
      metric: 'duplicate_side_effects and redundant_calls',
      caught: (r) => r.duplicate_side_effects > 0 && r.redundant_calls > 0,
    },
  },
  {
    name: 'rerun-pending-blindly',
    breaks: 'an action whose outcome is unknown (PENDING after a crash) is run again without lookup',
    edits: [
      {
        file: 'src/runtime/actions.ts',
        find: '  if (tool.lookup === undefined) {\n',
        replace:
          '  if (attemptsSoFar >= 0) return executeAction(runner, action, attemptsSoFar + 1);\n  if (tool.lookup === undefined) {\n',
      },
    ],
    runtimeTests: ['test/runtime/recovery.test.ts'],
    caughtBy: duplicates,
  },
  {
    name: 'fresh-key-on-retry',
    breaks: 'every attempt after the first sends a new idempotency key',
    edits: [
      {
        file: 'src/runtime/actions.ts',
        find: 'tool.execute(parsed.data, { idempotencyKey: action.idempotency_key, signal, attempt: current })',
        replace:
          "tool.execute(parsed.data, { idempotencyKey: current > 1 ? action.idempotency_key + '~' + current : action.idempotency_key, signal, attempt: current })",
      },
    ],
    runtimeTests: ['test/runtime/recovery.test.ts'],
    // A single kill before the effect causes no second effect, but the effect is under another key.
    caughtBy: { metric: 'effect_log.unmatched_keys', caught: (r) => r.effect_log.unmatched_keys > 0 },
  },
  {
    name: 'no-record-before-call',
    breaks: 'the tool is called before its action is recorded PENDING with a checkpoint',
    edits: [
      {
        file: 'src/durable/action.ts',
        find: '  if (request.existing != null) {\n',
        replace: `  const early = request.existing == null && !rt.journal.nextIs('commit') ? ${call('request.params', 'key')} : null;\n  if (request.existing != null) {\n`,
      },
      {
        file: 'src/durable/action.ts',
        find: '      if (fresh) return settle(await executeAction(runner, action), action, store, scope);\n',
        replace:
          "      if (fresh) return settle(early !== null ? { status: 'SUCCESS', result: early, via: 'execute' } : await executeAction(runner, action), action, store, scope);\n",
      },
    ],
    runtimeTests: ['test/runtime/recovery.test.ts'],
    caughtBy: duplicates,
  },
  {
    name: 'messages-before-task',
    breaks: "a commit's messages are written on their own, before the task state they go with",
    edits: [
      {
        file: 'src/runtime/run-context.ts',
        find: [
          '        const write = () =>',
          '          this.store.commitTurn(this.scope, { ...batch, checkpoint, ...release, ...taken, ...other });',
          '',
        ].join('\n'),
        replace: [
          '        const write = async () => {',
          '          const early = batch.messages === undefined ? null : await this.store.appendMessages(this.scope, batch.messages.session_id, batch.messages.items);',
          '          const { messages: _moved, ...rest } = batch;',
          '          const written = await this.store.commitTurn(this.scope, { ...rest, checkpoint, ...release, ...taken, ...other });',
          '          return early === null ? written : { ...written, messages: early };',
          '        };',
          '',
        ].join('\n'),
      },
    ],
    runtimeTests: ['test/runtime/recovery.test.ts'],
    caughtBy: { metric: 'identical_output', caught: (r) => r.identical_output < r.scenarios },
  },
];
