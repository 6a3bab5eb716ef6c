/**
 * Slack's assistant threads (the app's own pane, with the manifest's `assistant_view` feature):
 * a new thread gets the configured suggested prompts, a turn that works in one shows Slack's
 * status line ("is working on it…") instead of the hourglass reaction, and the thread is titled
 * from its first request, as Slack's thread list shows titles rather than first messages.
 *
 * Which threads are assistant threads is remembered from `assistant_thread_started` (in the
 * store, so another instance or a restart knows them too); the first message in one sets the
 * title exactly once (a compare-and-set in the store). Everything here is a courtesy: a failure
 * (no `assistant:write`, the feature off) is logged and the answer goes on as in any DM thread.
 */
import type { App, webApi } from '@slack/bolt';
import type { Logger } from '../../src/basics/log.js';
import type { Conversation } from '../../src/basics/types.js';
import { storeKey, type Store } from '../../src/state/store/store.js';
import type { SuggestedPrompt } from '../../src/settings/slack-file.js';
import { describeSlackError } from './slack-calls.js';

/** Assistant threads are remembered this long after they start (a title comes with the first request). */
const THREAD_TTL_MS = 30 * 24 * 60 * 60 * 1000;
/** Slack cuts titles itself; a short one reads well in the thread list. */
const TITLE_CHARS = 60;
export const WORKING_STATUS = 'is working on it…';

interface ThreadMark {
  titled: boolean;
}

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
  store: Store;
  log: Logger;
  prompts: readonly SuggestedPrompt[];
}

/** The fields of assistant_thread_started / _context_changed the app reads. */
interface AssistantThreadEvent {
  assistant_thread?: { user_id?: string; channel_id?: string; thread_ts?: string };
}

const threadKey = (channel: string, ts: string) => storeKey('slack', 'assistant-thread', `${channel}:${ts}`);

export function createAssistantThreads(deps: AssistantDeps): AssistantThreads {
  const { client, store, log } = deps;
  const inThread = (c: Conversation): c is Conversation & { threadId: string } => c.isDm && c.threadId !== undefined;

  return {
    async isAssistantThread(c) {
      if (!inThread(c)) return false;
      return (await store.get<ThreadMark>(threadKey(c.channelId, c.threadId)).catch(() => undefined)) !== undefined;
    },
    async setStatus(c, status) {
      if (!inThread(c)) return;
      await client.assistant.threads.setStatus({ channel_id: c.channelId, thread_ts: c.threadId, status });
    },
    async titleFrom(c, text) {
      if (!inThread(c) || text.trim() === '') return;
      try {
        const { before, after } = await store.update<ThreadMark>(threadKey(c.channelId, c.threadId), (mark) => (mark && !mark.titled ? { titled: true } : undefined), { ttlMs: THREAD_TTL_MS });
        if (!before || before.titled || !after?.titled) return;
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
  const { client, store, log } = deps;
  app.event('assistant_thread_started', async ({ event }) => {
    const thread = (event as AssistantThreadEvent).assistant_thread;
    const channel = thread?.channel_id;
    const ts = thread?.thread_ts;
    if (!channel || !ts) return void log.warn('slack: assistant_thread_started without channel_id or thread_ts; ignored');
    try {
      await store.set(threadKey(channel, ts), { titled: false } satisfies ThreadMark, THREAD_TTL_MS);
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
