/**
 * Slack's assistant threads (the app's own pane, with the manifest's `assistant_view` feature):
 * a new thread gets the configured suggested prompts, a turn that works in one shows Slack's
 * status line ("is working on it…") instead of the hourglass reaction, and the thread is titled
 * from its first request, as Slack's thread list shows titles rather than first messages.
 *
 * Which threads are assistant threads is remembered from `assistant_thread_started` (a row of
 * `hermes_assistant_thread`, so another instance or a restart knows them too, swept by its indexed
 * start time after THREAD_TTL_MS); the first message in one sets the title exactly once (a
 * compare-and-set on the row's `titled`). Everything here is a courtesy: a failure
 * (no `assistant:write`, the feature off) is logged and the answer goes on as in any DM thread.
 */
import type { App, webApi } from '@slack/bolt';
import type { Logger } from '../../src/basics/log.js';
import type { Conversation } from '../../src/basics/types.js';
import type { OpenedDatabase } from '../../src/state/store/database.js';
import type { SuggestedPrompt } from '../../src/settings/slack-file.js';
import { describeSlackError } from './slack-calls.js';

/** Assistant threads are remembered this long after they start (a title comes with the first request). */
const THREAD_TTL_MS = 30 * 24 * 60 * 60 * 1000;
/** Slack cuts titles itself; a short one reads well in the thread list. */
const TITLE_CHARS = 60;
export const WORKING_STATUS = 'is working on it…';

export interface AssistantThreads {
  /** Whether this conversation is an assistant thread the app was told of. */
  isAssistantThread(conversation: Conversation): Promise<boolean>;
  /** Sets the status line of an assistant thread ('' clears it). */
  setStatus(conversation: Conversation, status: string): Promise<void>;
  /** Titles the thread from this request if it is an assistant thread's first. */
  titleFrom(conversation: Conversation, text: string): Promise<void>;
}

export interface AssistantDeps {
  client: webApi.WebClient;
  database: OpenedDatabase;
  now?: () => number;
  log: Logger;
  prompts: readonly SuggestedPrompt[];
}

/** The fields of assistant_thread_started / _context_changed the app reads. */
interface AssistantThreadEvent {
  assistant_thread?: { user_id?: string; channel_id?: string; thread_ts?: string };
}

export function createAssistantThreads(deps: AssistantDeps): AssistantThreads {
  const { client, log } = deps;
  const { db } = deps.database;
  const now = deps.now ?? Date.now;
  const inThread = (c: Conversation): c is Conversation & { threadId: string } => c.isDm && c.threadId !== undefined;
  const live = () => now() - THREAD_TTL_MS;

  return {
    async isAssistantThread(c) {
      if (!inThread(c)) return false;
      const row = await db
        .selectFrom('hermes_assistant_thread')
        .select('titled')
        .where('channel_id', '=', c.channelId)
        .where('thread_ts', '=', c.threadId)
        .where('started_at', '>', live())
        .executeTakeFirst()
        .catch(() => undefined);
      return row !== undefined;
    },
    async setStatus(c, status) {
      if (!inThread(c)) return;
      await client.assistant.threads.setStatus({ channel_id: c.channelId, thread_ts: c.threadId, status });
    },
    async titleFrom(c, text) {
      if (!inThread(c) || text.trim() === '') return;
      try {
        const r = await db
          .updateTable('hermes_assistant_thread')
          .set({ titled: 1 })
          .where('channel_id', '=', c.channelId)
          .where('thread_ts', '=', c.threadId)
          .where('titled', '=', 0)
          .where('started_at', '>', live())
          .executeTakeFirst();
        if (Number(r.numUpdatedRows) === 0) return;
        await client.assistant.threads.setTitle({ channel_id: c.channelId, thread_ts: c.threadId, title: titleOf(text) });
      } catch (err) {
        log.warn({ err: describeSlackError(err), channel: c.channelId }, 'slack: could not title the assistant thread');
      }
    },
  };
}

/** The first line of the request, cut at a word near TITLE_CHARS. */
export function titleOf(text: string): string {
  const line = text.trim().split('\n')[0]!.replace(/\s+/g, ' ');
  if (line.length <= TITLE_CHARS) return line;
  const cut = line.slice(0, TITLE_CHARS);
  const space = cut.lastIndexOf(' ');
  return `${(space > TITLE_CHARS / 2 ? cut.slice(0, space) : cut).trimEnd()}…`;
}

/** Listens for new assistant threads: remembers each and offers the suggested prompts. */
export function registerAssistantEvents(app: App, deps: AssistantDeps): void {
  const { client, log } = deps;
  const { db } = deps.database;
  const now = deps.now ?? Date.now;
  app.event('assistant_thread_started', async ({ event }) => {
    const thread = (event as AssistantThreadEvent).assistant_thread;
    const channel = thread?.channel_id;
    const ts = thread?.thread_ts;
    if (!channel || !ts) return void log.warn('slack: assistant_thread_started without channel_id or thread_ts; ignored');
    try {
      const at = now();
      await db
        .insertInto('hermes_assistant_thread')
        .values({ channel_id: channel, thread_ts: ts, titled: 0, started_at: at })
        .onConflict((c) => c.columns(['channel_id', 'thread_ts']).doUpdateSet({ titled: 0, started_at: at }))
        .execute();
      // Threads started more than THREAD_TTL_MS ago are forgotten, by the indexed start time.
      await db.deleteFrom('hermes_assistant_thread').where('started_at', '<=', at - THREAD_TTL_MS).execute();
    } catch (err) {
      log.warn({ err: (err as Error).message }, 'slack: could not remember an assistant thread; it gets no title or status');
    }
    if (deps.prompts.length === 0) return;
    try {
      await client.assistant.threads.setSuggestedPrompts({ channel_id: channel, thread_ts: ts, prompts: deps.prompts.map((p) => ({ title: p.title, message: p.message })) });
    } catch (err) {
      log.warn({ err: describeSlackError(err), channel }, 'slack: could not set the suggested prompts (does the app have assistant:write?)');
    }
  });
  // Where the person is looking changed; the bot reads context only from the thread it is asked in.
  app.event('assistant_thread_context_changed', async () => undefined);
}
