/**
 * agentstate in two minutes: one turn of a flight-booking agent, kept in the default SQLite store.
 *
 *   npm run example                      # sqlite:./.agentstate/agentstate.db
 *   node --import tsx examples/quickstart.ts ./my.db
 *   node --import tsx examples/quickstart.ts memory:
 */
import { type JsonObject, newId, openStore, type Scope, type StateStore } from '../src/index.js';

const scope: Scope = { tenant_id: 'acme', user_id: 'alice' };

async function main(url: string | undefined): Promise<void> {
  const store = await openStore(url);
  try {
    await oneTurn(store, url);
  } finally {
    await store.close();
  }
}

async function oneTurn(store: StateStore, url: string | undefined): Promise<void> {
  // A user starts a conversation: a session with a sliding 30-minute TTL and her preferences.
  const session = await store.createSession(scope, {
    agent: 'flight_booking',
    context: { language: 'en', time_zone: 'Europe/London' },
  });
  await store.appendMessages(scope, session.id, [
    { role: 'user', content: 'I need a flight from London to Lisbon on Friday 6 March, just me.' },
  ]);

  // The router opens a task: an explicit state machine whose slots the extractor fills.
  const task = await store.createTask(scope, {
    session_id: session.id,
    type: 'flight_booking',
    state: 'COLLECTING',
    slots: { origin: 'LHR', destination: 'LIS' },
    status_line: 'Collecting the trip details',
  });

  // A tool call is recorded before it runs, under an idempotency key, then completed with its result.
  const key = `${task.id}:search_flights:1`;
  const params: JsonObject = { origin: 'LHR', destination: 'LIS', date: '2026-03-06', passengers: 1 };
  const { action } = await store.beginAction(scope, {
    task_id: task.id,
    session_id: session.id,
    type: 'tool_call',
    tool: 'search_flights',
    params,
    idempotency_key: key,
  });
  const offer = { flight: 'TP1351', departs: '2026-03-06T07:25:00Z', price_eur: 142 };
  await store.completeAction(scope, action.id, { status: 'SUCCESS', result: { offers: [offer] } });
  // A retry with the same key (say, after a crash) gets the same action back instead of a second search.
  const retry = await store.beginAction(scope, {
    task_id: task.id,
    session_id: session.id,
    type: 'tool_call',
    tool: 'search_flights',
    params,
    idempotency_key: key,
  });

  // The end of the turn, atomically: task state, the reply, the session status and a checkpoint.
  const reply = `Flight ${offer.flight} leaves Heathrow at 07:25 on Friday 6 March for EUR ${offer.price_eur}. Shall I book it?`;
  const turn = await store.commitTurn(scope, {
    session: { id: session.id, expected_version: session.version, patch: { status: 'waiting_for_user' } },
    update_tasks: [
      {
        id: task.id,
        expected_version: task.version,
        patch: {
          state: 'CONFIRMING',
          slots: { ...task.slots, date: '2026-03-06', passengers: 1, offer: offer.flight },
          status_line: `Waiting for Alice to confirm ${offer.flight} LHR -> LIS on 6 March`,
          cause: 'all slots filled',
        },
      },
    ],
    messages: { session_id: session.id, items: [{ role: 'assistant', content: reply }] },
    checkpoint: {
      run_id: newId('run'),
      session_id: session.id,
      task_id: task.id,
      step: 1,
      label: 'after search_flights',
      channels: { task_state: 'CONFIRMING', pending_question: 'confirm_booking', offer },
    },
  });

  // Read it all back, as a resumed process would.
  const saved = await store.getSession(scope, session.id);
  const messages = await store.listMessages(scope, session.id);
  const current = await store.getTask(scope, task.id);
  const events = await store.listTaskEvents(scope, task.id);
  const recorded = await store.getActionByKey(scope, key);
  const checkpoint = turn.checkpoint && (await store.latestCheckpoint(scope, turn.checkpoint.run_id));

  const out = [
    `agentstate quickstart (${url ?? 'sqlite:./.agentstate/agentstate.db'})`,
    `session ${saved?.id}: ${saved?.status}, version ${saved?.version}, expires ${saved?.expires_at}`,
    ...messages.map((m) => `  #${m.seq} ${m.role}: ${m.content}`),
    `task ${current?.id} (${current?.type}): ${current?.state}, version ${current?.version}`,
    `  status: ${current?.status_line}`,
    `  slots: ${JSON.stringify(current?.slots)}`,
    `  events: ${events.map((e) => `${e.from_state ?? 'new'} -> ${e.to_state} (${e.cause})`).join(', ')}`,
    `action ${recorded?.id} ${recorded?.tool}: ${recorded?.status}, result ${JSON.stringify(recorded?.result)}`,
    `  retry with the same key returned the same action: ${retry.action.id === action.id && !retry.created}`,
    `checkpoint ${checkpoint?.id} of run ${checkpoint?.run_id}: step ${checkpoint?.step}, "${checkpoint?.label}", channels ${Object.keys(checkpoint?.channels ?? {}).join(', ')}`,
  ];
  process.stdout.write(`${out.join('\n')}\n`);
}

const target = process.argv[2];
main(target === undefined ? undefined : target.includes(':') ? target : `sqlite:${target}`).catch(
  (error: unknown) => {
    process.stderr.write(`quickstart failed: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);
