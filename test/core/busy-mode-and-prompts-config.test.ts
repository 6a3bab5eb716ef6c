import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/settings/load-config.js';
import { DEFAULT_SUGGESTED_PROMPTS } from '../../src/settings/slack-file.js';

const base = { OPENAI_API_KEY: 'k' };
const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function withFile(yaml: string): Promise<{ HERMES_CONFIG: string }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-cfg-'));
  dirs.push(dir);
  const file = path.join(dir, 'hermes.config.yaml');
  await writeFile(file, yaml);
  return { HERMES_CONFIG: file };
}

describe('HERMES_BUSY_MODE', () => {
  it('defaults to steer and takes queue and interrupt', () => {
    const d = loadConfig(base, os.tmpdir());
    expect(d.ok && d.config.busyMode).toBe('steer');
    for (const mode of ['queue', 'interrupt', 'steer'] as const) {
      const r = loadConfig({ ...base, HERMES_BUSY_MODE: mode }, os.tmpdir());
      expect(r.ok && r.config.busyMode).toBe(mode);
    }
  });
  it('refuses anything else with the three choices', () => {
    const r = loadConfig({ ...base, HERMES_BUSY_MODE: 'wait' }, os.tmpdir());
    expect(r.ok).toBe(false);
    expect(!r.ok && r.errors).toEqual([expect.stringMatching(/^HERMES_BUSY_MODE="wait" is not valid: .*"steer".*"queue".*"interrupt"/)]);
  });
});

describe('slack: suggested_prompts', () => {
  it('defaults when the file has none', async () => {
    const r = loadConfig({ ...base, ...(await withFile('tools: {}\n')) }, os.tmpdir());
    expect(r.ok && r.config.slackAssistant.suggestedPrompts).toEqual(DEFAULT_SUGGESTED_PROMPTS);
  });
  it('takes one to four prompts with a title and a message', async () => {
    const r = loadConfig({ ...base, ...(await withFile('slack:\n  suggested_prompts:\n    - {title: Hi, message: Say hi}\n')) }, os.tmpdir());
    expect(r.ok && r.config.slackAssistant.suggestedPrompts).toEqual([{ title: 'Hi', message: 'Say hi' }]);
  });
  it('refuses five prompts, a prompt without a message and unknown keys, naming the place and the doc', async () => {
    const five = Array.from({ length: 5 }, (_, i) => `    - {title: T${i}, message: M${i}}`).join('\n');
    const tooMany = loadConfig({ ...base, ...(await withFile(`slack:\n  suggested_prompts:\n${five}\n`)) }, os.tmpdir());
    expect(!tooMany.ok && tooMany.errors).toEqual([expect.stringMatching(/slack\.suggested_prompts: Slack shows at most 4 suggested prompts; see docs\/slack\.md "Assistant threads"/)]);
    const noMessage = loadConfig({ ...base, ...(await withFile('slack:\n  suggested_prompts:\n    - {title: Hi}\n')) }, os.tmpdir());
    expect(!noMessage.ok && noMessage.errors.join('\n')).toMatch(/slack\.suggested_prompts\.0\.message/);
    const unknown = loadConfig({ ...base, ...(await withFile('slack:\n  prompts: []\n')) }, os.tmpdir());
    expect(!unknown.ok && unknown.errors.join('\n')).toMatch(/slack.*prompts/);
  });
});
