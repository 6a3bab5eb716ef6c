import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/settings/load-config.js';
import { configHash } from '../../src/settings/config-hash.js';

describe('HERMES_AUDIT_DAYS and the config hash', () => {
  it('defaults to 365 days, takes 1 to 36500, and names the variable and the fix otherwise', () => {
    const d = loadConfig({});
    expect(d.ok && d.config.audit.days).toBe(365);
    const seven = loadConfig({ HERMES_AUDIT_DAYS: '7' });
    expect(seven.ok && seven.config.audit.days).toBe(7);
    for (const bad of ['0', '-1', '1.5', 'forever', '36501']) {
      const r = loadConfig({ HERMES_AUDIT_DAYS: bad });
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.errors.join('\n')).toMatch(/HERMES_AUDIT_DAYS.*days the audit record is kept/);
    }
  });

  it('changes with a setting, not with a secret, and never contains one', () => {
    const cfg = (env: Record<string, string>) => {
      const r = loadConfig({ OPENAI_API_KEY: 'sk-first-secret-key-000000', ...env });
      if (!r.ok) throw new Error(r.errors.join('\n'));
      return r.config;
    };
    const base = configHash(cfg({}));
    expect(configHash(cfg({}))).toBe(base);
    expect(configHash(cfg({ HERMES_MAX_STEPS: '4' }))).not.toBe(base);
    expect(configHash(cfg({ OPENAI_API_KEY: 'sk-other-secret-key-11111' }))).toBe(base);
  });
});
