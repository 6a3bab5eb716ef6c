import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { RESTART_INTERRUPTED } from '../../src/gateway/user-messages.js';
import { startFakeOpenAI } from '../fakes/openai/fake-openai.js';
import { startFakeSlack } from '../fakes/slack/fake-slack.js';
import { startFakeWeb } from '../fakes/web/fake-web.js';
import { freshSchema } from '../helpers/postgres.js';
import type { FakeSlack } from '../fakes/slack/fake-slack.js';
import type { FakeWeb } from '../fakes/web/fake-web.js';
import { botEnv, crashModel, freePort, startBot, waitUntil, type BotProcess } from './crash-rig.js';

/**
 * The Slack side of the kill -9 crash test, for one instance (SQLite) or several (PostgreSQL):
 * bursts of mentions sent over the Events API to `/slack/events` the way Slack sends them (each
 * delivery to one instance; a delivery without a 200 is retried later with the same event_id and
 * `x-slack-retry-num`, as Slack does), a person who clicks Approve on every prompt (sometimes
 * twice at once; a click that got no 200 is clicked again), and kill -9 of an instance at random
 * moments. Afterwards it judges from the outside: what Slack was told we received, what was
 * posted in each message's thread, and what the webhook sink received.
 */

export const CHANNEL = 'C0CRASH';
const PERSON = 'U0CRASH';

export interface Mention {
  tag: string;
  text: string;
  ts: string;
  eventId: string;
  approval: boolean;
  acked: boolean;
  deliveries: number;
}

export interface Instance {
  name: string;
  port: number;
  env: Record<string, string>;
  proc?: BotProcess;
  up: boolean;
}

interface Random {
  next(): number;
  int(lo: number, hi: number): number;
  chance(p: number): boolean;
}

export interface Outcome {
  answers: number;
  interrupted: number;
  /** When each restart notice reached Slack. */
  noticeTimes: number[];
  prompts: number;
  other: string[];
}

export class SlackCrashRun {
  readonly mentions: Mention[] = [];
  kills = 0;
  /** When each kill was sent (ms since the epoch). */
  readonly killedAt: number[] = [];
  /** How long each start took until ready (ms). */
  readonly startMs: number[] = [];
  clicks = { sent: 0, acked: 0, doubles: 0 };
  private clicked = new Map<string, 'acked' | 'sending'>();
  private clicking = false;
  private clickLoop: Promise<void> | undefined;
  private inFlight = new Set<Promise<void>>();

  constructor(
    private readonly slack: FakeSlack,
    private readonly web: FakeWeb,
    readonly instances: Instance[],
    /** The plan: which mentions need approval, the gaps between them, when to kill. */
    private readonly rnd: Random,
    /** Choices that depend on timing (which instance, double clicks), apart so the plan repeats with its seed. */
    private readonly live: Random = rnd,
  ) {
    slack.setUser(PERSON, 'Crash Tester');
  }

  /** Every process started, in order (their logs explain a failure). */
  readonly processes: BotProcess[] = [];

  async start(inst: Instance): Promise<void> {
    inst.proc = startBot(`${inst.name}#${this.processes.filter((p) => p.name.startsWith(`${inst.name}#`)).length + 1}`, inst.env);
    this.processes.push(inst.proc);
    const t0 = Date.now();
    await inst.proc.ready(90_000);
    this.startMs.push(Date.now() - t0);
    inst.up = true;
  }

  async kill(inst: Instance): Promise<void> {
    inst.up = false;
    this.killedAt.push(Date.now());
    await inst.proc?.kill9();
    this.kills++;
  }

  private target(): Instance | undefined {
    const up = this.instances.filter((i) => i.up);
    return up.length ? up[this.live.int(0, up.length - 1)] : undefined;
  }

  /** One delivery of a mention to a live instance; a 200 is Slack's "acknowledged". */
  private async deliver(m: Mention): Promise<void> {
    const inst = this.target();
    if (!inst) return;
    m.deliveries++;
    const event = { type: 'app_mention', channel: CHANNEL, user: PERSON, text: `<@${this.slack.botUserId}> ${m.text}`, ts: m.ts };
    const res = await this.slack
      .sendEvent(`http://127.0.0.1:${inst.port}/slack/events`, event, { eventId: m.eventId, ...(m.deliveries > 1 && { retryNum: m.deliveries - 1 }) })
      .catch(() => undefined);
    if (res?.status === 200) m.acked = true;
  }

  private track(p: Promise<void>): void {
    this.inFlight.add(p);
    void p.finally(() => this.inFlight.delete(p));
  }

  /** 20 mentions, a few of them needing an approval, sent a few milliseconds apart without waiting for the acks. */
  async burst(n: number, size: number, approvalShare: number): Promise<void> {
    for (let i = 1; i <= size; i++) {
      const tag = `b${n}-${String(i).padStart(2, '0')}`;
      const approval = this.rnd.chance(approvalShare);
      const m: Mention = { tag, text: approval ? `approve ${tag}` : tag, ts: this.slack.nextTs(), eventId: `EvCrash${n}x${i}`, approval, acked: false, deliveries: 0 };
      this.mentions.push(m);
      this.track(this.deliver(m));
      await new Promise((r) => setTimeout(r, this.rnd.int(0, 40)));
    }
  }

  /** Waits for deliveries in flight (a killed instance fails them at once). */
  async settled(): Promise<void> {
    while (this.inFlight.size) await Promise.all([...this.inFlight]);
  }

  /** Slack's retries: every delivery not acknowledged is sent again until it is. */
  async redeliver(): Promise<void> {
    await this.settled();
    for (let round = 0; round < 10 && this.mentions.some((m) => !m.acked); round++) {
      for (const m of this.mentions.filter((x) => !x.acked)) this.track(this.deliver(m));
      await this.settled();
      if (this.mentions.some((m) => !m.acked)) await new Promise((r) => setTimeout(r, 200));
    }
  }

  /** Approval prompts posted so far: approval id, message ts and the thread they are in. */
  prompts(): Array<{ id: string; ts: string; thread: string }> {
    return this.slack
      .posts({ channel: CHANNEL })
      .flatMap((p) => {
        const id = approvalIdOf(p.args.blocks);
        return id && p.thread_ts ? [{ id, ts: p.ts, thread: p.thread_ts }] : [];
      });
  }

  /** The person: clicks Approve on every prompt until Slack says the click arrived. */
  startClicking(): void {
    this.clicking = true;
    this.clickLoop = (async () => {
      while (this.clicking) {
        for (const p of this.prompts()) {
          if (this.clicked.has(p.id)) continue;
          const inst = this.target();
          if (!inst) break;
          this.clicked.set(p.id, 'sending');
          const double = this.live.chance(0.25);
          const other = double ? this.target() : undefined;
          const click = (to: Instance) => {
            this.clicks.sent++;
            return this.slack
              .sendClick(`http://127.0.0.1:${to.port}/slack/events`, { actionId: 'hermes_approve', value: p.id, userId: PERSON, channelId: CHANNEL, messageTs: p.ts, threadTs: p.thread })
              .then((r) => r.status === 200, () => false);
          };
          if (other) this.clicks.doubles++;
          this.track(
            Promise.all([click(inst), ...(other ? [click(other)] : [])]).then((oks) => {
              this.clicks.acked += oks.filter(Boolean).length;
              if (oks.some(Boolean)) this.clicked.set(p.id, 'acked');
              else this.clicked.delete(p.id); // nothing arrived: the person clicks again
            }),
          );
        }
        await new Promise((r) => setTimeout(r, 30));
      }
    })();
  }

  async stopClicking(): Promise<void> {
    this.clicking = false;
    await this.clickLoop;
    await this.settled();
  }

  /** The logs of every process started, for a failure's investigation. */
  logs(): string {
    return this.processes.map((p) => `--- ${p.name}\n${p.output()}`).join('\n');
  }

  /** What was posted in a mention's thread (its answer, a restart notice, a prompt, anything else). */
  outcome(m: Mention): Outcome {
    const o: Outcome = { answers: 0, interrupted: 0, noticeTimes: [], prompts: 0, other: [] };
    const calls = this.slack.callsTo('chat.postMessage').filter((c) => c.status === 200 && c.args.channel === CHANNEL && c.args.thread_ts === m.ts);
    for (const c of calls) {
      const p = { text: String(c.args.text ?? ''), args: c.args };
      if (approvalIdOf(p.args.blocks)) o.prompts++;
      else if (p.text === `answer to ${m.tag}` || p.text === `finished ${m.tag}`) o.answers++;
      else if (p.text === RESTART_INTERRUPTED) {
        o.interrupted++;
        o.noticeTimes.push(c.at);
      }
      else o.other.push(p.text);
    }
    return o;
  }

  /** Done: answered, or told it was interrupted (an approval's message needs its end, not just the prompt). */
  finished(m: Mention): boolean {
    const o = this.outcome(m);
    return o.answers > 0 || o.interrupted > 0;
  }

  /** Webhook calls per tag: each is one approved action that ran. */
  webhookRuns(): Map<string, number> {
    const runs = new Map<string, number>();
    for (const r of this.web.received) {
      if (!r.path.startsWith('/sink')) continue;
      const tag = (JSON.parse(r.body) as { tag?: string }).tag ?? '?';
      runs.set(tag, (runs.get(tag) ?? 0) + 1);
    }
    return runs;
  }

  async waitAllFinished(timeoutMs: number): Promise<void> {
    await waitUntil(
      () => this.mentions.every((m) => !m.acked || this.finished(m)),
      timeoutMs,
      () => {
        const stuck = this.mentions.filter((m) => m.acked && !this.finished(m)).map((m) => ({ tag: m.text, ts: m.ts, ...this.outcome(m), clicked: this.prompts().filter((p) => p.thread === m.ts).map((p) => this.clicked.get(p.id) ?? 'no') }));
        return `acknowledged mentions without an answer or a restart notice: ${JSON.stringify(stuck)}\n${this.instances.map((i) => `--- ${i.name}\n${i.proc?.output().slice(-3000) ?? ''}`).join('\n')}`;
      },
    );
  }

  /** The numbers a run reports, and the failures it found. */
  judge(): { summary: string; problems: string[] } {
    const problems: string[] = [];
    let answered = 0;
    let interrupted = 0;
    let both = 0;
    let repeatedNotices = 0;
    for (const m of this.mentions) {
      if (!m.acked) {
        problems.push(`${m.tag}: Slack never got a 200 for it after ${m.deliveries} deliveries`);
        continue;
      }
      const o = this.outcome(m);
      if (o.answers > 1) problems.push(`${m.tag}: answered ${o.answers} times`);
      if (o.answers === 0 && o.interrupted === 0) problems.push(`${m.tag}: neither answered nor reported interrupted`);
      // A notice posted in the moment before a kill, whose work row was not yet deleted, is posted
      // again after the restart: told twice rather than never. Anything else is a fault.
      if (o.interrupted > 1) {
        const explained = o.noticeTimes.slice(0, -1).every((t) => this.killedAt.some((k) => k >= t && k - t < 2_000));
        if (explained) repeatedNotices++;
        else problems.push(`${m.tag}: reported interrupted ${o.interrupted} times (at ${o.noticeTimes.join(', ')}; kills at ${this.killedAt.join(', ')})`);
      }
      if (o.prompts > 1) problems.push(`${m.tag}: ${o.prompts} approval prompts for one call`);
      if (!m.approval && o.prompts > 0) problems.push(`${m.tag}: an approval prompt for a plain message`);
      if (o.other.length) problems.push(`${m.tag}: unexpected posts ${JSON.stringify(o.other)}`);
      if (o.answers) answered++;
      if (o.interrupted) interrupted++;
      if (o.answers && o.interrupted) both++;
    }
    const runs = this.webhookRuns();
    for (const [tag, n] of runs) if (n > 1) problems.push(`${tag}: the approved webhook ran ${n} times`);
    for (const tag of runs.keys()) if (!this.mentions.some((m) => m.approval && m.tag === tag)) problems.push(`webhook for unknown tag ${tag}`);
    const approvals = this.mentions.filter((m) => m.approval).length;
    const redelivered = this.mentions.filter((m) => m.deliveries > 1).length;
    const summary =
      `${this.mentions.length} mentions (${approvals} needing approval), ${this.kills} kills, ${redelivered} redelivered by "Slack", ` +
      `${answered} answered, ${interrupted} reported interrupted (${both} of them also answered, ${repeatedNotices} told twice across a kill), ` +
      `${this.clicks.sent} clicks sent (${this.clicks.doubles} double), ${this.clicks.acked} acknowledged, ${[...runs.values()].reduce((a, b) => a + b, 0)} webhooks run, ${problems.length} problems; starts took ${this.startMs.join('/')} ms`;
    return { summary, problems };
  }
}

function approvalIdOf(blocks: unknown): string | undefined {
  let found: string | undefined;
  const walk = (v: unknown): void => {
    if (found !== undefined || v === null || typeof v !== 'object') return;
    const o = v as Record<string, unknown>;
    if (o.action_id === 'hermes_approve' && typeof o.value === 'string') found = o.value;
    else for (const x of Object.values(o)) walk(x);
  };
  walk(typeof blocks === 'string' ? (JSON.parse(blocks) as unknown) : blocks);
  return found;
}

/**
 * Two instances of the bot (not started yet) on a fresh schema of one PostgreSQL database, with
 * their own fake Slack, webhook sink and model; `cleanups` gets what undoes it all.
 */
export async function slackCluster(pgUrl: string, seed: number, maxDelayMs: number, cleanups: Array<() => Promise<unknown>>) {
  const schema = await freshSchema(pgUrl);
  const [slack, web] = await Promise.all([startFakeSlack(), startFakeWeb()]);
  const ai = await startFakeOpenAI({ handler: crashModel(web.url('/sink'), seed, maxDelayMs) });
  cleanups.push(() => schema.drop(), () => Promise.all([slack.close(), web.close(), ai.close()]));
  const instances: Instance[] = [];
  for (const name of ['a', 'b']) {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), `hermes-crash-pg-${name}-`));
    cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
    const port = await freePort();
    const inst: Instance = {
      name,
      port,
      up: false,
      env: { ...botEnv(ai.url, web.port, dataDir), HERMES_STORE_URL: schema.url, SLACK_BOT_TOKEN: slack.botToken, SLACK_SIGNING_SECRET: slack.signingSecret, SLACK_API_URL: slack.apiUrl, PORT: String(port) },
    };
    cleanups.push(async () => inst.proc?.kill9());
    instances.push(inst);
  }
  return { schema, slack, web, ai, instances };
}
