/**
 * An answer shown in Slack while it is written.
 *
 * In a thread: Slack's streaming methods — `chat.startStream` with the first text (or the first
 * progress note), `chat.appendStream` with what came since, at most every STREAM_APPEND_MS, and
 * `chat.stopStream` at the end. Progress notes are task cards (`task_update` chunks), so they are
 * never part of the answer's text. A workspace that refuses streaming (plan, admin setting, an
 * old client), or a conversation without a thread to stream into (a top-level DM), gets one
 * `chat.postMessage` that is edited with `chat.update` at most once a second instead
 * (src/gateway/edited-answer.ts). Streamed text is Markdown (`markdown_text`); broadcast
 * mentions are broken before it leaves, as everywhere else.
 *
 * Buttons: a streamed message cannot lose a block once streamed, so while it is written its Stop
 * button sits on a small message of its own under it ("Working on it…"), deleted when the stream
 * stops; the final message gets its feedback buttons with `chat.stopStream`. In the edited form
 * the message itself carries Stop while written and feedback once final.
 */
import type { webApi } from '@slack/bolt';
import type { AnyChunk, KnownBlock } from '@slack/types';
import type { Clock } from '../../src/basics/clock.js';
import { createThrottledFlush } from '../../src/basics/throttled-flush.js';
import type { Logger } from '../../src/basics/log.js';
import type { Conversation } from '../../src/basics/types.js';
import { createEditedAnswer, type MessageRole } from '../../src/gateway/edited-answer.js';
import type { AnswerStream, AnswerStreamOptions } from '../../src/basics/ports.js';
import { chunkMarkdown, openFenceAt } from '../../src/basics/text/chunk-markdown.js';
import { SLACK_CHUNK_CHARS } from './chunk.js';
import { renderMrkdwn } from './render-mrkdwn.js';
import { describeSlackError, honouringRateLimits, type Sleep } from './slack-calls.js';

/** At most about three appends a second: Slack's streaming methods are rate-limited per message. */
export const STREAM_APPEND_MS = 350;
/** The edited form: chat.update at most once a second (Slack's per-channel posting budget). */
export const SLACK_EDIT_MS = 1000;
/** Slack takes at most this much markdown_text in one call. */
const MARKDOWN_TEXT_MAX = 12_000;
/** One streamed message holds at most this much; the answer goes on in a new streamed message. */
export const STREAM_MESSAGE_CHARS = 12_000;
const FENCE = '```';
/** Room kept in a streamed message for the fence that closes a code block running on into the next one. */
const FENCE_RESERVE = FENCE.length + 1;

/** Buttons a message of the answer carries in each role (answer-buttons.ts: Stop while written, feedback when final). */
export type SlackBlocksFor = (role: MessageRole, text: string, opts: AnswerStreamOptions) => KnownBlock[] | undefined;

export interface SlackAnswerDeps {
  client: webApi.WebClient;
  log: Logger;
  clock: Clock;
  sleep?: Sleep;
  blocksFor?: SlackBlocksFor;
}

export function createSlackAnswer(deps: SlackAnswerDeps, conversation: Conversation, opts: AnswerStreamOptions): AnswerStream {
  const call = <T>(fn: () => Promise<T>) => honouringRateLimits(fn, deps.sleep);
  const channel = conversation.channelId;
  const thread = conversation.threadId;
  /** Raw Markdown a stream has shown, and what waits for the next append. */
  let given = '';
  let pending = '';
  const tasks: Array<{ id: string; title: string; status: 'in_progress' | 'complete'; sent?: 'in_progress' | 'complete' }> = [];
  let ts: string | undefined;
  /** Every message streamed for this answer, in order. */
  const streamedTs: string[] = [];
  let inMessage = 0;
  /** What the current streamed message shows (fences it opened and closes included). */
  let messageText = '';
  /** The fence a message that continues an answer inside a code block starts with. */
  let reopen = '';
  let edited: AnswerStream | undefined = thread === undefined ? editedAnswer() : undefined;
  /** The message carrying Stop under a streamed answer, while it is written. */
  let control: Promise<string | undefined> | undefined;
  const blocksFor = (role: MessageRole, text: string) => deps.blocksFor?.(role, text, opts);

  function showControl(): void {
    const blocks = blocksFor('live', '');
    if (control || !blocks) return;
    control = call(() => deps.client.chat.postMessage({ channel, thread_ts: thread, text: CONTROL_TEXT, blocks: [{ type: 'context', elements: [{ type: 'mrkdwn', text: CONTROL_TEXT }] }, ...blocks], unfurl_links: false, unfurl_media: false }))
      .then((res) => res.ts)
      .catch((err: unknown) => {
        deps.log.warn({ err: describeSlackError(err), channel }, 'slack: could not post the Stop button; /hermes stop still works');
        return undefined;
      });
  }

  /** Deletes the Stop message (the answer is done, or the edited form carries its own Stop). */
  async function removeControl(): Promise<void> {
    const pending = control;
    control = undefined;
    const controlTs = await pending;
    if (!controlTs) return;
    await call(() => deps.client.chat.delete({ channel, ts: controlTs })).catch((err: unknown) => deps.log.warn({ err: describeSlackError(err), channel }, 'slack: could not remove the Stop button'));
  }

  function editedAnswer(): AnswerStream {
    return createEditedAnswer<string>(
      {
        post: async (text, role) => {
          const blocks = blocksFor(role, text);
          const res = await call(() => deps.client.chat.postMessage({ channel, thread_ts: thread, text, mrkdwn: true, unfurl_links: false, unfurl_media: false, ...(blocks && { blocks: withText(text, blocks) }) }));
          if (!res.ts) throw new Error('Slack accepted the message but returned no ts');
          return res.ts;
        },
        edit: async (messageTs, text, role) => {
          const blocks = blocksFor(role, text);
          await call(() => deps.client.chat.update({ channel, ts: messageTs, text, blocks: blocks ? withText(text, blocks) : [] }));
        },
        remove: async (messageTs) => void (await call(() => deps.client.chat.delete({ channel, ts: messageTs }))),
      },
      {
        split: (markdown, final) => chunkMarkdown(renderMrkdwn(markdown), { limit: SLACK_CHUNK_CHARS, partMarkers: final }),
        progressLine: (note) => `_${note}…_`,
        intervalMs: SLACK_EDIT_MS,
        clock: deps.clock,
        log: deps.log,
      },
    );
  }

  /** Goes on in the edited form with everything no stream has shown. */
  function fallBack(reason: string, rest: string): AnswerStream {
    deps.log.info({ channel, reason }, 'slack: streaming refused or broken; the answer is posted and edited instead');
    edited = editedAnswer();
    void removeControl();
    if (rest) edited.append(rest);
    const open = tasks.find((t) => t.status === 'in_progress');
    if (open) edited.progress(open.title);
    return edited;
  }

  /** Sends what is ready; a tail that may still become a broadcast (`<!`, `@here`) waits. */
  async function flush(final: boolean): Promise<void> {
    if (edited) return;
    const { ready, held } = final ? { ready: pending, held: '' } : splitSafe(pending);
    pending = held;
    let rest = ready;
    let chunks = taskChunks();
    // Bounded: each round sends at least one character or the task cards, or starts a new message.
    for (let round = 0; (rest !== '' || chunks.length > 0) && round < 1_000; round++) {
      if (ts !== undefined && inMessage >= STREAM_MESSAGE_CHARS - FENCE_RESERVE) {
        // A code block that runs on is closed here and opened again in the next message, so each renders on its own.
        const fence = openFenceAt(messageText);
        await stopCurrent(false, fence ? `\n${FENCE}` : '');
        reopen = fence ? `${fence}\n` : '';
      }
      const lead = ts === undefined ? reopen : '';
      const piece = nextPiece(rest, Math.min(MARKDOWN_TEXT_MAX, STREAM_MESSAGE_CHARS - inMessage - FENCE_RESERVE) - lead.length);
      const content = body(neutralise(lead + piece), chunks);
      if (ts === undefined) {
        let started: string | undefined;
        try {
          started = (await call(() => deps.client.chat.startStream({ channel, thread_ts: thread!, recipient_user_id: opts.recipientId, recipient_team_id: conversation.workspaceId, ...content }))).ts;
        } catch (err) {
          fallBack(describeSlackError(err), rest);
          return;
        }
        if (!started) return void fallBack('no ts', rest);
        ts = started;
        streamedTs.push(started);
        showControl();
      } else {
        await call(() => deps.client.chat.appendStream({ channel, ts: ts!, ...content }));
      }
      chunks = [];
      reopen = '';
      given += piece;
      messageText += lead + piece;
      inMessage += lead.length + piece.length;
      rest = rest.slice(piece.length);
    }
  }

  function body(text: string, chunks: AnyChunk[]): { markdown_text: string } | { chunks: AnyChunk[] } {
    if (chunks.length === 0) return { markdown_text: text };
    return { chunks: [...(text ? [{ type: 'markdown_text' as const, text }] : []), ...chunks] };
  }

  /** Task cards whose state Slack has not seen yet. */
  function taskChunks(): AnyChunk[] {
    const out: AnyChunk[] = [];
    for (const t of tasks) {
      if (t.sent === t.status) continue;
      out.push({ type: 'task_update', id: t.id, title: t.title, status: t.status });
      t.sent = t.status;
    }
    return out;
  }

  /** Stops the current streamed message; `closing` is Markdown it ends with (a fence that closes a code block). */
  async function stopCurrent(final: boolean, closing = ''): Promise<void> {
    if (ts === undefined) return;
    for (const t of tasks) t.status = 'complete';
    const chunks = taskChunks();
    const blocks = final ? blocksFor('final', given) : undefined;
    const current = ts;
    ts = undefined;
    inMessage = 0;
    messageText = '';
    await call(() => deps.client.chat.stopStream({ channel, ts: current, ...(closing && { markdown_text: closing }), ...(chunks.length > 0 && { chunks }), ...(blocks && { blocks }) }));
  }

  const throttle = createThrottledFlush({
    clock: deps.clock,
    intervalMs: STREAM_APPEND_MS,
    flush: () => flush(false),
    // The stream may have been closed under us (Slack ends idle streams): go on in the edited form.
    onError: (err) => void fallBack(describeSlackError(err), pending),
  });

  function finishTasks(): void {
    for (const t of tasks) t.status = 'complete';
  }

  return {
    append(markdown) {
      if (throttle.closed || markdown === '') return;
      if (edited) return edited.append(markdown);
      finishTasks();
      pending += markdown;
      throttle.request();
    },
    progress(note) {
      if (throttle.closed) return;
      if (edited) return edited.progress(note);
      finishTasks();
      tasks.push({ id: `task-${tasks.length + 1}`, title: note, status: 'in_progress' });
      throttle.request();
    },
    async finish(markdown) {
      await throttle.close();
      try {
        await finishAnswer(markdown);
      } finally {
        await removeControl();
      }
    },
    async end(note) {
      await throttle.close();
      try {
        if (edited) return await edited.end(note);
        if (note && (given !== '' || pending !== '' || ts !== undefined)) pending += `${(given + pending).trim() ? '\n\n' : ''}${note}`;
        await flush(true);
        // The stream broke while sending the rest: the edited form got it, note included.
        if (edited) return await (edited as AnswerStream).end();
        await stopCurrent(false);
      } catch (err) {
        deps.log.warn({ err: describeSlackError(err), channel }, 'slack: ending the streamed answer failed');
      } finally {
        await removeControl();
      }
    },
    get started() {
      return given !== '' || ts !== undefined || (edited?.started ?? false);
    },
  };

  async function finishAnswer(markdown: string): Promise<void> {
    const sofar = given + pending;
    // The final answer is trimmed: a whitespace tail that was appended is not a revision.
    const extends_ = markdown.startsWith(sofar) || (sofar.trimEnd() === markdown && markdown.startsWith(given.trimEnd()));
    if (!edited && extends_) {
      pending = markdown.length > given.length && markdown.startsWith(given) ? markdown.slice(given.length) : '';
      await flush(true);
      if (!edited) return stopCurrent(true);
    }
    if (edited) {
      // What a stream already shows stays; the edited form carries the rest.
      return edited.finish(given === '' ? markdown : markdown.startsWith(given) ? markdown.slice(given.length) : markdown);
    }
    // The text was revised at the end (the loop withdrew a step): the first streamed message is
    // replaced by the final answer — its blocks too, since a streamed message shows its text as
    // blocks — further streamed messages are removed, and the last part carries the feedback buttons.
    await stopCurrent(false);
    const [first, ...later] = streamedTs;
    const parts = chunkMarkdown(renderMrkdwn(markdown), { limit: SLACK_CHUNK_CHARS, partMarkers: true });
    const blocksOf = (i: number): KnownBlock[] => withText(parts[i]!, (i === parts.length - 1 ? blocksFor('final', parts[i]!) : undefined) ?? []);
    for (const old of later) await call(() => deps.client.chat.delete({ channel, ts: old }));
    for (const [i, part] of parts.entries()) {
      if (i === 0 && first) await call(() => deps.client.chat.update({ channel, ts: first, text: part, blocks: blocksOf(i) }));
      else await call(() => deps.client.chat.postMessage({ channel, thread_ts: thread, text: part, mrkdwn: true, unfurl_links: false, unfurl_media: false, blocks: blocksOf(i) }));
    }
  }
}

/** What the Stop message says next to its button. */
export const CONTROL_TEXT = '_Working on it…_';

/** The next raw piece that fits `room` once neutralised, never ending inside a `<!` or an `@word`. */
function nextPiece(rest: string, room: number): string {
  let piece = rest.slice(0, Math.max(1, room));
  while (piece.length > 1 && neutralise(piece).length > room) piece = piece.slice(0, Math.floor(piece.length * 0.9));
  if (piece.length === rest.length) return piece;
  const { ready } = splitSafe(piece);
  return ready === '' ? piece : ready;
}

/**
 * A message with blocks shows the blocks, not its text: the text goes first, as sections
 * (Slack takes at most 3,000 characters in one section).
 */
export function withText(text: string, blocks: KnownBlock[]): KnownBlock[] {
  const sections = chunkMarkdown(text, { limit: SECTION_CHARS }).map((t): KnownBlock => ({ type: 'section', text: { type: 'mrkdwn', text: t } }));
  return [...sections, ...blocks];
}

const SECTION_CHARS = 3_000;

const ZWJ = '\u2060';

/** `<!here>`-style control sequences and literal @channel words never notify anyone. */
export function neutralise(markdown: string): string {
  return markdown.replace(/<!/g, `<${ZWJ}!`).replace(/@(channel|here|everyone)\b/gi, `@${ZWJ}$1`);
}

/** A tail that may be the start of `<!…` or `@channel` waits: neutralising needs the whole word. */
export function splitSafe(text: string): { ready: string; held: string } {
  const m = /(<|@[a-zA-Z]{0,8})$/.exec(text);
  if (!m) return { ready: text, held: '' };
  return { ready: text.slice(0, m.index), held: text.slice(m.index) };
}
