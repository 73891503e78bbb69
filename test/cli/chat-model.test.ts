/**
 * `agentstate chat --store URL --model NAME`: the local chat's session runs with the model it names (here
 * `openai`, a local Chat Completions server), keeps it, and refuses a model that is not configured.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/open.js';
import { type ChatCompletionsServer, startChatCompletionsServer } from '../http/chat-completions-server.js';
import { type CliResult, runCli, spawnCli, tempDir } from './run.js';

const KEY = 'sk-chat-key-0123456789';
const tmp = tempDir();
let model: ChatCompletionsServer;

beforeAll(async () => {
  model = await startChatCompletionsServer();
});
afterAll(async () => {
  await model.stop();
  tmp.cleanup();
});

/** The chat with `lines` typed into it (stdin is not a terminal), to its exit. */
function chatWith(args: readonly string[], lines: readonly string[]): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawnCli(['chat', ...args], tmp.dir, {
      OPENAI_BASE_URL: model.baseURL,
      OPENAI_API_KEY: KEY,
    });
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin?.end(`${lines.join('\n')}\n`);
  });
}

describe('agentstate chat --model', { timeout: 120_000 }, () => {
  const url = () => `sqlite:${tmp.dir}/chat-model.db`;

  it('runs the session with the model it names, on a store, and keeps it', async () => {
    const result = await chatWith(
      ['--store', url(), '--data-dir', `${tmp.dir}/data`, '--model', 'openai', '--openai-model', 'fake-gpt'],
      ['I want to fly to Shanghai', '/quit'],
    );
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/agentstate chat · flight_booking · model openai · session sess_/);
    expect(result.stdout).toContain('«fake-gpt»');
    expect(result.stdout).toContain('--openai-model fake-gpt');
    expect(result.stdout).not.toContain(KEY);
    const id = /left session (sess_\S+);/.exec(result.stdout)?.[1] as string;
    const store = await openStore(url());
    try {
      const session = await store.getSession({ tenant_id: 'default', user_id: 'default' }, id);
      expect(session?.context).toEqual({ model: 'openai' });
    } finally {
      await store.close();
    }
  });

  it('refuses a model that is not configured, and --model with --session', async () => {
    const unknown = await chatWith(
      ['--store', url(), '--data-dir', `${tmp.dir}/data`, '--model', 'gpt-9'],
      [],
    );
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('no model named "gpt-9"; configured: rules');
    const both = await runCli(
      ['chat', '--store', url(), '--session', 'sess_aaaaaaaaaaaaaaaaaaaaaaaaaa', '--model', 'rules'],
      tmp.dir,
    );
    expect(both.code).toBe(1);
    expect(both.stderr).toContain('--model names the model of a new session');
  });
});
