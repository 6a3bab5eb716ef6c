import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/settings/load-config.js';
import { secretValues } from '../../src/settings/config-secrets.js';

/** The OpenTelemetry settings as loadConfig reads them: the one line a bad value gets, and what a good one means. */

const base = { OPENAI_API_KEY: 'test-key-0000' };
const load = (env: Record<string, string>) => loadConfig({ ...base, ...env }, '/nonexistent-hermes-cwd');

describe('telemetry settings', () => {
  it('are off when no endpoint is set', () => {
    const r = load({ OTEL_SERVICE_NAME: 'x', OTEL_EXPORTER_OTLP_TIMEOUT: '50' });
    expect(r.ok && r.config.telemetry).toBe(undefined);
  });

  it('read the base endpoint (adding /v1/traces) with the spec defaults', () => {
    const r = load({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' });
    expect(r.ok && r.config.telemetry).toEqual({ tracesUrl: 'http://collector:4318/v1/traces', headers: {}, timeoutMs: 10_000, serviceName: 'hermes-agent', content: false });
  });

  it('take the traces endpoint as written, and the headers, timeout, service name and content switch', () => {
    const r = load({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://ignored:4318',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://otlp.example.com/otlp/v1/traces',
      OTEL_EXPORTER_OTLP_HEADERS: 'Authorization=Basic%20dXNlcjpwYXNzd29yZDEyMw==, x-scope-orgid=team-a',
      OTEL_EXPORTER_OTLP_TIMEOUT: '2500',
      OTEL_SERVICE_NAME: 'hermes-prod',
      HERMES_OTEL_CONTENT: 'true',
    });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.config.telemetry).toEqual({
      tracesUrl: 'https://otlp.example.com/otlp/v1/traces',
      headers: { authorization: 'Basic dXNlcjpwYXNzd29yZDEyMw==', 'x-scope-orgid': 'team-a' },
      timeoutMs: 2500,
      serviceName: 'hermes-prod',
      content: true,
    });
    // Header values are credentials: logs and traces replace them like the bot's own tokens.
    expect(secretValues(r.config)).toContain('Basic dXNlcjpwYXNzd29yZDEyMw==');
  });

  it('refuse a bad value with one line naming the variable and the fix', () => {
    const r = load({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318', OTEL_EXPORTER_OTLP_TIMEOUT: '10s', HERMES_OTEL_CONTENT: 'yes' });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.errors).toHaveLength(3);
    expect(r.errors[0]).toMatch(/^OTEL_EXPORTER_OTLP_ENDPOINT="collector:4318" is not an http\(s\) URL: set it like http:\/\/localhost:4318/);
    expect(r.errors[1]).toMatch(/^OTEL_EXPORTER_OTLP_TIMEOUT="10s" is not valid: milliseconds/);
    expect(r.errors[2]).toMatch(/^HERMES_OTEL_CONTENT="yes" is not valid: use "true"/);
  });

  it('never echo the headers back, since they hold credentials', () => {
    const r = load({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_HEADERS: 'api-key=EXAMPLEsecret0value,broken' });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.errors).toEqual(['OTEL_EXPORTER_OTLP_HEADERS is not valid: write it as name=value pairs separated by commas, e.g. authorization=Bearer%20abc,x-team=ops (values URL-encoded).']);
  });

  it('warn when content is asked for without an endpoint', () => {
    const r = load({ HERMES_OTEL_CONTENT: 'true' });
    expect(r.ok && r.warnings).toEqual(['HERMES_OTEL_CONTENT is set without OTEL_EXPORTER_OTLP_ENDPOINT, so nothing is exported: set the endpoint to turn OpenTelemetry export on.']);
  });
});
