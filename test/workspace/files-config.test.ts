import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/settings/load-config.js';

describe('files and code settings', () => {
  it('defaults: workspaces under the data dir, 200 MB each, 25 MB files, 60 s and 512 MB per run', () => {
    const r = loadConfig({ HERMES_DATA_DIR: '/srv/hermes' }, os.tmpdir());
    expect(r.ok && r.config.files).toEqual({ workspaceDir: '/srv/hermes/workspaces', workspaceMb: 200, maxFileMb: 25, codeTimeoutMs: 60_000, codeMemoryMb: 512 });
  });

  it('takes each variable, relative paths from the working folder', () => {
    const r = loadConfig({ HERMES_WORKSPACE_DIR: 'ws', HERMES_WORKSPACE_MB: '50', HERMES_MAX_FILE_MB: '5', HERMES_CODE_TIMEOUT_MS: '300000', HERMES_CODE_MEMORY_MB: '1024' }, '/opt/bot');
    expect(r.ok && r.config.files).toEqual({ workspaceDir: path.join('/opt/bot', 'ws'), workspaceMb: 50, maxFileMb: 5, codeTimeoutMs: 300_000, codeMemoryMb: 1024 });
  });

  it('a bad value is one line naming the variable and the fix', () => {
    const r = loadConfig({ HERMES_WORKSPACE_MB: 'lots', HERMES_MAX_FILE_MB: '0', HERMES_CODE_TIMEOUT_MS: '600000', HERMES_CODE_MEMORY_MB: '8' }, os.tmpdir());
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.errors).toHaveLength(4);
    expect(r.errors.find((e) => e.startsWith('HERMES_CODE_TIMEOUT_MS='))).toMatch(/^HERMES_CODE_TIMEOUT_MS="600000" is not valid: run_code runs at most 300000 ms .*set 1000-300000/);
    for (const name of ['HERMES_WORKSPACE_MB', 'HERMES_MAX_FILE_MB', 'HERMES_CODE_MEMORY_MB']) expect(r.errors.join('\n')).toContain(`${name}=`);
  });
});
