/**
 * The models a server is configured with (src/server/models.ts), and what the Chat Completions client
 * shows of an endpoint: its streamed answers put together, and never the API key.
 */
import { describe, expect, it } from 'vitest';
import { endpointOf, messageFromStream } from '../../src/models/openai/client.js';
import { createOpenAIModel } from '../../src/models/openai/index.js';
import { describeModel, modelForSession, resolveModels } from '../../src/server/models.js';
import { startChatCompletionsServer } from '../http/chat-completions-server.js';

const env = { OPENAI_BASE_URL: 'http://127.0.0.1:9/v1', OPENAI_API_KEY: 'sk-secret-key-123' };

describe('resolveModels', () => {
  it('is the rules model alone by default', () => {
    expect(resolveModels({ env: {} })).toEqual({
      default: 'rules',
      agents: {},
      available: { rules: { kind: 'rules' } },
    });
  });

  it('configures openai from the environment when asked for, and describes it without the key', () => {
    const spec = resolveModels({
      env: { ...env, AGENTSTATE_MODEL: 'openai', AGENTSTATE_OPENAI_MODEL: 'm1' },
    });
    expect(spec.default).toBe('openai');
    expect(spec.available.openai).toEqual({
      kind: 'openai',
      baseURL: 'http://127.0.0.1:9/v1',
      model: 'm1',
      apiKey: 'sk-secret-key-123',
    });
    expect(describeModel(spec, 'openai')).toBe('openai (m1 at http://127.0.0.1:9/v1)');
  });

  it('names what is missing or wrong in one sentence', () => {
    expect(() => resolveModels({ env, model: 'openai' })).toThrow(
      /--openai-model NAME or AGENTSTATE_OPENAI_MODEL/,
    );
    expect(() => resolveModels({ env, model: 'gpt' })).toThrow(
      '--model (or AGENTSTATE_MODEL): no model named "gpt"; configured: rules',
    );
    expect(() =>
      resolveModels({ env: { OPENAI_BASE_URL: 'ftp://x' }, model: 'openai', openaiModel: 'm' }),
    ).toThrow('OPENAI_BASE_URL must be an http:// or https:// URL');
    expect(() => resolveModels({ env, file: { agents: { flight_booking: 'nope' } } })).toThrow(
      'models.agents.flight_booking: no model named "nope"; configured: rules',
    );
    expect(() =>
      resolveModels({
        env: {},
        file: {
          available: {
            local: { kind: 'openai', baseURL: 'http://h/v1', model: 'm', apiKeyEnv: 'NO_SUCH_KEY' },
          },
        },
      }),
    ).toThrow('models.available.local: the environment variable NO_SUCH_KEY is not set');
  });

  it('chooses a session’s model: the one it named, else its agent’s, else the default', () => {
    const spec = resolveModels({
      env: { LOCAL_KEY: 'k-local-0001' },
      file: {
        default: 'local',
        agents: { deploy_pipeline: 'rules' },
        available: { local: { kind: 'openai', baseURL: 'http://h/v1', model: 'm', apiKeyEnv: 'LOCAL_KEY' } },
      },
    });
    expect(spec.available.local).toMatchObject({ apiKey: 'k-local-0001' });
    expect(modelForSession(spec, { agent: 'flight_booking', context: {} })).toBe('local');
    expect(modelForSession(spec, { agent: 'deploy_pipeline', context: {} })).toBe('rules');
    expect(modelForSession(spec, { agent: 'deploy_pipeline', context: { model: 'local' } })).toBe('local');
  });
});

describe('the Chat Completions client', () => {
  it('puts a streamed answer together: content and a tool call in pieces', () => {
    const lines = [
      { choices: [{ delta: { role: 'assistant' } }] },
      {
        choices: [
          { delta: { tool_calls: [{ index: 0, id: 'c1', function: { name: 'ex', arguments: '{"a"' } }] } },
        ],
      },
      { choices: [{ delta: { tool_calls: [{ index: 0, function: { arguments: ':1}' } }] } }] },
    ].map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`);
    expect(messageFromStream(`${lines.join('')}data: [DONE]\n\n`)).toEqual({
      content: null,
      tool_calls: [{ id: 'c1', function: { name: 'ex', arguments: '{"a":1}' } }],
    });
    const text = ['Hel', 'lo'].map((piece) => `data: {"choices":[{"delta":{"content":"${piece}"}}]}\n`);
    expect(messageFromStream(text.join(''))).toEqual({ content: 'Hello' });
  });

  it('shows the endpoint without user information', () => {
    expect(endpointOf('https://user:sk-inside@api.example.com/v1/')).toBe('https://api.example.com/v1');
  });

  it('never repeats the key an endpoint echoes in its error', async () => {
    const server = await startChatCompletionsServer();
    try {
      server.failing = true;
      const model = createOpenAIModel({
        baseURL: server.baseURL,
        apiKey: 'sk-echoed-key-42',
        model: 'm',
        maxRetries: 0,
      });
      const error = await model
        .reply({ input: 'x', language: 'en', draft: 'd', task: null })
        .catch((e: unknown) => e);
      expect((error as Error).message).toBe(
        `[openai] ${server.baseURL}/chat/completions answered 500: Incorrect API key provided: Bearer [redacted]`,
      );
      expect(JSON.stringify(error)).not.toContain('sk-echoed-key-42');
    } finally {
      await server.stop();
    }
  });
});
