import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../reminders/manual-clock.js';
import { startSlackHarness, type SlackHarness } from '../slack/slack-harness.js';

/**
 * HERMES_DAILY_TOKENS on Slack end to end (the Discord twin is in discord-policy.e2e.test.ts): the
 * admins are told privately once a day when the bot passes 80 %, and once the budget is used up
 * nobody's message reaches the model, admins included, until the next UTC day.
 */

const DAY = 86_400_000;
// Noon UTC, so a few turns never cross midnight by accident.
const clock = new ManualClock(Date.UTC(2026, 10, 30, 12, 0, 0));
let h: SlackHarness;

beforeAll(async () => {
  h = await startSlackHarness({ env: { HERMES_ADMINS: 'slack:UADMIN,slack:UBOSS', HERMES_DAILY_TOKENS: '1000', HERMES_GROUNDING: 'off' }, clock });
});
afterAll(async () => {
  await h?.close();
});

/** What the bot posted to an admin's DM (a post to a user id is the app's DM with them). */
const dmsTo = (userId: string) => h.slack.posts({ channel: userId }).map((p) => p.text);
const answered = (text: string) => h.slack.waitFor(`the answer "${text}"`, () => h.slack.posts().some((p) => p.text.includes(text)));
async function turn(text: string, tokens: number): Promise<void> {
  h.ai.enqueue({ text, usage: { prompt_tokens: tokens, completion_tokens: 0 } });
  await h.mention('CGEN', 'UDEV', text);
  await answered(text);
}

describe('the bot-wide budget on slack', () => {
  it('tells every admin once a day at 80 %, then stops every model call, admins included, until the next UTC day', async () => {
    await turn('answer one', 500);
    await turn('answer two', 350); // 850 of 1,000: past 80 %
    await h.slack.waitFor('the notice to both admins', () => dmsTo('UADMIN').length === 1 && dmsTo('UBOSS').length === 1);
    expect(dmsTo('UADMIN')[0]).toContain('the bot has used 85 % of its daily token budget (850 of 1,000; HERMES_DAILY_TOKENS)');
    await turn('answer three', 100); // 950: still past 80 %, not told again
    await turn('answer four', 100); // 1,050: the call that crosses the line finishes
    await h.settled();
    expect(dmsTo('UADMIN')).toHaveLength(1);
    expect(dmsTo('UBOSS')).toHaveLength(1);
    expect(dmsTo('UDEV')).toHaveLength(0);

    const before = h.ai.requests.length;
    await h.mention('CGEN', 'UDEV', 'one more');
    await answered('I have used my daily allowance for everyone of 1,000 tokens (1,050 today; HERMES_DAILY_TOKENS)');
    await h.mention('CGEN', 'UADMIN', 'admin asks');
    await h.slack.waitFor('the admin refusal', () => h.slack.posts({ channel: 'CGEN' }).filter((p) => p.text.includes('daily allowance for everyone')).length === 2);
    expect(h.ai.requests.length).toBe(before);

    clock.advance(DAY);
    await turn('answer next day', 900);
    await h.slack.waitFor("the next day's notice", () => dmsTo('UADMIN').length === 2);
    expect(dmsTo('UADMIN')[1]).toContain('90 % of its daily token budget (900 of 1,000');
  });
});
