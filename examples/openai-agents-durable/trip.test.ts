/**
 * The OpenAI Agents SDK example in real child processes, against the scripted model (a Chat Completions server on loopback)
 * and the demo airline over HTTP: a run killed with SIGKILL right after the card was charged, resumed by a
 * new process, answers as a run that was never interrupted, with one booking and one charge.
 */
import { join } from 'node:path';
import { durableTripTest } from '../shared/durable-trip.js';

durableTripTest('examples/openai-agents-durable', join(import.meta.dirname, 'main.ts'));
