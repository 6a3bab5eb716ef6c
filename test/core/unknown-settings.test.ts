import { describe, expect, it } from 'vitest';
import { knownEnvNames } from '../../src/settings/env-schema.js';
import { loadConfig } from '../../src/settings/load-config.js';
import { closestName, unknownSettingWarnings } from '../../src/settings/unknown-settings.js';
import { envNamesInCode } from '../docs/docs-facts.js';

/** A HERMES_* variable the bot does not read is named at start, with the closest name it knows. */
describe('unknown HERMES_ settings', () => {
  it('every HERMES_ name the code reads is known (so none is ever reported as unknown)', () => {
    const known = new Set(knownEnvNames());
    const missing = [...envNamesInCode().keys()].filter((n) => n.startsWith('HERMES_') && !known.has(n));
    expect(missing, 'add these to their area in src/settings/env-schema.ts (or READ_ELSEWHERE)').toEqual([]);
  });

  it('suggests the closest known name for a typo, none for an unrelated name', () => {
    const known = knownEnvNames();
    expect(closestName('HERMES_MAX_STEP', known)).toBe('HERMES_MAX_STEPS');
    expect(closestName('HERMES_TIME_ZONE', known)).toBe('HERMES_TIMEZONE');
    expect(closestName('HERMES_COMPLETELY_DIFFERENT_THING', known)).toBeUndefined();
    expect(unknownSettingWarnings({ HERMES_MODEL: 'x', OTHER: 'y', HERMES_BANANA: '1' }, known)).toEqual([
      'HERMES_BANANA is set but hermes does not read it: see the settings table in the README for the names, or unset it.',
    ]);
  });

  it('loadConfig returns the warning and still starts', () => {
    const r = loadConfig({ HERMES_MAX_STEP: '3' });
    expect(r.ok).toBe(true);
    if (r.ok) expect(r.warnings).toContain('HERMES_MAX_STEP is set but hermes does not read it: did you mean HERMES_MAX_STEPS? Rename it, or unset it.');
  });
});
