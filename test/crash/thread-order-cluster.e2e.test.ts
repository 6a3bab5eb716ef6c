import { describe, expect, it, onTestFailed } from 'vitest';
import { postgresForTests } from '../helpers/postgres.js';
import { crashSeed, crashTestLifecycle, lastUserText, seededRandom, waitUntil } from './crash-rig.js';
import { CHANNEL, SlackCrashRun, slackCluster } from './slack-burst.js';

/**
 * Ordering on PostgreSQL: two instances of the compiled bot share one database; a thread's
 * mentions, posted a few milliseconds apart (each delivered once the one before was acknowledged)
 * and each delivered to either instance, are answered
 * in the order they were posted (and reach the model in that order), in each of 10 runs.
 * HERMES_CRASH_SEED repeats a failed run's plan.
 */
const pgUrl = await postgresForTests();

const cleanups = crashTestLifecycle();

describe.skipIf(!pgUrl)('two instances on PostgreSQL', () => {
  it("answers a thread's mentions in the order they were posted, delivered to either instance, in each of 10 runs", { timeout: 170_000 }, async () => {
    const seed = crashSeed();
    onTestFailed(() => console.error(`crash test seed: ${seed} (repeat with HERMES_CRASH_SEED=${seed})`));
    const rnd = seededRandom(seed);
    const live = seededRandom(seed + 1);
    const { slack, web, ai, instances } = await slackCluster(pgUrl!, seed, 60, cleanups);
    const run = new SlackCrashRun(slack, web, instances, rnd, live);
    await Promise.all(instances.map((i) => run.start(i)));
    const RUNS = 10;
    const PER_THREAD = 6;
    let crossed = 0;
    for (let r = 1; r <= RUNS; r++) {
      const root = slack.seedMessage(CHANNEL, { user: 'U0CRASH', text: `ordering run ${r}` });
      const tags = Array.from({ length: PER_THREAD }, (_, k) => `o${r}-${k + 1}`);
      const sent: Array<Promise<number>> = [];
      let last = -1;
      for (const tag of tags) {
        const to = live.int(0, 1);
        if (last !== -1 && to !== last) crossed++;
        last = to;
        const event = { type: 'app_mention', channel: CHANNEL, user: 'U0CRASH', text: `<@${slack.botUserId}> ${tag}`, ts: slack.nextTs(), thread_ts: root };
        // Each delivery once the previous one was acknowledged (Bolt acks before its listener
        // accepts the message, so the two instances still accept in a race), 0–30 ms apart.
        sent.push(slack.sendEvent(`http://127.0.0.1:${instances[to]!.port}/slack/events`, event).then((res) => res.status));
        await sent.at(-1);
        await new Promise((res) => setTimeout(res, rnd.int(0, 30)));
      }
      expect(await Promise.all(sent)).toEqual(tags.map(() => 200));
      const answers = () => slack.posts({ channel: CHANNEL, thread_ts: root }).map((p) => p.text);
      await waitUntil(() => answers().length >= PER_THREAD, 30_000, () => `run ${r}: answers so far ${JSON.stringify(answers())}`);
      const calls = ai.requests.map(lastUserText).filter((t) => t.startsWith(`o${r}-`));
      expect({ run: r, answers: answers(), modelCalls: calls }).toEqual({ run: r, answers: tags.map((t) => `answer to ${t}`), modelCalls: tags });
    }
    for (const i of instances) expect(await i.proc!.stop()).toBe(0);
    console.log(`ordering (PostgreSQL, 2 instances, seed ${seed}): ${RUNS} runs × ${PER_THREAD} mentions in one thread each, ${crossed} consecutive pairs delivered to different instances, all answered in posting order`);
  });
});
