import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ToolRegistry } from '../../src/capabilities/toolkit/registry.js';
import { createLogger } from '../../src/basics/log.js';
import { defineTool, type AnyTool } from '../../src/capabilities/toolkit/tool-api.js';

const make = (name: string, extra: Partial<AnyTool> = {}): AnyTool =>
  defineTool({ name, description: `${name} tool`, input: z.object({}), run: async () => name, ...extra });

const names = (r: ToolRegistry, isAdmin = false) => r.specsFor({ isAdmin }).map((s) => s.name);

describe('ToolRegistry', () => {
  it('lists registered tools in order and replaces a tool of the same name', () => {
    const r = new ToolRegistry({});
    r.register(make('a'));
    r.register(make('b'));
    const replacement = make('a', { description: 'new a' });
    r.register(replacement);
    expect(r.names()).toEqual(['a', 'b']);
    expect(r.get('a')).toBe(replacement);
    expect(r.specsFor({ isAdmin: false })[0]?.description).toBe('new a');
  });

  it('shows a tool registered or removed at run time on the very next call', () => {
    const r = new ToolRegistry({});
    r.register(make('a'));
    expect(names(r)).toEqual(['a']);
    r.register(make('late'));
    expect(names(r)).toEqual(['a', 'late']);
    r.unregister('a');
    expect(names(r)).toEqual(['late']);
    expect(r.get('a')).toBeUndefined();
  });

  it('hides tools disabled in config', () => {
    const r = new ToolRegistry({ b: { enabled: false }, a: { enabled: true } });
    r.register(make('a'));
    r.register(make('b'));
    expect(names(r)).toEqual(['a']);
    expect(r.isVisible('b', { isAdmin: true })).toBe(false);
  });

  it('offers admin tools only to admins', () => {
    const r = new ToolRegistry({});
    r.register(make('public'));
    r.register(make('secret', { category: 'admin' }));
    expect(names(r, false)).toEqual(['public']);
    expect(names(r, true)).toEqual(['public', 'secret']);
  });

  it('asks isAvailable with the tool settings at every call, and hides a tool whose check throws', () => {
    const settings = { backend: '' };
    const seen: unknown[] = [];
    const r = new ToolRegistry({ search: { settings } });
    r.register(make('search', { isAvailable: (s) => (seen.push(s), Boolean(s.backend)) }));
    r.register(make('broken', { isAvailable: () => { throw new Error('boom'); } }));
    expect(names(r)).toEqual([]);
    expect(seen[0]).toEqual({ backend: '' });
    settings.backend = 'https://searx.example';
    expect(names(r)).toEqual(['search']);
  });

  it('logs why a tool is hidden when its check throws, once per reason, and when it recovers', () => {
    const lines: Array<{ level: number; tool: string; err?: string; msg: string }> = [];
    const log = createLogger('info', { write: (l: string) => void lines.push(JSON.parse(l)) });
    const logged = () => lines.map(({ level, tool, err, msg }) => ({ level, tool, err, msg }));
    let failure: string | undefined = 'backend URL missing';
    const r = new ToolRegistry({}, log);
    r.register(make('flaky', { isAvailable: () => { if (failure) throw new Error(failure); return true; } }));
    expect(names(r)).toEqual([]);
    expect(names(r)).toEqual([]);
    expect(logged()).toEqual([{ level: 40, tool: 'flaky', err: 'backend URL missing', msg: 'tool hidden: its availability check threw' }]);
    failure = 'permission denied';
    expect(names(r)).toEqual([]);
    expect(logged()[1]).toEqual({ level: 40, tool: 'flaky', err: 'permission denied', msg: 'tool hidden: its availability check threw' });
    failure = undefined;
    expect(names(r)).toEqual(['flaky']);
    expect(names(r)).toEqual(['flaky']);
    expect(logged().slice(2)).toEqual([{ level: 30, tool: 'flaky', err: undefined, msg: 'tool availability check works again' }]);
  });

  it('merges operator settings over the tool defaults', () => {
    const r = new ToolRegistry({ a: { timeoutMs: 500, needsApproval: true, settings: { k: 1 } } });
    r.register(make('a', { timeoutMs: 9000, maxResultChars: 100 }));
    r.register(make('b', { timeoutMs: 9000 }));
    expect(r.settingsFor('a')).toEqual({ enabled: true, timeoutMs: 500, maxResultChars: 100, needsApproval: true, settings: { k: 1 } });
    expect(r.settingsFor('b')).toEqual({ enabled: true, timeoutMs: 9000, maxResultChars: undefined, needsApproval: undefined, settings: {} });
  });

  it('refuses a tool whose input is not an object, and reports config for unknown tools', () => {
    const r = new ToolRegistry({ typo_tool: { enabled: false } });
    expect(() => r.register(defineTool({ name: 'x', description: 'x', input: z.number(), run: async () => '' }))).toThrow(/z.object/);
    expect(r.names()).toEqual([]);
    expect(r.unknownConfiguredTools()).toEqual(['typo_tool']);
  });
});
