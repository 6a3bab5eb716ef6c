import type { Config } from './config.js';

/**
 * The configured secrets, which logs, traces and the dashboard replace verbatim whatever their
 * shape. Every credential the settings can hold belongs here: a random key of no known shape
 * (BRAVE_API_KEY) reached the log in clear while this list named only the model, Slack, Discord,
 * dashboard and OTLP credentials. Tool settings count by name (…key, …token, …secret, …password),
 * wherever they came from (env or the config file), and so does the password in HERMES_STORE_URL.
 */
export function secretValues(config: Config): string[] {
  // OTLP headers carry the collector's credentials (an API key, a Basic header).
  const all = [
    config.model.apiKey,
    config.slack?.botToken,
    config.slack?.signingSecret,
    config.slack?.appToken,
    config.discord?.token,
    config.dashboard?.token,
    ...Object.values(config.telemetry?.headers ?? {}),
    urlPassword(config.storeUrl),
    ...Object.values(config.tools).flatMap((t) => secretSettings(t.settings)),
    ...config.extensions.secrets,
  ];
  return [...new Set(all.filter((s): s is string => s !== undefined && s !== '' && s !== 'not-needed'))];
}

const SECRET_SETTING = /(?:key|token|secret|password|passwd|credential)s?$/i;

function secretSettings(settings: Record<string, unknown> | undefined): string[] {
  return Object.entries(settings ?? {}).flatMap(([name, value]) => (SECRET_SETTING.test(name) && typeof value === 'string' ? [value] : []));
}

function urlPassword(url: string | undefined): string | undefined {
  if (!url) return undefined;
  try {
    return decodeURIComponent(new URL(url).password) || undefined;
  } catch {
    return undefined;
  }
}
