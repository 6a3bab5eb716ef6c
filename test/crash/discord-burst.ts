import type { APIMessage } from 'discord-api-types/v10';
import { RESTART_INTERRUPTED } from '../../src/gateway/user-messages.js';
import { DEFAULT_USER, type FakeDiscord, type RestCall } from '../fakes/discord/fake-discord.js';
import type { FakeWeb } from '../fakes/web/fake-web.js';
import { startBot, waitUntil, type BotProcess } from './crash-rig.js';

/**
 * The Discord side of the kill -9 crash test: mentions in a few threads arrive over the fake
 * gateway (plain ones in a few shared threads, each one needing approval in a thread of its
 * own), a person clicks Approve on every prompt (a click Discord saw no acknowledgement for is
 * clicked again), and the bot process is killed at random moments.
 *
 * Discord has no acknowledgement for a message and does not redeliver to a new gateway session:
 * what was delivered to a process killed before it accepted the message is gone, as with any
 * Discord bot. So a message counts as acknowledged once the bot accepted it (its dedupe mark in
 * `hermes_inbound`, written with its work row in one transaction), and the test counts the others
 * and reports them.
 */

interface Random {
  next(): number;
  int(lo: number, hi: number): number;
  chance(p: number): boolean;
}

export interface DiscordMention {
  tag: string;
  id: string;
  thread: string;
  approval: boolean;
  /** Posted while the bot ran (before the kill was sent) and its gateway connection was up. */
  delivered: boolean;
  sentAt: number;
}

const THREADS = ['510000000000000001', '510000000000000002', '510000000000000003', '510000000000000004', '510000000000000005'];

export interface DiscordInstance {
  name: string;
  env: Record<string, string>;
  proc?: BotProcess;
  up: boolean;
}

export class DiscordCrashRun {
  readonly mentions: DiscordMention[] = [];
  readonly processes: BotProcess[] = [];
  readonly killedAt: number[] = [];
  /** How long each start took until ready (ms). */
  readonly startMs: number[] = [];
  clicks = { sent: 0, acked: 0 };
  /** Each click and what came of it, for a failure's logs. */
  private readonly clickLog: string[] = [];
  private clicked = new Map<string, 'acked' | 'sending'>();
  private clicking = false;
  private clickLoop: Promise<void> | undefined;
  private pending = new Set<Promise<void>>();

  constructor(
    private readonly discord: FakeDiscord,
    private readonly web: FakeWeb,
    readonly instances: DiscordInstance[],
    private readonly rnd: Random,
  ) {}

  /** Starts an instance; resolves once it is ready and some instance holds the gateway connection. */
  async start(inst: DiscordInstance): Promise<void> {
    inst.proc = startBot(`${inst.name}#${this.processes.filter((p) => p.name.startsWith(`${inst.name}#`)).length + 1}`, inst.env);
    this.processes.push(inst.proc);
    const t0 = Date.now();
    await inst.proc.ready(90_000);
    this.startMs.push(Date.now() - t0);
    inst.up = true;
    await this.connected();
  }

  /** Some instance holds the gateway connection (after a kill of the holder: once another took over). */
  async connected(): Promise<void> {
    await waitUntil(() => this.discord.gateway.connected, 30_000, () => 'no instance connected to the gateway');
  }

  async kill(inst: DiscordInstance): Promise<void> {
    inst.up = false;
    this.killedAt.push(Date.now());
    await inst.proc?.kill9();
  }

  async burst(n: number, size: number, approvalShare: number): Promise<void> {
    for (let i = 1; i <= size; i++) {
      const tag = `b${n}-${String(i).padStart(2, '0')}`;
      const approval = this.rnd.chance(approvalShare);
      // A plain mention goes to one of a few shared threads (their order is checked); one that
      // needs approval opens a thread of its own, so no later message of its session supersedes
      // the prompt before the person clicks.
      const pick = THREADS[this.rnd.int(0, THREADS.length - 1)]!;
      const thread = approval ? `52${String(n * 1000 + i).padStart(16, '0')}` : pick;
      const delivered = this.instances.some((x) => x.up) && this.discord.gateway.connected;
      const id = this.discord.sendThreadMessage({ author: DEFAULT_USER, content: approval ? `approve ${tag}` : tag, threadId: thread, mentionBot: true });
      this.mentions.push({ tag, id, thread, approval, delivered, sentAt: Date.now() });
      await new Promise((r) => setTimeout(r, this.rnd.int(0, 40)));
    }
  }

  /** Bot posts (their REST calls) that reply to a message. */
  private repliesTo(id: string): RestCall[] {
    return this.discord.calls.filter((c) => c.method === 'POST' && /^\/channels\/\d+\/messages$/.test(c.path) && (c.body as { message_reference?: { message_id?: string } } | undefined)?.message_reference?.message_id === id);
  }

  outcome(m: DiscordMention): { answers: number; interrupted: number; prompts: number; other: string[]; at: number[] } {
    const o = { answers: 0, interrupted: 0, prompts: 0, other: [] as string[], at: [] as number[] };
    for (const c of this.repliesTo(m.id)) {
      const body = c.body as { content?: string; components?: unknown[] };
      if (JSON.stringify(body.components ?? []).includes('hermes:approve:')) o.prompts++;
      else if (body.content === `answer to ${m.tag}` || body.content === `finished ${m.tag}`) {
        o.answers++;
        o.at.push(c.at);
      } else if (body.content === RESTART_INTERRUPTED) {
        o.interrupted++;
        o.at.push(c.at);
      } else o.other.push(String(body.content));
    }
    return o;
  }

  private prompts(): APIMessage[] {
    return this.discord.calls
      .filter((c) => c.method === 'POST' && JSON.stringify((c.body as { components?: unknown }).components ?? []).includes('hermes:approve:'))
      .map((c) => c.response as APIMessage)
      .filter((m) => m?.id !== undefined);
  }

  startClicking(): void {
    this.clicking = true;
    this.clickLoop = (async () => {
      while (this.clicking) {
        for (const prompt of this.prompts()) {
          if (this.clicked.has(prompt.id) || !this.instances.some((x) => x.up) || !this.discord.gateway.connected) continue;
          const customId = /"custom_id":"(hermes:approve:[^"]+)"/.exec(JSON.stringify(prompt.components))?.[1];
          if (!customId) continue;
          this.clicked.set(prompt.id, 'sending');
          this.clicks.sent++;
          const interaction = this.discord.clickButton({ user: DEFAULT_USER, message: prompt, customId });
          // Discord gives a bot 3 s to acknowledge; after that the person sees a failure and clicks again.
          const sentAt = Date.now();
          const p = this.discord
            .waitForCall((c) => c.method === 'POST' && c.path.startsWith(`/interactions/${interaction}/`), 3_000, 'the click acknowledgement')
            .then(
              () => {
                this.clicks.acked++;
                this.clicked.set(prompt.id, 'acked');
                this.clickLog.push(`${sentAt} click ${interaction} on prompt ${prompt.id} (${customId}): acknowledged at ${Date.now()}`);
              },
              () => {
                this.clicked.delete(prompt.id);
                this.clickLog.push(`${sentAt} click ${interaction} on prompt ${prompt.id} (${customId}): no acknowledgement in 3 s`);
              },
            );
          this.pending.add(p);
          void p.finally(() => this.pending.delete(p));
        }
        await new Promise((r) => setTimeout(r, 30));
      }
    })();
  }

  async stopClicking(): Promise<void> {
    this.clicking = false;
    await this.clickLoop;
    while (this.pending.size) await Promise.all([...this.pending]);
  }

  finished(m: DiscordMention): boolean {
    const o = this.outcome(m);
    return o.answers > 0 || o.interrupted > 0;
  }

  webhookRuns(): Map<string, number> {
    const runs = new Map<string, number>();
    for (const r of this.web.received) {
      if (!r.path.startsWith('/sink')) continue;
      const tag = (JSON.parse(r.body) as { tag?: string }).tag ?? '?';
      runs.set(tag, (runs.get(tag) ?? 0) + 1);
    }
    return runs;
  }

  logs(): string {
    const calls = this.discord.calls.map((c) => `${c.at} ${c.method} ${c.path} ${JSON.stringify(c.body ?? null).slice(0, 300)}`);
    return [
      ...this.processes.map((p) => `--- ${p.name}\n${p.output()}`),
      `--- kills at ${this.killedAt.join(', ')}`,
      `--- mentions\n${this.mentions.map((m) => JSON.stringify(m)).join('\n')}`,
      `--- clicks\n${this.clickLog.join('\n')}`,
      `--- REST calls\n${calls.join('\n')}`,
    ].join('\n');
  }

  /**
   * `accepted`: the ids the bot accepted (its dedupe marks). Every one is answered or reported
   * interrupted, once; in each thread the outcomes come in posting order; no webhook twice.
   */
  judge(accepted: Set<string>): { summary: string; problems: string[] } {
    const problems: string[] = [];
    let answered = 0;
    let interrupted = 0;
    let repeated = 0;
    for (const m of this.mentions) {
      const o = this.outcome(m);
      if (!accepted.has(m.id)) {
        if (o.answers || o.interrupted || o.prompts) problems.push(`${m.tag}: not accepted, yet answered`);
        continue;
      }
      if (o.answers > 1) problems.push(`${m.tag}: answered ${o.answers} times`);
      if (o.answers === 0 && o.interrupted === 0) problems.push(`${m.tag}: accepted, but neither answered nor reported interrupted`);
      if (o.prompts > 1) problems.push(`${m.tag}: ${o.prompts} approval prompts`);
      if (!m.approval && o.prompts) problems.push(`${m.tag}: an approval prompt for a plain message`);
      if (o.other.length) problems.push(`${m.tag}: unexpected posts ${JSON.stringify(o.other)}`);
      if (o.interrupted > 1) {
        // Posted in the moment before a kill, its row not yet deleted: told again after the restart.
        const notices = this.repliesTo(m.id).filter((c) => (c.body as { content?: string }).content === RESTART_INTERRUPTED).map((c) => c.at);
        if (notices.slice(0, -1).every((t) => this.killedAt.some((k) => k >= t && k - t < 2_000))) repeated++;
        else problems.push(`${m.tag}: reported interrupted ${o.interrupted} times`);
      }
      if (o.answers) answered++;
      if (o.interrupted) interrupted++;
    }
    // Order: in each thread, the first outcome of each accepted message comes in posting order.
    for (const thread of THREADS) {
      const inThread = this.mentions.filter((m) => m.thread === thread && accepted.has(m.id));
      const firstAt = inThread.map((m) => ({ tag: m.tag, at: Math.min(...this.outcome(m).at) }));
      for (let i = 1; i < firstAt.length; i++) {
        if (firstAt[i]!.at < firstAt[i - 1]!.at) problems.push(`thread ${thread}: ${firstAt[i]!.tag} was answered before ${firstAt[i - 1]!.tag}`);
      }
    }
    const runs = this.webhookRuns();
    for (const [tag, n] of runs) if (n > 1) problems.push(`${tag}: the approved webhook ran ${n} times`);
    const acceptedCount = this.mentions.filter((m) => accepted.has(m.id)).length;
    const offline = this.mentions.filter((m) => !m.delivered).length;
    const lost = this.mentions.filter((m) => m.delivered && !accepted.has(m.id)).length;
    const summary =
      `${this.mentions.length} mentions (${this.mentions.filter((m) => m.approval).length} needing approval) in ${THREADS.length} threads, ${this.killedAt.length} kills, ` +
      `${acceptedCount} accepted, ${offline} posted while the bot was offline, ${lost} delivered to a process killed before it accepted them (within ${Math.max(0, ...this.mentions.filter((m) => m.delivered && !accepted.has(m.id)).map((m) => Math.min(...this.killedAt.filter((k) => k >= m.sentAt)) - m.sentAt))} ms before a kill); ` +
      `${answered} answered, ${interrupted} reported interrupted (${repeated} told twice across a kill), ` +
      `${this.clicks.sent} clicks sent, ${this.clicks.acked} acknowledged, ${[...runs.values()].reduce((a, b) => a + b, 0)} webhooks run, ${problems.length} problems; starts took ${this.startMs.join('/')} ms`;
    return { summary, problems };
  }
}
