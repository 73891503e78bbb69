/** Which OTEL_* variables turn traces on in `agentstate serve`, and the errors for values it cannot use. */
import { describe, expect, it } from 'vitest';
import { linksTo, tracingActive } from '../../src/observability/tracing.js';
import { checkTracingEnv, startTracing, tracingRequested } from '../../src/observability/tracing-setup.js';

describe('tracing setup from OTEL_* variables', () => {
  it('is off with no variable, with OTEL_SDK_DISABLED=true and with OTEL_TRACES_EXPORTER=none', async () => {
    expect(tracingRequested({})).toBe(false);
    expect(tracingRequested({ PATH: '/bin', OTEL_EXPORTER_OTLP_ENDPOINT: '' })).toBe(false);
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' };
    expect(tracingRequested({ ...endpoint, OTEL_SDK_DISABLED: 'true' })).toBe(false);
    expect(tracingRequested({ ...endpoint, OTEL_TRACES_EXPORTER: 'none' })).toBe(false);
    expect(await startTracing({ OTEL_SDK_DISABLED: 'true', ...endpoint }, { http: false })).toBeNull();
    expect(tracingActive()).toBe(false);
  });

  it('is on with any of the endpoint, protocol, service name, sampler or exporter variables', () => {
    for (const name of [
      'OTEL_EXPORTER_OTLP_ENDPOINT',
      'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
      'OTEL_EXPORTER_OTLP_PROTOCOL',
      'OTEL_SERVICE_NAME',
      'OTEL_TRACES_SAMPLER',
      'OTEL_TRACES_EXPORTER',
    ]) {
      expect(tracingRequested({ [name]: 'x' })).toBe(true);
    }
  });

  it('accepts the standard values and names the variable of a bad one', async () => {
    expect(() =>
      checkTracingEnv({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
        OTEL_TRACES_SAMPLER_ARG: '0.25',
        OTEL_TRACES_EXPORTER: 'otlp,console',
      }),
    ).not.toThrow();
    expect(() => checkTracingEnv({ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/xml' })).toThrow(
      'OTEL_EXPORTER_OTLP_PROTOCOL="http/xml": must be one of http/protobuf, http/json, grpc',
    );
    expect(() => checkTracingEnv({ OTEL_TRACES_SAMPLER: 'sometimes' })).toThrow(
      /^OTEL_TRACES_SAMPLER="sometimes"/,
    );
    for (const endpoint of ['localhost:4318', 'not a url'])
      expect(() => checkTracingEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint })).toThrow(
        `OTEL_EXPORTER_OTLP_ENDPOINT=${JSON.stringify(endpoint)}: not an http:// or https:// URL`,
      );
    expect(() =>
      checkTracingEnv({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '2' }),
    ).toThrow('OTEL_TRACES_SAMPLER_ARG="2": must be a number from 0 to 1');
    expect(() => checkTracingEnv({ OTEL_TRACES_EXPORTER: 'zipkin' })).toThrow(
      /OTEL_TRACES_EXPORTER="zipkin"/,
    );
    await expect(startTracing({ OTEL_TRACES_SAMPLER: 'sometimes' }, { http: false })).rejects.toThrow(
      /OTEL_TRACES_SAMPLER/,
    );
  });

  it('links only to a well-formed traceparent', () => {
    const good = `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01`;
    expect(linksTo(good, 'resumes')).toEqual([
      {
        context: { traceId: 'a'.repeat(32), spanId: 'b'.repeat(16), traceFlags: 1, isRemote: true },
        attributes: { 'agentstate.link': 'resumes' },
      },
    ]);
    for (const bad of [null, 42, 'garbage', `00-${'0'.repeat(32)}-${'b'.repeat(16)}-01`, `${good}x`])
      expect(linksTo(bad, 'resumes')).toEqual([]);
  });
});
