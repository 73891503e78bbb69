/**
 * Runs the trip graph over SQLite with AgentStateSaver, one step of the conversation per process:
 *   node --import tsx examples/langgraph/main.ts <db file> <thread> start      (runs until the confirmation)
 *   node --import tsx examples/langgraph/main.ts <db file> <thread> resume     (continues an interrupted run)
 *   node --import tsx examples/langgraph/main.ts <db file> <thread> answer yes (answers the confirmation)
 * Prints one JSON line per event: `interrupt` with its question, `done` with the final state.
 */
import { Command } from '@langchain/langgraph';
import { AgentStateSaver } from '../../src/adapters/langgraph/index.js';
import { tripGraph } from './trip-graph.js';

const [file, thread, action, answer] = process.argv.slice(2);
if (file === undefined || thread === undefined || action === undefined) {
  process.stderr.write('usage: main.ts <db file> <thread> start|resume|answer <yes|no>\n');
  process.exit(2);
}

// The one line that moves a LangGraph app onto agentstate:
const checkpointer = await AgentStateSaver.open(`sqlite:${file}`, {
  tenant_id: 'demo',
  user_id: 'traveller',
});
const graph = tripGraph(checkpointer);
const config = { configurable: { thread_id: thread } };
if (action === 'start') {
  await graph.invoke({ messages: [{ role: 'user', content: 'Book me a flight to Tokyo' }] }, config);
} else if (action === 'answer') {
  await graph.invoke(new Command({ resume: answer }), config);
} else {
  await graph.invoke(null, config); // continues from the last checkpoint
}
const snapshot = await graph.getState(config);
const pending = snapshot.tasks.flatMap((task) => task.interrupts);
if (pending.length > 0) {
  process.stdout.write(`${JSON.stringify({ event: 'interrupt', value: pending[0]?.value })}\n`);
} else {
  const messages = snapshot.values.messages.map(
    (m: { getType(): string; content: unknown; tool_calls?: unknown }) => ({
      type: m.getType(),
      content: m.content,
      tool_calls: m.tool_calls ?? [],
    }),
  );
  process.stdout.write(
    `${JSON.stringify({ event: 'done', state: { messages, booking: snapshot.values.booking } })}\n`,
  );
}
await checkpointer.close();
