import { createRequire } from 'node:module';
import { afterEach, describe, expect, it } from 'vitest';
import { isText, startHarness, conv, user, type Harness } from '../helpers/core-harness.js';
import { startFakeCollector, type FakeCollector } from '../fakes/otlp/fake-collector.js';

/**
 * "Off by default, zero cost when off": without an endpoint not one @opentelemetry module is
 * loaded (they are CommonJS, so Node's module cache shows every one that was). The same check
 * with the endpoint set proves the check can see them. This file runs in a process of its own
 * (project unit-own-process in vitest.config.ts), so no other test file's imports are in the cache.
 */

let h: Harness | undefined;
let collector: FakeCollector | undefined;
afterEach(async () => {
  await h?.close();
  await collector?.close();
  h = undefined;
  collector = undefined;
});

const loadedOtel = () => Object.keys(createRequire(import.meta.url).cache).filter((p) => p.includes('@opentelemetry'));

describe('telemetry off', () => {
  it('loads no OpenTelemetry module without an endpoint, and loads them once one is set', async () => {
    h = await startHarness();
    h.fake.enqueue({ text: 'plain answer' });
    await h.core.gateway.handleMessage({ id: 'off-1', conversation: conv('C9', { isDm: true }), speaker: user('U9'), text: 'hi', mentioned: false });
    expect((await h.port.waitFor(isText)).text).toBe('plain answer');
    await h.core.flushTraces();
    expect(loadedOtel()).toEqual([]);
    await h.close();
    h = undefined;

    collector = await startFakeCollector();
    h = await startHarness({ env: { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url } });
    expect(loadedOtel().length).toBeGreaterThan(0);
  });
});
