import type { Logger } from 'pino';
import type { NotedMessages } from '../state/sessions/noted-messages.js';
import { conversationKey, type ChatMessage, type Conversation, type InboundMessage } from '../basics/types.js';
import type { Clock } from '../basics/clock.js';
import type { ContextMessage, ContextRead, OutboundPort } from '../basics/ports.js';
import { contextMessage, newestWithin } from '../runtime/context/thread-context.js';
import { threadContextMissing } from '../basics/model-notes.js';
import { contextUnavailable } from './user-messages.js';

/**
 * What the session does not hold yet, gathered before a turn and appended ahead of the request:
 * - the thread's earlier messages, when a session starts in an existing thread (the first mention
 *   there, or the first message after `/hermes new`), and the reply chain a message answers;
 * - messages posted since the bot's last answer in a thread it has joined that were not addressed
 *   to it (noted as they arrive, durably, without an answer), and those it never received as
 *   events (posted while it was down, or not sent to it), read from the platform since the last
 *   message the session holds.
 * Messages the session already holds (by platform id) are never added twice.
 */
export interface ConversationContextDeps {
  /** Messages of joined threads noted for the next turn there (hermes_noted_message). */
  noted: NotedMessages;
  clock: Clock;
  log: Logger;
  /** HERMES_THREAD_CONTEXT_MESSAGES: most messages kept per batch (0 turns thread context off). */
  limit: number;
  /** Characters one batch may take (a share of HERMES_CONTEXT_TOKENS). */
  maxChars: number;
}

export interface GatheredContext {
  messages: ChatMessage[];
  /** Ids of noted messages this batch carries (cleared once it is in the session). */
  notedIds: string[];
  /** One short line for the user when the thread could not be read. */
  userNote?: string;
}

export function createConversationContext(deps: ConversationContextDeps) {
  const keyOf = (msg: Pick<InboundMessage, 'conversation'>) => conversationKey(msg.conversation);

  async function readEarlier(port: OutboundPort, msg: InboundMessage, scope: 'thread' | 'reference'): Promise<ContextRead> {
    try {
      return await port.reader!.readEarlier({ conversation: msg.conversation, messageId: msg.replyTo ?? msg.id, referenceId: msg.referenceId, scope }, deps.limit);
    } catch (err) {
      // Readers promise not to throw; a bug in one must still not cost the user their answer.
      deps.log.error({ err: (err as Error).message }, 'reading thread context threw');
      return { ok: false, problem: { kind: 'unavailable', detail: (err as Error).message } };
    }
  }

  /**
   * Messages of the thread after the last one the session holds that never reached the bot. A
   * failed read only costs this catch-up (logged); the turn goes on with what the session has.
   */
  async function readMissed(port: OutboundPort, msg: InboundMessage, history: readonly ChatMessage[]): Promise<ContextMessage[]> {
    const after = [...history].reverse().find((m) => m.role === 'user' && m.inboundId && m.inboundId !== msg.id);
    if (!after || after.role !== 'user' || !after.inboundId) return [];
    try {
      const read = await port.reader!.readSince!({ conversation: msg.conversation, messageId: msg.id, after: after.inboundId }, deps.limit);
      if (read.ok) return read.messages.filter((m) => !m.author.isSelf);
      deps.log.warn({ problem: read.problem }, 'thread catch-up could not be read; answering with what the session holds');
    } catch (err) {
      deps.log.error({ err: (err as Error).message }, 'reading the thread catch-up threw');
    }
    return [];
  }

  return {
    /** A message in a joined thread that was not for the bot: kept for its next turn there. */
    async note(msg: InboundMessage): Promise<void> {
      const entry: ContextMessage = {
        id: msg.id,
        author: { id: msg.speaker.userId, name: msg.speaker.displayName ?? msg.speaker.userId, isBot: msg.fromBot === true },
        at: msg.at ?? deps.clock.now(),
        text: msg.text,
      };
      await deps.noted.add(keyOf(msg), entry, deps.limit);
    },

    /**
     * Context to append before `msg`'s request. `loadHistory` reads the session's history so far;
     * it is only called when there is something to read or noted (most turns need neither).
     * `opts.noted` false skips the read of noted messages.
     */
    async gather(msg: InboundMessage, loadHistory: () => Promise<readonly ChatMessage[]>, port: OutboundPort | undefined, opts: { noted?: boolean } = {}): Promise<GatheredContext> {
      const out: ChatMessage[] = [];
      let userNote: string | undefined;
      const wantsEarlier = deps.limit > 0 && port?.reader !== undefined && msg.hasEarlier === true;
      const canCatchUp = deps.limit > 0 && port?.reader?.readSince !== undefined && msg.conversation.threadId !== undefined;
      // `noted: false`: the caller knows none can be there (a conversation never joined before this turn).
      const pending = opts.noted === false ? [] : await deps.noted.list(keyOf(msg));
      if (!wantsEarlier && !canCatchUp && !pending?.length) return { messages: out, notedIds: [] };
      const history = await loadHistory();
      const held = new Set(history.flatMap((m) => (m.role === 'user' && m.inboundId ? [m.inboundId] : [])));
      held.add(msg.id);

      const fresh = history.length === 0;
      if (wantsEarlier && port?.reader && (fresh || msg.referenceId)) {
        const read = await readEarlier(port, msg, fresh ? 'thread' : 'reference');
        if (read.ok) {
          // In an ongoing session the bot's own earlier answers are already there as its own messages.
          const unseen = read.messages.filter((m) => !held.has(m.id) && (fresh || !m.author.isSelf));
          for (const m of unseen) held.add(m.id);
          const { kept, dropped } = newestWithin(unseen, deps.limit, deps.maxChars);
          if (kept.length) out.push(contextMessage('earlier', kept, dropped, read.more));
        } else {
          deps.log.warn({ problem: read.problem }, 'thread context could not be read; answering without it');
          userNote = contextUnavailable(read.problem, 'thread');
          out.push({ role: 'user', content: `[system note] ${threadContextMissing(read.problem)}` });
        }
      }

      const notedIds = (pending ?? []).map((m) => m.id);
      const missed = fresh || !canCatchUp ? [] : await readMissed(port!, msg, history);
      const since = new Map<string, ContextMessage>();
      for (const m of [...missed, ...(pending ?? [])]) if (!held.has(m.id)) since.set(m.id, m);
      if (since.size) {
        const unseen = [...since.values()].sort((a, b) => a.at - b.at);
        const { kept, dropped } = newestWithin(unseen, deps.limit, deps.maxChars);
        if (kept.length) out.push(contextMessage('since', kept, dropped));
      }
      return { messages: out, notedIds, ...(userNote && { userNote }) };
    },

    /** After the batch is in the session: those noted messages are held now (one noted meanwhile stays). */
    async clearNoted(msg: InboundMessage, ids: readonly string[]): Promise<void> {
      await deps.noted.remove(keyOf(msg), ids);
    },

    /** A noted message was edited (`text`) or deleted (null) before the next turn: keep its latest state. */
    async revise(conversation: Conversation, id: string, text: string | null): Promise<void> {
      await deps.noted.revise(keyOf({ conversation }), id, text);
    },
  };
}

export type ConversationContext = ReturnType<typeof createConversationContext>;
