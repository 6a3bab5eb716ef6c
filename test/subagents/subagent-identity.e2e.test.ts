import { z } from 'zod';
import { afterEach, describe, expect, it } from 'vitest';
import { calculator } from '../../tools/calculator.js';
import { readFileTool, writeFileTool } from '../../tools/files.js';
import { delegateTool } from '../../tools/delegate.js';
import { defineTool } from '../../src/capabilities/toolkit/tool-api.js';
import { resolveProfiles } from '../../src/settings/agent-profiles.js';
import { conv, isText, startHarness, user, type Harness } from '../helpers/core-harness.js';
import type { FakeReply } from '../fakes/openai/fake-openai.js';
import { agentOf, toolNamesOf, toolReply } from './subagent-helpers.js';

/**
 * A sub-agent works for the person who asked: its tools see that speaker, write into the session's
 * own workspace, and never get more rights than that person has (an admin-only tool only for an
 * admin). Its profile's own model is the one its requests name. Real core, SDK and fake server.
 */

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** An admin-only tool that says whom it ran for, as the tool context saw them. */
const whoami = defineTool({
  name: 'whoami',
  description: 'Says which user this call runs for.',
  input: z.object({}),
  category: 'admin',
  async run(_args, ctx) {
    return `${ctx.speaker.platform}:${ctx.speaker.userId}${ctx.isAdmin ? ' (admin)' : ''}`;
  },
});

const profiles = resolveProfiles({
  researcher: false,
  coder: false,
  writer: false,
  helper: { description: 'Helps.', instructions: 'Do the task.', tools: ['whoami', 'write_file', 'calculator'], model: 'helper-model' },
});

function start() {
  return startHarness({ tools: [calculator, readFileTool, writeFileTool, whoami, delegateTool(profiles)!], env: { HERMES_ADMINS: 'slack:UBOSS' } });
}

describe('a sub-agent acts for the person who asked', { timeout: 60_000 }, () => {
  it("has the requester's identity and rights, and writes into the session's workspace the main agent reads", async () => {
    h = await start();
    const mainScript = (): FakeReply[] => [
      { toolCalls: [{ id: 'del', name: 'delegate', arguments: { agent: 'helper', task: 'Write notes.txt and say who you are' } }] },
      { toolCalls: [{ id: 'read', name: 'read_file', arguments: { path: 'notes.txt' } }] },
      { text: 'Done.' },
    ];
    const subScript = (): FakeReply[] => [
      {
        toolCalls: [
          { id: 'who', name: 'whoami', arguments: {} },
          { id: 'write', name: 'write_file', arguments: { path: 'notes.txt', content: 'written by the helper' } },
        ],
      },
      { text: 'Wrote notes.txt.' },
    ];
    let main = mainScript();
    let sub = subScript();
    h.fake.setHandler((req) => (agentOf(req) ? sub.shift() : main.shift()) ?? { text: 'script ran out' });

    // A person without admin rights: the sub-agent is not even offered the admin-only tool.
    const dm = conv('D-plain', { isDm: true });
    await h.core.gateway.handleMessage({ id: 'who-1', conversation: dm, speaker: user('UPLAIN'), text: 'ask the helper', mentioned: true });
    await h.port.waitFor(isText, 30_000);
    const plain = h.fake.requests.filter((r) => agentOf(r) === 'helper');
    expect(plain).toHaveLength(2);
    expect(toolNamesOf(plain[0]!).sort()).toEqual(['calculator', 'write_file']);
    expect(plain.every((r) => r.model === 'helper-model')).toBe(true);
    expect(toolReply(plain[1]!, 'who')).toMatch(/There is no tool named "whoami"/);
    // The file the sub-agent wrote is in this session's workspace: the main agent reads it back.
    const plainMain = h.fake.requests.filter((r) => !agentOf(r));
    expect(plainMain.every((r) => r.model === 'gpt-4o-mini')).toBe(true);
    expect(toolReply(plainMain.at(-1)!, 'read')).toContain('written by the helper');

    // An admin: the same profile now has whoami, and it runs as that admin.
    main = mainScript();
    sub = subScript();
    const before = h.fake.requests.length;
    const bossDm = conv('D-boss', { isDm: true });
    await h.core.gateway.handleMessage({ id: 'who-2', conversation: bossDm, speaker: user('UBOSS'), text: 'ask the helper', mentioned: true });
    await h.port.waitForCount(isText, 2, 30_000);
    const boss = h.fake.requests.slice(before).filter((r) => agentOf(r) === 'helper');
    expect(toolNamesOf(boss[0]!).sort()).toEqual(['calculator', 'whoami', 'write_file']);
    expect(toolReply(boss[1]!, 'who')).toBe('slack:UBOSS (admin)');
  });
});
