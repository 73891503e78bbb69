/**
 * An abstractive Summarizer behind any OpenAI-compatible Chat Completions endpoint (optional; the default
 * is the offline `rules` summarizer). The model gets the previous points and the new messages and answers
 * with one point per line; lines are trimmed of bullets, and the newest `maxPoints` are kept.
 */
import { AgentStateError, invalidRequest } from '../core/errors.js';
import type { Message } from '../core/model.js';
import type { Summarizer } from './summarizer.js';

export interface OpenAiSummarizerOptions {
  /** e.g. `https://api.openai.com/v1` or a local server's `/v1`. */
  readonly baseUrl: string;
  readonly model: string;
  readonly apiKey?: string;
  /** Default 40. */
  readonly maxPoints?: number;
  /** Default 30 s. */
  readonly timeoutMs?: number;
}

const INSTRUCTIONS =
  'You maintain the running summary of a conversation between a user and an assistant that uses tools. ' +
  'Given the current summary points and the next messages, answer with the updated summary: one short ' +
  'factual point per line, keeping decisions, values the user chose, tool outcomes and open questions. ' +
  'No preamble.';

function render(messages: readonly Message[]): string {
  return messages
    .map((m) => {
      const calls = (m.tool_calls ?? [])
        .map((c) => ` [calls ${c.name} ${JSON.stringify(c.arguments)}]`)
        .join('');
      return `[${m.seq}] ${m.role}${m.name ? ` (${m.name})` : ''}: ${m.content}${calls}`;
    })
    .join('\n');
}

export function openaiSummarizer(options: OpenAiSummarizerOptions): Summarizer {
  if (typeof options.baseUrl !== 'string' || !/^https?:\/\//.test(options.baseUrl)) {
    throw invalidRequest('openai summarizer: baseUrl must be an http(s) URL');
  }
  if (typeof options.model !== 'string' || options.model === '') {
    throw invalidRequest('openai summarizer: model is required');
  }
  const maxPoints = options.maxPoints ?? 40;
  const url = `${options.baseUrl.replace(/\/+$/, '')}/chat/completions`;
  return {
    name: `openai:${options.model}`,
    async summarize({ previous, messages }) {
      const body = {
        model: options.model,
        temperature: 0,
        messages: [
          { role: 'system', content: INSTRUCTIONS },
          {
            role: 'user',
            content: `Current summary:\n${previous.map((p) => `- ${p}`).join('\n') || '(none)'}\n\nNext messages:\n${render(messages)}`,
          },
        ],
      };
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (options.apiKey) headers.authorization = `Bearer ${options.apiKey}`;
      let response: Response;
      try {
        response = await fetch(url, {
          method: 'POST',
          headers,
          body: JSON.stringify(body),
          signal: AbortSignal.timeout(options.timeoutMs ?? 30_000),
        });
      } catch (cause) {
        throw new AgentStateError('internal', `openai summarizer: ${url} did not answer`, { cause });
      }
      if (!response.ok) {
        throw new AgentStateError('internal', `openai summarizer: ${url} answered ${response.status}`);
      }
      const json = (await response.json()) as { choices?: { message?: { content?: unknown } }[] };
      const content = json.choices?.[0]?.message?.content;
      if (typeof content !== 'string') {
        throw new AgentStateError(
          'internal',
          'openai summarizer: the answer has no choices[0].message.content',
        );
      }
      const points = content
        .split('\n')
        .map((line) => line.replace(/^\s*(?:[-*•]|\d+[.)])\s*/, '').trim())
        .filter((line) => line !== '');
      return points.slice(Math.max(0, points.length - maxPoints));
    },
  };
}
