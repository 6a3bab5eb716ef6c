import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ToolExecutor, type PreparedCall } from '../../src/capabilities/toolkit/executor.js';
import { ToolRegistry } from '../../src/capabilities/toolkit/registry.js';
import { defineTool } from '../../src/capabilities/toolkit/tool-api.js';
import type { Config } from '../../src/settings/config.js';

const weather = defineTool({
  name: 'get_weather',
  description: 'weather',
  input: z.object({ city: z.string(), days: z.number().int().min(1).max(7).optional(), metric: z.boolean().optional() }),
  run: async () => 'sunny',
});
const time = defineTool({ name: 'get_current_time', description: 'time', input: z.object({ timezone: z.string().optional() }), run: async () => 'now' });
const wipe = defineTool({ name: 'wipe_cache', description: 'admin', category: 'admin', input: z.object({}), run: async () => 'done' });
const pay = defineTool({
  name: 'pay',
  description: 'pay',
  input: z.object({ amount: z.number() }),
  needsApproval: (args) => args.amount > 100,
  run: async () => 'paid',
});

function setup(config: Config['tools'] = {}) {
  const registry = new ToolRegistry(config);
  for (const t of [weather, time, wipe, pay]) registry.register(t);
  return new ToolExecutor({ registry, defaultTimeoutMs: 1000 });
}

const user = { isAdmin: false };
const call = (name: string, args: string) => ({ id: 'call_1', name, arguments: args });

function rejected(p: PreparedCall) {
  if (p.kind !== 'rejected') throw new Error(`expected a rejection, got ${JSON.stringify(p)}`);
  return p.outcome;
}
function ready(p: PreparedCall) {
  if (p.kind !== 'ready') throw new Error(`expected ready, got ${p.outcome.content}`);
  return p;
}

describe('ToolExecutor.prepareCall', () => {
  it('names the available tools and the closest match for an unknown tool', () => {
    const o = rejected(setup().prepareCall(call('get_wether', '{}'), user));
    expect(o).toMatchObject({ ok: false, errorKind: 'unknown_tool', callId: 'call_1', name: 'get_wether' });
    expect(o.content).toContain('Did you mean "get_weather"?');
    expect(o.content).toContain('Available tools: get_weather, get_current_time, pay.');
  });

  it('treats an admin tool as unknown for a non-admin without revealing it', () => {
    const o = rejected(setup().prepareCall(call('wipe_cache', '{}'), user));
    expect(o.errorKind).toBe('unknown_tool');
    expect(o.content).not.toContain('Available tools: get_weather, get_current_time, wipe_cache');
    expect(o.content).not.toMatch(/Available tools:.*wipe_cache/);
    expect(setup().prepareCall(call('wipe_cache', '{}'), { isAdmin: true }).kind).toBe('ready');
  });

  it('treats a tool disabled in config as unknown', () => {
    const o = rejected(setup({ get_weather: { enabled: false } }).prepareCall(call('get_weather', '{"city":"Oslo"}'), user));
    expect(o.errorKind).toBe('unknown_tool');
    expect(o.content).toContain('Available tools: get_current_time, pay.');
  });

  it('accepts the "functions." prefix and a different case as the same tool', () => {
    expect(ready(setup().prepareCall(call('functions.get_weather', '{"city":"Oslo"}'), user)).call.name).toBe('get_weather');
    expect(ready(setup().prepareCall(call('Get_Weather', '{"city":"Oslo"}'), user)).tool).toBe(weather);
  });

  it('asks for valid JSON and quotes the parse problem', () => {
    const o = rejected(setup().prepareCall(call('get_weather', '{"city": "Oslo",'), user));
    expect(o.errorKind).toBe('bad_json');
    expect(o.content).toMatch(/not valid JSON \(.+\)/);
    expect(o.content).toContain('Received: {"city": "Oslo",');
    expect(o.content).toContain('one JSON object');
  });

  it('unwraps arguments that were JSON-encoded twice', () => {
    const twice = JSON.stringify(JSON.stringify({ city: 'Oslo', days: 2 }));
    expect(ready(setup().prepareCall(call('get_weather', twice), user)).args).toEqual({ city: 'Oslo', days: 2 });
  });

  it('treats empty arguments as no arguments', () => {
    expect(ready(setup().prepareCall(call('get_current_time', ''), user)).args).toEqual({});
    expect(ready(setup().prepareCall(call('get_current_time', 'null'), user)).args).toEqual({});
  });

  it('coerces numbers and booleans sent as strings, and null for optional fields', () => {
    const p = ready(setup().prepareCall(call('get_weather', '{"city":"Oslo","days":"3","metric":"true"}'), user));
    expect(p.args).toEqual({ city: 'Oslo', days: 3, metric: true });
    const q = ready(setup().prepareCall(call('get_weather', '{"city":"Oslo","days":null,"metric":"null"}'), user));
    expect(q.args).toEqual({ city: 'Oslo' });
  });

  it('reports invalid arguments as path: message lines without a stack', () => {
    const o = rejected(setup().prepareCall(call('get_weather', '{"days": 9, "metric": "maybe"}'), user));
    expect(o.errorKind).toBe('invalid_args');
    const lines = o.content.split('\n');
    expect(lines[0]).toBe('Invalid arguments for get_weather:');
    expect(lines).toContain('city: required field is missing (expected string)');
    expect(lines.some((l) => l.startsWith('days: ') && l.includes('7'))).toBe(true);
    expect(lines).toContain('metric: Invalid input: expected boolean, received string');
    expect(o.content).not.toMatch(/ZodError|\n\s+at /);
    expect(o.args).toEqual({ days: 9, metric: 'maybe' });
  });

  it('decides needsApproval: config override first, then the tool rule', () => {
    expect(ready(setup().prepareCall(call('pay', '{"amount": 5}'), user)).needsApproval).toBe(false);
    expect(ready(setup().prepareCall(call('pay', '{"amount": "500"}'), user)).needsApproval).toBe(true);
    expect(ready(setup({ pay: { needsApproval: false } }).prepareCall(call('pay', '{"amount": 500}'), user)).needsApproval).toBe(false);
    expect(ready(setup({ get_weather: { needsApproval: true } }).prepareCall(call('get_weather', '{"city":"x"}'), user)).needsApproval).toBe(true);
  });
});

describe('closest match for unknown tools', () => {
  it('prefers a tool whose name contains the shortened name', () => {
    const o = rejected(setup().prepareCall(call('time', '{}'), user));
    expect(o.content).toContain('Did you mean "get_current_time"?');
  });

  it('says so when no tools are available at all', () => {
    const executor = new ToolExecutor({ registry: new ToolRegistry({}), defaultTimeoutMs: 1000 });
    const o = rejected(executor.prepareCall(call('anything', '{}'), user));
    expect(o.content).toContain('no tools are available right now');
  });
});
