/**
 * A small LangGraph.js agent that books a flight: the agent node asks for a flight search (a tool), then
 * proposes a booking; a confirm node stops the graph with `interrupt` until a person answers; the tools node
 * runs the tools. The "model" is deterministic so the example runs offline. Its state is checkpointed by
 * AgentStateSaver, so a process killed at any point resumes from the last step.
 */
import { AIMessage, type BaseMessage, ToolMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import type { BaseCheckpointSaver } from '@langchain/langgraph';
import { Annotation, END, interrupt, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { ToolNode } from '@langchain/langgraph/prebuilt';
import { z } from 'zod';

export const TripState = Annotation.Root({
  ...MessagesAnnotation.spec,
  booking: Annotation<string | null>({ reducer: (_, next) => next, default: () => null }),
});
type State = typeof TripState.State;

/** Milliseconds the search takes (the crash test kills the process while it runs). */
const searchDelay = () => Number(process.env.TRIP_SEARCH_DELAY_MS ?? 0);

const searchFlights = tool(
  async ({ to }: { to: string }) => {
    process.stdout.write(`${JSON.stringify({ event: 'searching', to })}\n`);
    await new Promise((resolve) => setTimeout(resolve, searchDelay()));
    return JSON.stringify({ flight: 'NH-106', to, seats: 3 });
  },
  { name: 'search_flights', description: 'Find a flight', schema: z.object({ to: z.string() }) },
);

const bookFlight = tool(async ({ flight }: { flight: string }) => `Booked ${flight}, reference PNR-7Q2`, {
  name: 'book_flight',
  description: 'Book a flight',
  schema: z.object({ flight: z.string() }),
});

function agent(state: State): Partial<State> {
  const last = state.messages[state.messages.length - 1];
  if (last instanceof ToolMessage && last.name === 'search_flights') {
    const { flight } = JSON.parse(String(last.content)) as { flight: string };
    return {
      messages: [
        new AIMessage({
          content: '',
          tool_calls: [{ id: 'call_book', name: 'book_flight', args: { flight } }],
        }),
      ],
    };
  }
  if (last instanceof ToolMessage && last.name === 'book_flight') {
    return { messages: [new AIMessage(`Done: ${String(last.content)}`)], booking: String(last.content) };
  }
  if (last instanceof ToolMessage) return { messages: [new AIMessage('Nothing booked.')] };
  return {
    messages: [
      new AIMessage({
        content: '',
        tool_calls: [{ id: 'call_search', name: 'search_flights', args: { to: 'Tokyo' } }],
      }),
    ],
  };
}

/** Stops before a booking until a person says yes; a "no" answers the call without booking. */
function confirm(state: State): Partial<State> {
  const last = state.messages[state.messages.length - 1] as AIMessage;
  const call = last.tool_calls?.[0];
  const answer = interrupt({ question: `Book ${String(call?.args.flight)}?` }) as string;
  if (answer === 'yes') return {};
  return {
    messages: [
      new ToolMessage({ content: 'The user declined.', tool_call_id: String(call?.id), name: 'declined' }),
    ],
  };
}

function afterAgent(state: State): 'tools' | 'confirm' | typeof END {
  const last = state.messages[state.messages.length - 1] as AIMessage;
  const call = last.tool_calls?.[0];
  if (call === undefined) return END;
  return call.name === 'book_flight' ? 'confirm' : 'tools';
}

function afterConfirm(state: State): 'tools' | 'agent' {
  const last = state.messages[state.messages.length - 1] as BaseMessage;
  return last instanceof ToolMessage ? 'agent' : 'tools';
}

export function tripGraph(checkpointer: BaseCheckpointSaver) {
  return new StateGraph(TripState)
    .addNode('agent', agent)
    .addNode('confirm', confirm)
    .addNode('tools', new ToolNode([searchFlights, bookFlight]))
    .addEdge(START, 'agent')
    .addConditionalEdges('agent', afterAgent, ['tools', 'confirm', END])
    .addConditionalEdges('confirm', afterConfirm, ['tools', 'agent'])
    .addEdge('tools', 'agent')
    .compile({ checkpointer });
}
