import os from 'node:os';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/basics/log.js';
import { createRedactor } from '../../src/runtime/trace/redact.js';
import { loadConfig } from '../../src/settings/load-config.js';
import { mergeToolSettings } from '../../src/settings/config-file.js';
import { secretValues } from '../../src/settings/config-secrets.js';
import type { Config } from '../../src/settings/config.js';
import { toolSettingsFromEnv } from '../../tools/index.js';

/**
 * The attack: BRAVE_API_KEY (a random string of no known shape) reached the log in clear, because
 * the list of configured secrets that logs, traces and the dashboard replace verbatim named only
 * the model, Slack, Discord, dashboard and OTLP credentials. Every secret the settings hold must be
 * on it: the env-provided tool settings (as the bot merges them), secrets in a tool's config-file
 * settings, and the password in HERMES_STORE_URL.
 */

const BRAVE = 'BSAk3vQ9xLmZ2pR7tW4yN8cF1hJ6dG0s';
const FILE_SECRET = 'whk-5d1f8e2a9c3b7f60';
const PG_PASSWORD = 'pg-Secr3t-4471';

function botConfig(env: Record<string, string>): Config {
  const r = loadConfig(env, os.tmpdir());
  if (!r.ok) throw new Error(r.errors.join('\n'));
  // The same merge the bot does at start: env settings under the config file's.
  return { ...r.config, tools: mergeToolSettings({ ...r.config.tools, send_webhook: { settings: { signingSecret: FILE_SECRET, retries: 3 } } }, toolSettingsFromEnv(env)) };
}

describe('every configured secret is redacted', () => {
  it('BRAVE_API_KEY, a secret in tool settings and the store password never reach a log line or a trace', () => {
    const config = botConfig({ BRAVE_API_KEY: BRAVE, HERMES_STORE_URL: `postgres://hermes:${PG_PASSWORD}@db.internal:5432/hermes` });
    const secrets = secretValues(config);
    expect(secrets).toEqual(expect.arrayContaining([BRAVE, FILE_SECRET, PG_PASSWORD]));

    const lines: string[] = [];
    const log = createLogger('info', { write: (line: string) => void lines.push(line) }, 1, secrets);
    log.warn({ err: `search failed for key ${BRAVE}`, signature: FILE_SECRET }, `store ${PG_PASSWORD} and ${BRAVE} in the message`);
    const logged = lines.join('');
    expect(logged).toContain('[redacted]');
    for (const s of [BRAVE, FILE_SECRET, PG_PASSWORD]) expect(logged).not.toContain(s);

    const traced = createRedactor(secrets)({ type: 'tool_call', content: `the key is ${BRAVE}; store ${PG_PASSWORD}` });
    for (const s of [BRAVE, PG_PASSWORD]) expect(traced).not.toContain(s);
  });

  it('ordinary settings are not treated as secrets', () => {
    const secrets = secretValues(botConfig({ HERMES_SEARXNG_URL: 'http://searxng.internal:8080' }));
    expect(secrets).not.toContain('http://searxng.internal:8080');
    expect(secrets).not.toContain('3');
  });
});
