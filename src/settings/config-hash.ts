import { createHash } from 'node:crypto';
import { canonicalJson } from '../basics/canonical-json.js';
import { secretValues } from './config-secrets.js';
import type { Config } from './config.js';

/**
 * A short fingerprint of the settings in force (environment and config file together), for the
 * audit record at each start and reload: two starts with the same hash ran with the same settings.
 * Secrets are replaced before hashing, so the hash says nothing about a key (a low-entropy
 * password could otherwise be tried against it); changing only a secret keeps the hash.
 */
export function configHash(config: Config): string {
  let text = canonicalJson(config);
  // Longest first, so a secret that contains another is replaced whole.
  for (const secret of secretValues(config).sort((a, b) => b.length - a.length)) {
    text = text.split(JSON.stringify(secret).slice(1, -1)).join('[secret]');
  }
  return createHash('sha256').update(text).digest('hex').slice(0, 16);
}
