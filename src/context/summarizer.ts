/**
 * Summarizers turn a range of messages into summary points. `rulesSummarizer` is extractive and
 * deterministic (the same messages give the same points, offline); an abstractive one (a model behind an
 * OpenAI-compatible endpoint) implements the same interface.
 */
import type { Message } from '../core/model.js';

export interface SummarizeInput {
  /** The points of the previous summary (covering everything before `messages`). */
  readonly previous: readonly string[];
  /** The next messages to fold in, ascending seq. */
  readonly messages: readonly Message[];
}

export interface Summarizer {
  readonly name: string;
  /** The points of the new summary, covering `previous` and `messages`. */
  summarize(input: SummarizeInput): Promise<string[]>;
}

export interface RulesSummarizerOptions {
  /** The newest points kept in a rolling summary. Default 40. */
  readonly maxPoints?: number;
  /** Longest point, in characters. Default 160. */
  readonly maxPointChars?: number;
}

const KEYWORDS =
  /\b(want|need|prefer|book|booked|confirm|confirmed|cancel|change|instead|not|no|yes|deadline|must|please|failed|error|done)\b|[要订改确认取消喜欢不需]/i;
const SENTENCE_SPLIT = /(?<=[.!?。！？])\s+|\n+/;

function score(sentence: string): number {
  let s = 0;
  if (/\d/.test(sentence)) s++;
  if (KEYWORDS.test(sentence)) s++;
  if (/\S\s+[A-Z][a-z]+/.test(sentence)) s++; // a proper noun after the first word
  if (/\w+\s*[:=]\s*\S/.test(sentence)) s++;
  return s;
}

function clip(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

function keySentences(content: string, minScore: number): string[] {
  const sentences = content
    .split(SENTENCE_SPLIT)
    .map((s) => s.trim())
    .filter((s) => s !== '');
  const picked = sentences.filter((s) => score(s) >= minScore);
  return picked.length > 0 || minScore > 1 ? picked : sentences.slice(0, 1);
}

function pointsOf(message: Message, maxChars: number): string[] {
  const at = `[${message.seq}]`;
  switch (message.role) {
    case 'user': {
      // Every user message leaves a trace: its key sentences, or its first sentence.
      const picked = keySentences(message.content, 1);
      return picked.length === 0 ? [] : [clip(`${at} user: ${picked.join(' ')}`, maxChars)];
    }
    case 'assistant': {
      const out: string[] = [];
      const picked = keySentences(message.content, 2);
      if (picked.length > 0) out.push(clip(`${at} assistant: ${picked.join(' ')}`, maxChars));
      for (const call of message.tool_calls ?? []) {
        const args = typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments);
        out.push(clip(`${at} called ${call.name} ${args}`, maxChars));
      }
      return out;
    }
    case 'tool':
      return [clip(`${at} ${message.name ?? 'tool'} returned: ${message.content}`, maxChars)];
    case 'system':
      return [];
  }
}

export function rulesSummarizer(options: RulesSummarizerOptions = {}): Summarizer {
  const maxPoints = options.maxPoints ?? 40;
  const maxChars = options.maxPointChars ?? 160;
  return {
    name: 'rules',
    async summarize({ previous, messages }) {
      const fresh = messages.flatMap((m) => pointsOf(m, maxChars));
      const all = [...previous, ...fresh];
      return all.slice(Math.max(0, all.length - maxPoints));
    },
  };
}
