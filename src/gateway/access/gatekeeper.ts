import type { Clock } from '../../basics/clock.js';
import type { Logger } from '../../basics/log.js';
import type { OpenedDatabase } from '../../state/store/database.js';
import { createNotices, createPersonRoles } from '../../state/usage/access-tables.js';
import type { Tracer } from '../../runtime/trace/tracer.js';
import type { Conversation, Speaker } from '../../basics/types.js';
import { speakerKey } from '../../basics/types.js';
import { matchRule, type AllowRule } from '../../settings/allow-rules.js';
import { createRateLimiter, type RateLimiter } from './rate-limiter.js';
import type { AuditLog } from '../../state/audit/audit-log.js';
import { createUsageMeter, type DailyUsage, type Payer, type Pool, type UsageMeter } from '../../state/usage/usage-meter.js';
import { personListed, policyAdmits } from '../../settings/channel-policies.js';
import type { PolicyBook } from '../../settings/policy-book.js';

/**
 * Who may use the bot, and how much: HERMES_ALLOW, a channel policy's `users`/`roles`,
 * HERMES_USER_RATE, HERMES_USER_DAILY_TOKENS, a channel's `daily_tokens` and HERMES_DAILY_TOKENS in
 * one place. Every entry point asks here before anything costs a model call — messages, slash
 * tasks and commands, approval clicks, reminders and scheduled runs — and every refusal is traced
 * with its reason. Verdicts are data; the words people read live in gateway/user-messages.ts.
 *
 * Admins pass every access rule and their own per-person limits (and are still counted); the
 * shared budgets (channel, bot) hold for them too. The terminal chat is the operator at the
 * machine, so it passes the access rules and per-person limits as well.
 */

export interface Requester {
  speaker: Speaker;
  /** Where they wrote; channel rules need it (absent: only user and role rules can match). */
  conversation?: Conversation;
  /** Role ids from the verified event (Discord members). Absent: the roles last seen for this person. */
  roles?: readonly string[];
}

export type Refusal =
  | { reason: 'not_allowed' }
  | { reason: 'rate_limit'; perMinute: number; retryAfterMs: number }
  | { reason: 'daily_tokens'; usage: DailyUsage };

export type RefusalReason = Refusal['reason'];
/** What was refused: the trace and `npm run stats` count refusals by reason and by this. */
export type RefusalSource = 'message' | 'command' | 'click' | 'turn' | 'reminder' | 'schedule';

export interface UsageReport {
  today: DailyUsage;
  ratePerMinute: number;
  /** Admins only: the heaviest users today. */
  top?: Array<{ person: string; used: number }>;
}

export interface Gatekeeper {
  /** `platform:userId`, the key limits are counted under (the same form HERMES_ADMINS uses). */
  personOf(speaker: Pick<Speaker, 'platform' | 'userId'>): string;
  isAdmin(speaker: Pick<Speaker, 'platform' | 'userId'>): boolean;
  /**
   * Whether this person may use the bot at all (HERMES_ALLOW, admins, the terminal). The one check
   * for work that starts without a message: reminders and scheduled runs ask it at run time, so a
   * creator taken off the list stops running.
   */
  isAllowed(who: Requester): Promise<boolean>;
  /** Access only, for commands, clicks, reminders and scheduled runs. Traced when refused. */
  checkAccess(who: Requester, source: RefusalSource): Promise<Refusal | undefined>;
  /**
   * Whether a refused person's message should get the private notice now: true at most once an
   * hour per person (across instances and restarts), so people are told, not nagged.
   */
  noticeDue(speaker: Speaker): Promise<boolean>;
  /** Before a message or slash task becomes a turn: access, then the rate, then today's tokens. */
  admitMessage(who: Requester, source: 'message' | 'command'): Promise<Refusal | undefined>;
  /** Whom a turn's model calls are charged to (the person, the channel's and the bot's budgets), and whether the person's budget binds them. */
  payer(speaker: Speaker, conversation?: Conversation): Payer;
  readonly meter: UsageMeter;
  /** Records a refusal decided elsewhere (a turn stopped by the budget): trace, log and audit. */
  traceRefusal(speaker: Speaker, refusal: Refusal, source: RefusalSource, conversation?: Conversation): void;
  report(speaker: Speaker): Promise<UsageReport>;
}

export interface GatekeeperDeps {
  /** The operational tables: token counts, rate buckets, notices given, roles last seen. */
  database: OpenedDatabase;
  clock: Clock;
  tracer: Pick<Tracer, 'record'>;
  log: Logger;
  /** Every refusal is also an audit row (absent in tests that do not read it). */
  audit?: Pick<AuditLog, 'record'>;
  admins: readonly string[];
  /** Empty: everyone may use the bot. */
  allow: readonly AllowRule[];
  /** HERMES_USER_RATE; 0 = no rate limit. */
  ratePerMinute: number;
  /** HERMES_USER_DAILY_TOKENS; 0 = no daily limit. */
  dailyTokens: number;
  /** HERMES_DAILY_TOKENS, the whole bot per UTC day; 0 / absent = no limit. */
  botDailyTokens?: number;
  /** Channel policies: `users`/`roles` and `daily_tokens` where a message comes from. */
  policies?: PolicyBook;
  /** The bot-wide budget reached 80 % today (called once a day). */
  onBotWarning?(usage: DailyUsage): void;
}

/** One notice per person per hour. */
export const NOTICE_INTERVAL_MS = 3_600_000;
/** How many people's last-seen roles are remembered in memory (to skip rewriting unchanged ones). */
const ROLE_CACHE_MAX = 10_000;

export function createGatekeeper(deps: GatekeeperDeps): Gatekeeper {
  const { database, clock, log, allow } = deps;
  const rate: RateLimiter | undefined = deps.ratePerMinute > 0 ? createRateLimiter({ database, clock, perMinute: deps.ratePerMinute }) : undefined;
  const meter = createUsageMeter({ database, clock, dailyLimit: deps.dailyTokens, ...(deps.onBotWarning && { onBotWarning: deps.onBotWarning }) });
  const notices = createNotices(database, () => clock.now());
  const knownRoles = createPersonRoles(database, () => clock.now());
  const roleRulesFor = new Set<string>(allow.flatMap((r) => (r.kind === 'role' ? [r.platform] : [])));
  // Channel policies may name Discord roles (`roles`, `discord:role:` users and approvers) and change on reload.
  const rolesMatter = (platform: string) => roleRulesFor.has(platform) || (platform === 'discord' && (deps.policies?.configured ?? false));
  const lastRoles = new Map<string, string>();

  const personOf = (s: Pick<Speaker, 'platform' | 'userId'>) => `${s.platform}:${s.userId}`;
  const isAdmin = (s: Pick<Speaker, 'platform' | 'userId'>) => deps.admins.includes(personOf(s));
  const exempt = (s: Pick<Speaker, 'platform' | 'userId'>) => s.platform === 'shell' || isAdmin(s);

  /** Roles from the event, remembered (durably, when they changed) for checks that have no event. */
  async function rolesOf(who: Requester): Promise<readonly string[] | undefined> {
    if (!rolesMatter(who.speaker.platform)) return undefined;
    const person = personOf(who.speaker);
    if (who.roles === undefined) return knownRoles.get(person);
    const sorted = [...who.roles].sort();
    const text = sorted.join(',');
    if (lastRoles.get(person) !== text) {
      await knownRoles.set(person, sorted);
      if (lastRoles.size >= ROLE_CACHE_MAX) lastRoles.clear();
      lastRoles.set(person, text);
    }
    return sorted;
  }

  async function isAllowed(who: Requester): Promise<boolean> {
    if (exempt(who.speaker)) return true;
    const c = who.conversation;
    const policy = c && deps.policies?.configured ? deps.policies.at(c) : undefined;
    const policyGates = policy !== undefined && (policy.users !== undefined || policy.roles !== undefined);
    if (allow.length === 0 && !policyGates) return true;
    const roles = await rolesOf(who);
    if (allow.length > 0) {
      const channelIds = c ? [c.channelId, ...(c.parentChannelId ? [c.parentChannelId] : [])] : [];
      if (matchRule(allow, { platform: who.speaker.platform, userId: who.speaker.userId, channelIds, roles }) === undefined) return false;
    }
    // The channel's `users`/`roles` narrow who is answered there, on top of HERMES_ALLOW.
    // A channel's approvers are people it expects there, whether or not `users` names them.
    return !policyGates || policyAdmits(policy, who.speaker.platform, who.speaker.userId, roles) || personListed(policy.approvers, who.speaker.platform, who.speaker.userId, roles);
  }

  /** The shared budgets a call in this conversation counts against. */
  function poolsFor(conversation: Conversation | undefined): Pool[] {
    const pools: Pool[] = [];
    const policy = conversation && deps.policies?.configured ? deps.policies.at(conversation) : undefined;
    if (conversation && policy && policy.dailyTokens > 0) {
      pools.push({ key: `channel:${conversation.platform}:${conversation.parentChannelId ?? conversation.channelId}`, limit: policy.dailyTokens, scope: 'channel' });
    }
    if ((deps.botDailyTokens ?? 0) > 0) pools.push({ key: 'bot', limit: deps.botDailyTokens!, scope: 'bot' });
    return pools;
  }
  const payer = (speaker: Speaker, conversation?: Conversation): Payer => ({ person: personOf(speaker), exempt: exempt(speaker), pools: poolsFor(conversation) });

  function traceRefusal(speaker: Speaker, refusal: Refusal, source: RefusalSource, conversation?: Conversation): void {
    deps.tracer.record({ type: 'refusal', reason: refusal.reason, source, platform: speaker.platform, userKey: speakerKey(speaker) });
    log.info({ reason: refusal.reason, source, person: personOf(speaker) }, 'request refused');
    // Not awaited: the refusal's answer must not wait on the audit (record never throws).
    void deps.audit?.record({
      kind: refusal.reason === 'not_allowed' ? 'access_refused' : 'limit_refused',
      outcome: refusal.reason,
      actor: speaker,
      ...(conversation && { conversation }),
      detail: { source, ...(refusal.reason === 'rate_limit' && { perMinute: refusal.perMinute }), ...(refusal.reason === 'daily_tokens' && { used: refusal.usage.used, limit: refusal.usage.limit, budget: refusal.usage.scope ?? 'user' }) },
    });
  }

  async function checkAccess(who: Requester, source: RefusalSource): Promise<Refusal | undefined> {
    if (await isAllowed(who)) return undefined;
    const refusal: Refusal = { reason: 'not_allowed' };
    traceRefusal(who.speaker, refusal, source, who.conversation);
    return refusal;
  }

  return {
    personOf,
    isAdmin,
    isAllowed,
    checkAccess,
    noticeDue: (speaker) => notices.claim(`access:${personOf(speaker)}`, NOTICE_INTERVAL_MS),
    async admitMessage(who, source) {
      const denied = await checkAccess(who, source);
      if (denied) return denied;
      // The shared budgets first: they bind admins too.
      const pools = poolsFor(who.conversation);
      const shared = pools.length ? await meter.exhausted({ person: personOf(who.speaker), exempt: true, pools }) : undefined;
      if (shared) {
        const refusal: Refusal = { reason: 'daily_tokens', usage: shared };
        traceRefusal(who.speaker, refusal, source, who.conversation);
        return refusal;
      }
      if (exempt(who.speaker)) return undefined;
      let refusal: Refusal | undefined;
      const taken = rate ? await rate.take(personOf(who.speaker)) : { ok: true as const };
      if (!taken.ok) refusal = { reason: 'rate_limit', perMinute: deps.ratePerMinute, retryAfterMs: taken.retryAfterMs };
      else {
        const usage = await meter.exhausted({ person: personOf(who.speaker), exempt: false });
        if (usage) refusal = { reason: 'daily_tokens', usage };
      }
      if (refusal) traceRefusal(who.speaker, refusal, source, who.conversation);
      return refusal;
    },
    payer,
    meter,
    traceRefusal,
    async report(speaker) {
      return {
        today: await meter.today(personOf(speaker)),
        ratePerMinute: deps.ratePerMinute,
        ...(isAdmin(speaker) && { top: await meter.top(5) }),
      };
    },
  };
}
