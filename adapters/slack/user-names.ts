/**
 * Display names for user ids, via users.info, cached in memory. A name is a convenience for the
 * model and for tagging shared sessions; when the lookup fails (no users:read scope, timeout) the
 * caller falls back to the raw id, so a failure is remembered briefly instead of retried per message.
 */
import type { webApi } from '@slack/bolt';
import type { Logger } from '../../src/basics/log.js';
import { describeSlackError } from './slack-calls.js';

const TTL_MS = 60 * 60 * 1000;
const FAILURE_TTL_MS = 5 * 60 * 1000;
const MAX_ENTRIES = 2_000;
/** Names fetched for one message at most; more mentions than this keep their raw ids. */
export const MAX_LOOKUPS_PER_MESSAGE = 10;

export interface UserNames {
  /** Fetches what is not cached yet (at most `max` lookups); never throws. */
  prefetch(userIds: string[], max?: number): Promise<void>;
  /** Cached name, if known. */
  nameOf(userId: string): string | undefined;
}

export function createUserNames(client: webApi.WebClient, log: Logger, now: () => number = Date.now): UserNames {
  const cache = new Map<string, { name?: string; until: number }>();

  async function fetchOne(userId: string): Promise<void> {
    try {
      const res = await client.users.info({ user: userId });
      const u = res.user;
      const name = u?.profile?.display_name || u?.profile?.real_name || u?.real_name || u?.name || undefined;
      remember(userId, { name, until: now() + TTL_MS });
    } catch (err) {
      log.debug({ err: describeSlackError(err), userId }, 'slack: users.info failed; keeping the raw id');
      remember(userId, { until: now() + FAILURE_TTL_MS });
    }
  }

  function remember(userId: string, entry: { name?: string; until: number }): void {
    // Map keeps insertion order: dropping the first key evicts the oldest entry.
    if (cache.size >= MAX_ENTRIES) cache.delete(cache.keys().next().value!);
    cache.delete(userId);
    cache.set(userId, entry);
  }

  return {
    async prefetch(userIds, max = MAX_LOOKUPS_PER_MESSAGE) {
      const missing = [...new Set(userIds)].filter((id) => (cache.get(id)?.until ?? 0) <= now()).slice(0, max);
      await Promise.all(missing.map(fetchOne));
    },
    nameOf(userId) {
      return cache.get(userId)?.name;
    },
  };
}
