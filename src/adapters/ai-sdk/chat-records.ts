/**
 * A chat's UI messages as a session's messages. The session's log is append-only, so a UI message is kept
 * as one or more records: each says "from part `from` on, the message's parts are these". A step of a
 * streamed answer appends the parts it added; a continuation (the client answered a tool call of the last
 * message) rewrites the message from part 0. Folding the records in order gives the chat back.
 *
 * The record's `content` is the message's text, so the inspector and the context builder read it as any
 * other message; the parts live in `metadata.ui_message`. A message some other writer appended (plain text,
 * no parts) reads back as a text message; tool-role messages of other writers are left out.
 */
import type { UIMessage } from 'ai';
import type { JsonObject, JsonValue } from '../../core/json.js';
import type { Message } from '../../core/model.js';
import type { NewMessage } from '../../store/types.js';

export type UIPart = UIMessage['parts'][number];

/** Where a record keeps its UI message in `metadata`. */
export const RECORD_KEY = 'ui_message';

interface StoredRecord {
  readonly id: string;
  readonly role: UIMessage['role'];
  readonly from: number;
  readonly parts: UIPart[];
  readonly metadata?: unknown;
}

/** A deep copy with `undefined` fields left out, as the store takes JSON. */
export function plainJson<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

function textOf(parts: readonly UIPart[]): string {
  return parts
    .filter((part): part is Extract<UIPart, { type: 'text' }> => part.type === 'text')
    .map((part) => part.text)
    .join('');
}

/** The record of `parts` from part `from` on of `message`. */
export function toRecord(message: UIMessage, from: number, parts: readonly UIPart[]): NewMessage {
  const kept: JsonObject = {
    id: message.id,
    role: message.role,
    from,
    parts: plainJson(parts) as unknown as JsonValue,
  };
  if (message.metadata !== undefined) kept.metadata = plainJson(message.metadata) as JsonValue;
  return { role: message.role, content: textOf(parts), metadata: { [RECORD_KEY]: kept } };
}

function recordOf(message: Message): StoredRecord | null {
  const kept = message.metadata[RECORD_KEY];
  if (typeof kept === 'object' && kept !== null && !Array.isArray(kept)) {
    const { id, role, from, parts, metadata } = kept as Record<string, unknown>;
    if (
      typeof id === 'string' &&
      typeof role === 'string' &&
      typeof from === 'number' &&
      Array.isArray(parts)
    )
      return {
        id,
        role: role as UIMessage['role'],
        from,
        parts: parts as UIPart[],
        ...(metadata === undefined ? {} : { metadata }),
      };
  }
  if (message.role === 'tool') return null;
  return {
    id: message.id,
    role: message.role,
    from: 0,
    parts: message.content === '' ? [] : [{ type: 'text', text: message.content }],
  };
}

/** The chat's UI messages from its records, oldest first (not validated: see loadChat). */
export function foldRecords(messages: readonly Message[]): UIMessage[] {
  const out: UIMessage[] = [];
  const at = new Map<string, number>();
  for (const message of messages) {
    const record = recordOf(message);
    if (record === null) continue;
    const index = at.get(record.id);
    const known = index === undefined ? undefined : out[index];
    if (index === undefined || known === undefined) {
      at.set(record.id, out.length);
      out.push({
        id: record.id,
        role: record.role,
        parts: [...record.parts],
        ...(record.metadata === undefined ? {} : { metadata: record.metadata }),
      });
      continue;
    }
    out[index] = {
      ...known,
      parts: [...known.parts.slice(0, record.from), ...record.parts],
      ...(record.metadata === undefined ? {} : { metadata: record.metadata }),
    };
  }
  return out.filter((message) => message.parts.length > 0);
}

export const INTERRUPTED_TOOL_CALL = 'The tool call was interrupted before it returned a result.';

function isToolPart(part: UIPart): part is Extract<UIPart, { toolCallId: string }> {
  return part.type === 'dynamic-tool' || part.type.startsWith('tool-');
}

/**
 * The parts of a message cut off mid-step (a disconnect, an abort, a crash), in a form the next model call
 * accepts: a tool call whose input was still streaming is dropped, one that had its input but no result
 * (or only a preliminary one) is closed with an error result, text and reasoning still streaming are
 * marked done, and a trailing `step-start` with nothing after it goes.
 */
export function closeCutOffParts(parts: readonly UIPart[], reason = INTERRUPTED_TOOL_CALL): UIPart[] {
  const out: UIPart[] = [];
  for (const part of parts) {
    if (isToolPart(part)) {
      if (part.state === 'input-streaming') continue;
      const open =
        part.state === 'input-available' ||
        part.state === 'approval-responded' ||
        (part.state === 'output-available' && part.preliminary === true);
      if (open) {
        const {
          output: _output,
          preliminary: _preliminary,
          ...rest
        } = part as UIPart & {
          output?: unknown;
          preliminary?: boolean;
        };
        out.push({ ...rest, state: 'output-error', errorText: reason } as UIPart);
        continue;
      }
      out.push(part);
      continue;
    }
    if ((part.type === 'text' || part.type === 'reasoning') && part.state === 'streaming') {
      out.push({ ...part, state: 'done' });
      continue;
    }
    out.push(part);
  }
  while (out.at(-1)?.type === 'step-start') out.pop();
  return out;
}

/**
 * Where `parts` first differ from `stored` (the parts a message's records hold): the SDK changes a part in
 * place (a tool call approved, then its result), so a save rewrites the message from that part on.
 */
export function firstChange(stored: readonly UIPart[], parts: readonly UIPart[]): number {
  const same = Math.min(stored.length, parts.length);
  for (let i = 0; i < same; i++) {
    if (JSON.stringify(stored[i]) !== JSON.stringify(plainJson(parts[i]))) return i;
  }
  return same;
}

/** True when the parts say something (more than step boundaries). */
export function hasContent(parts: readonly UIPart[]): boolean {
  return parts.some((part) => part.type !== 'step-start');
}
