import type { ApprovalOutcome } from './approval-outcome.js';
import type { Conversation, InboundAttachment, InboundMessage, OutboundFile, Platform, Speaker } from './types.js';

/** What an approval prompt shows. Buttons carry only `id`. */
export interface ApprovalView {
  id: string;
  toolName: string;
  /**
   * The exact arguments, pretty-printed JSON, at most MAX_SHOWN_ARGS_CHARS long. Adapters show
   * all of it (split over blocks or messages if they must), never a cut version.
   */
  argsJson: string;
  /** The tool's own words about this call (a schedule's next run times), shown above the arguments. */
  description?: string;
  /** sha256 of the canonical JSON of the arguments: the same digest the stored record carries. */
  argsDigest: string;
  requester: Speaker;
  expiresAt: number;
  /**
   * Outside text the turn read before this request (URLs, "thread context", file names). Shown so
   * a person can see when the request may come from an instruction hidden there; adapters render
   * it with approvalSourcesLine (user-messages.ts).
   */
  sources?: string[];
}

export type { ApprovalOutcome };

export interface ApprovalResolution {
  outcome: ApprovalOutcome;
  /** Who decided; absent for expiry and for cancellation by the system. */
  decidedBy?: Speaker;
}

/** One message of a conversation as the platform reports it, read for context. */
export interface ContextMessage {
  /** Same form as InboundMessage.id (Slack "channel:ts", Discord message id), so the gateway can tell what the session holds. */
  id: string;
  author: { id: string; name: string; isBot: boolean; isSelf?: boolean };
  /** Epoch ms. */
  at: number;
  /** Readable text: the latest version of an edited message; files and blocks described, never dropped silently. */
  text: string;
  edited?: boolean;
}

/** Why a read failed. `permission` names what the app lacks (a Slack scope, a Discord permission); `fix` says where to add it. */
export type ContextReadProblem =
  | { kind: 'missing_permission'; permission: string; fix: string }
  | { kind: 'rate_limited' }
  | { kind: 'unavailable'; detail: string };

export type ContextRead =
  | { ok: true; messages: ContextMessage[]; /** More messages existed than were read (limit or page bound). */ more: boolean }
  | { ok: false; problem: ContextReadProblem };

/**
 * Reading a conversation, for thread context and read_channel_history. Optional on a port: the
 * terminal has nothing to read. Both return messages oldest first, never from another
 * conversation than the one given, and never throw (failures are a ContextRead problem).
 */
export interface ConversationReader {
  /**
   * Messages before `messageId`: with scope 'thread', its thread's earlier messages plus the
   * message it replies to (`referenceId`); with scope 'reference', only the reply chain it answers.
   */
  readEarlier(where: { conversation: Conversation; messageId: string; referenceId?: string; scope: 'thread' | 'reference' }, limit: number): Promise<ContextRead>;
  /**
   * The thread's messages after `after` (an id the session holds) and before `messageId`: what
   * the bot never received as events (posted while it was down, or with the app not subscribed to
   * channel messages). Optional: a platform whose joined threads always arrive as events needs none.
   */
  readSince?(where: { conversation: Conversation; messageId: string; after: string }, limit: number): Promise<ContextRead>;
  /** Recent messages of the channel (or DM) itself; `before` is a ContextMessage id from an earlier read. */
  readChannel(conversation: Conversation, opts: { limit: number; before?: string }): Promise<ContextRead>;
}

/** Adapter-owned reference to a posted message (e.g. Slack "C123/1712.0001", Discord message id). */
export type MessageRef = string;

/**
 * One answer shown while it is being written. The gateway feeds it as the model writes; the
 * adapter decides when to call the platform (batched, throttled) and splits within its limits.
 * append and progress never block and never throw (a failed update is logged and the next one
 * tries again); end never throws. finish resolves once the platform shows the final answer and
 * rejects when it could not: the gateway then posts the answer with sendText, so no text is lost.
 */
export interface AnswerStream {
  /** More of the answer, Markdown, exactly as written (no separators added). */
  append(markdown: string): void;
  /** What the turn is doing now ("running fetch_url"): shown while it runs, not part of the answer. */
  progress(note: string): void;
  /**
   * The answer is complete and `markdown` is all of it as it should finally read. It normally
   * extends what was appended; when it does not (the model's text was revised at the end), the
   * adapter shows `markdown` instead of what was streamed.
   */
  finish(markdown: string): Promise<void>;
  /**
   * The turn ended without an answer: whatever was shown stays; progress and buttons go. `note`
   * (Markdown, one line: why it ended, "Stopped by …") is shown after the text when anything was.
   */
  end(note?: string): Promise<void>;
  /** Whether anything reached the person yet (an answer that failed before it began posts nothing). */
  readonly started: boolean;
}

export interface AnswerStreamOptions {
  replyTo?: string;
  /** The requester, for platforms that stream to one recipient (Slack's recipient_user_id), and whom Stop names. */
  recipientId?: string;
  /** The turn the answer belongs to: its Stop and feedback buttons carry it back to the gateway. */
  turnId?: string;
}

/**
 * What the gateway needs from a platform. One instance per adapter; the gateway picks it by
 * `conversation.platform`. Text is Markdown from the model: the adapter renders, neutralises
 * broadcast mentions, turns off unfurls and splits to the platform limit.
 */
export interface OutboundPort {
  readonly platform: Platform;
  /**
   * `notify`: the one user this message may ping (a reminder's owner). Everything else in the
   * text stays silent, whatever mentions the model wrote. `feedbackFor`: the text is a turn's
   * final answer (that turn's id); its last message carries the feedback buttons where the
   * platform has them.
   */
  sendText(conversation: Conversation, markdown: string, opts?: { replyTo?: string; notify?: string; feedbackFor?: string }): Promise<void>;
  showApproval(conversation: Conversation, view: ApprovalView, opts?: { replyTo?: string }): Promise<MessageRef>;
  resolveApproval(conversation: Conversation, ref: MessageRef, view: ApprovalView, resolution: ApprovalResolution): Promise<void>;
  /** Shows that a turn is running; the returned function clears it (called in every case). */
  startWorking(conversation: Conversation, opts?: { replyTo?: string }): Promise<() => Promise<void>>;
  /**
   * Optional: a message only `userId` sees — Slack an ephemeral message in the conversation,
   * Discord a DM (messages outside an interaction cannot be ephemeral). False when the platform
   * cannot show it privately (then nothing is shown).
   */
  sendPrivate?(conversation: Conversation, userId: string, markdown: string, opts?: { replyTo?: string }): Promise<boolean>;
  /**
   * Optional: marks a person's message as seen by the running turn (a message that steers it):
   * Slack the `eyes` reaction, Discord the same emoji. `messageId` is the message's `replyTo`.
   */
  markSeen?(conversation: Conversation, messageId: string): Promise<void>;
  /** Optional: a short note while a turn runs, e.g. "running fetch_url" (the terminal shows it). */
  showProgress?(conversation: Conversation, note: string): Promise<void>;
  /**
   * Optional, for platforms without showProgress: one message of the turn's own that says what its
   * sub-agents are doing ("researcher: fetch_url"), edited to the latest note and deleted at the
   * turn's end (src/gateway/status-line.ts). Plain tool calls never post one.
   */
  readonly statusMessages?: {
    post(conversation: Conversation, note: string, opts?: { replyTo?: string }): Promise<MessageRef>;
    edit(conversation: Conversation, ref: MessageRef, note: string): Promise<void>;
    remove(conversation: Conversation, ref: MessageRef): Promise<void>;
  };
  /**
   * True when a posted approval prompt does not outlive the process (the terminal): after a
   * restart the gateway shows pending prompts again. Chat platforms keep their buttons.
   */
  readonly promptsVanish?: boolean;
  /** The platform's way to mention a user in text, e.g. `<@U123>`. */
  mention(userId: string): string;
  /** Optional: an answer shown as it is written (Slack streaming or edits, Discord edits, the terminal). */
  openAnswer?(conversation: Conversation, opts: AnswerStreamOptions): AnswerStream;
  /** Reading the conversation (thread context, channel history); absent where there is nothing to read. */
  readonly reader?: ConversationReader;
  /** Posts a file into the conversation (Slack: into the thread; Discord: a reply with the file; terminal: its path). */
  sendFile?(conversation: Conversation, file: OutboundFile, opts?: { replyTo?: string }): Promise<void>;
  /**
   * Opens the download of a file a verified event named. The adapter talks only to where the
   * platform said the file is, and refuses a declared size over `maxBytes`; the caller counts
   * the bytes again while saving them.
   */
  fetchAttachment?(attachment: InboundAttachment, opts: { maxBytes: number; signal: AbortSignal }): Promise<AsyncIterable<Uint8Array>>;
}

/** A `/hermes …` invocation as an adapter hands it over. */
export interface CommandInvocation {
  conversation: Conversation;
  speaker: Speaker;
  /** Everything after `/hermes`, trimmed. */
  text: string;
  /** The platform's id of this invocation (Slack trigger_id): a replay of the same id starts no second task. */
  id?: string;
  /** Id of a message the task's answer should reference, if any. */
  replyTo?: string;
  /** The speaker's role ids from the verified interaction (Discord members), for HERMES_ALLOW. */
  roles?: string[];
}

/** A command's direct answer. Tasks answer `{ kind: 'task' }` and their result arrives via sendText. */
export type CommandReply =
  | { kind: 'private'; text: string }
  | { kind: 'task'; text: string };

export type DecisionResult =
  | { kind: 'applied'; outcome: 'approved' | 'denied' }
  | { kind: 'already'; outcome: ApprovalOutcome }
  | { kind: 'not_allowed'; text: string }
  | { kind: 'unknown'; text: string };

export interface ApprovalDecisionInput {
  approvalId: string;
  decision: 'approve' | 'deny';
  decidedBy: Speaker;
  channelId?: string;
  /** The clicker's role ids from the verified interaction (Discord members), for HERMES_ALLOW. */
  roles?: string[];
}

/** A click on a Stop button. `turnId` and `requesterId` are what the button carries. */
export interface StopTurnInput {
  turnId: string;
  /** The turn's requester as the button names them: decides who may stop a turn running on another instance. */
  requesterId: string;
  /** Where the click happened (the turn's conversation, as the adapter reads it from the verified payload). */
  conversation: Conversation;
  by: Speaker;
  roles?: string[];
}

/** `text`: what the clicker alone is told (absent when the stopped answer says it). */
export type StopTurnResult =
  | { kind: 'stopped' }
  | { kind: 'not_allowed'; text: string }
  | { kind: 'not_running'; text: string };

export type Vote = 'up' | 'down';

/** A click on a feedback button of a turn's final answer. */
export interface FeedbackInput {
  turnId: string;
  vote: Vote;
  voter: Speaker;
  conversation: Conversation;
  roles?: string[];
}

/** `text` goes to the voter alone. */
export type FeedbackResult = { kind: 'recorded' | 'changed' | 'same' | 'refused'; text: string };

export type HandleResult = 'queued' | 'duplicate' | 'ignored' | 'noted';

/** Whether handleMessage's result means it marked the message's receipt done (InboundMessage.receipt). */
export const settlesReceipt = (result: HandleResult): boolean => result !== 'ignored';

/** What adapters call. Implemented by the gateway. */
export interface GatewayApi {
  /**
   * Returns at once after the message is durably queued (or rejected); the turn runs later. With
   * `msg.receipt`, every result but 'ignored' means the receipt was marked done in the statement
   * that marked the message (`settlesReceipt`); after 'ignored' the adapter settles it itself.
   */
  handleMessage(msg: InboundMessage): Promise<HandleResult>;
  handleCommand(cmd: CommandInvocation): Promise<CommandReply>;
  /**
   * `channelId`: where the click happened, from the verified platform payload. A click from any
   * other conversation than the approval's is refused (chat platforms always pass it).
   */
  decideApproval(input: ApprovalDecisionInput): Promise<DecisionResult>;
  /** Adapters register their outbound side once, before they connect. */
  registerPort(port: OutboundPort): void;
  /** A Stop button was clicked (the requester or an admin may stop; src/gateway/turn-stop.ts). Never throws. */
  stopTurn?(input: StopTurnInput): Promise<StopTurnResult>;
  /** A feedback button was clicked: the vote is stored (a second vote by the same person replaces the first). */
  recordFeedback?(input: FeedbackInput): Promise<FeedbackResult>;
  /** A message noted as thread context was edited (`text`) or deleted (null) before the bot's next turn; never throws. */
  reviseContext?(conversation: Conversation, id: string, text: string | null): Promise<void>;
}

/** A running platform connection. Created by adapters/<platform>; it registers its port with the gateway. */
export interface Adapter {
  readonly port: OutboundPort;
  /** Connects; resolves once the adapter is ready to receive (then main logs "ready"). */
  start(): Promise<void>;
  stop(): Promise<void>;
}
