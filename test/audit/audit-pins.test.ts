import { describe, expect, it } from 'vitest';
import { auditPinChanges } from '../../src/state/audit/audit-pins.js';
import type { AuditEvent } from '../../src/state/audit/audit-log.js';

type Pin = Record<string, string> | undefined;
const servers = (entries: Array<[string, Pin]>) => new Map<string, Pin>(entries);

describe('MCP and skill pin changes in the audit', () => {
  it('records each server or skill whose pin was added, changed or removed, and nothing when none changed', async () => {
    const events: AuditEvent[] = [];
    const seen = auditPinChanges({ record: async (e) => void events.push(e) }, { servers: servers([['github', { search: 'a'.repeat(64) }], ['docs', undefined]]), skills: { deploy: 'd1' } });
    await seen({ servers: servers([['github', { search: 'a'.repeat(64) }], ['docs', undefined]]), skills: { deploy: 'd1' } });
    expect(events).toEqual([]);
    await seen({ servers: servers([['github', { search: 'b'.repeat(64) }], ['docs', { read: 'c'.repeat(64) }]]), skills: {} });
    expect(events.map((e) => [e.kind, e.outcome, e.tool])).toEqual([
      ['mcp_pin', 'repinned', 'github'],
      ['mcp_pin', 'pinned', 'docs'],
      ['mcp_pin', 'unpinned', 'deploy'],
    ]);
    expect(events[0]!.detail).toMatchObject({ mcp_server: 'github', before: expect.stringMatching(/^[0-9a-f]{16}$/), after: expect.stringMatching(/^[0-9a-f]{16}$/) });
    expect(events[2]!.detail).toEqual({ skill: 'deploy', before: 'd1' });
    // The next change is compared with what was read last, not with the start.
    await seen({ servers: servers([['github', { search: 'b'.repeat(64) }], ['docs', { read: 'c'.repeat(64) }]]), skills: {} });
    expect(events).toHaveLength(3);
  });
});
