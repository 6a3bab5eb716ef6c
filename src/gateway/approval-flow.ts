import type { ApprovalRecord } from '../state/approvals/approval-store.js';
import { shownArgsJson, visibleText } from '../state/approvals/shown-args.js';
import { runApprovedCall, type TurnState } from '../agent/turn-runner.js';
import { actionNotRun, actionOutcomeUnknown, interruptedCall } from '../basics/model-notes.js';
import type { ChatMessage, Conversation, Speaker } from '../basics/types.js';
import { speakerKey } from '../basics/types.js';
import type { ApprovalDecisionInput, ApprovalOutcome, ApprovalView, DecisionResult, OutboundPort } from '../basics/ports.js';
import type { Logger } from 'pino';
import type { Clock } from '../basics/clock.js';
import type { PausedTurns } from '../state/approvals/paused-turns.js';
import type { SessionStore } from '../state/sessions/session-store.js';
import type { ApprovalStore } from '../state/approvals/approval-store.js';
import type { Tx } from '../state/store/database.js';
import type { TurnDeps } from '../agent/turn-runner.js';
import type { Gatekeeper } from './access/gatekeeper.js';
import type { AuditLog } from '../state/audit/audit-log.js';
import * as say from './user-messages.js';
import type { PolicyBook } from '../settings/policy-book.js';
import { personListed } from '../settings/channel-policies.js';

/** What the flow uses of the gateway's parts (declared here, so the gateway imports the flow and not back). */
interface FlowDeps {
  /** The state of turns waiting on a decision (written by the turn driver when one pauses). */
  pausedTurns: PausedTurns<TurnState>;
  sessions: SessionStore;
  approvals: ApprovalStore;
  turn: TurnDeps;
  clock: Clock;
  log: Logger;
  access: Gatekeeper;
  audit: Pick<AuditLog, 'record'>;
  portFor(c: Conversation): OutboundPort | undefined;
  isAdmin(s: Speaker): boolean;
  /** Channel policies: their `approvers` may decide requests there too. */
  policies?: PolicyBook;
  /** Continues a turn; `before` runs first inside the slot and may stop it by returning false. */
  drive(state: TurnState, before?: (signal: AbortSignal) => Promise<boolean>): Promise<void>;
  /**
   * Queues the continuation as a durable work row (id `resume:<approval id>`, so a second one for
   * the same approval is not added), run in the conversation's lane by runJob below.
   */
  resumeLater(r: ApprovalRecord, outcome: ApprovalOutcome, by?: Speaker): Promise<void>;
  /** The same row written inside the decision's own transaction (statements only). */
  resumeIn(tx: Tx, r: ApprovalRecord, outcome: ApprovalOutcome, by?: Speaker): Promise<void>;
  /** Tells the work queue a resume row committed (after the transaction). */
  wake(r: ApprovalRecord): void;
}

const OPEN = new Set(['pending', 'approved', 'running']);
/** A request decided so that its turn goes on: its resume row continues the turn and gives the answer (a cancel ends it). */
const GOES_ON = new Set(['approved', 'denied', 'expired', 'running', 'done', 'unknown']);

/**
 * The approval life cycle around the store's compare-and-set: show, decide (requester or admin,
 * exactly once), expire, supersede, cancel, and pick up where a restart left off. The decision
 * and its resume row are one transaction, durable before anything else happens, so a click is
 * never lost, never applied twice, and never applied without the turn going on.
 */
export function createApprovalFlow(deps: FlowDeps) {
  const timers = new Map<string, () => void>();
  const log = deps.log;

  const viewOf = (r: ApprovalRecord): ApprovalView => ({
    id: r.id,
    toolName: r.toolName,
    argsJson: shownArgsJson(r.args),
    argsDigest: r.argsHash,
    ...(r.description === undefined ? {} : { description: visibleText(r.description) }),
    requester: r.requester,
    expiresAt: r.expiresAt,
    ...(r.sources?.length && { sources: r.sources }),
  });

  async function editPrompt(r: ApprovalRecord, outcome: ApprovalOutcome, by?: Speaker): Promise<void> {
    const port = deps.portFor(r.conversation);
    if (!port || !r.messageRef) return;
    try {
      await port.resolveApproval(r.conversation, r.messageRef, viewOf(r), { outcome, decidedBy: by });
    } catch (err) {
      log.error({ err: (err as Error).message, approvalId: r.id }, 'could not update the approval prompt');
    }
  }

  /** Answers a tool call in history once: a second answer for one call id would be a 400 later. */
  async function answerCall(sessionId: string, toolCallId: string, name: string, content: string, outsideSource?: string): Promise<void> {
    const history = await deps.sessions.history(sessionId);
    if (history.some((m) => m.role === 'tool' && m.toolCallId === toolCallId)) return;
    await deps.sessions.append(sessionId, [{ role: 'tool', toolCallId, name, content, ...(outsideSource && { outsideSource }) }]);
  }

  async function stateFor(r: ApprovalRecord): Promise<TurnState> {
    const stored = await deps.pausedTurns.get(r.turnId);
    return (
      stored ?? {
        turnId: r.turnId, sessionId: r.sessionId, conversation: r.conversation, speaker: r.requester,
        isAdmin: deps.isAdmin(r.requester), replyTo: r.replyTo, stepsUsed: 0, startedAt: deps.clock.now(),
        promptTokens: 0, completionTokens: 0,
      }
    );
  }

  /** Every decision (and every click refused) is traced and audited here, and nowhere else. */
  async function trace(r: ApprovalRecord, status: string, by?: Speaker, why?: string) {
    if (status !== 'refused') deps.turn.tracer.record({ type: 'approval', turnId: r.turnId, approvalId: r.id, tool: r.toolName, status, by: by ? speakerKey(by) : undefined });
    await deps.audit.record({
      kind: 'approval', outcome: status, tool: r.toolName, argsHash: r.argsHash, conversation: r.conversation,
      ...(by && { actor: by }),
      detail: { approvalId: r.id, requester: `${r.requester.platform}:${r.requester.userId}`, ...(why && { why }) },
    });
  }

  /**
   * The turn state of a decided approval, or undefined after telling the conversation it could not
   * be read: every path from a click ends in something the clicker sees, never in silence.
   */
  async function stateOrReport(r: ApprovalRecord): Promise<TurnState | undefined> {
    try {
      return await stateFor(r);
    } catch (err) {
      log.error({ err: (err as Error).message, approvalId: r.id }, 'continuing after an approval decision failed');
      await deps.portFor(r.conversation)?.sendText(r.conversation, say.approvalFollowUpFailed(r.toolName), { replyTo: r.replyTo })
        .catch((e: Error) => log.error({ err: e.message, approvalId: r.id }, 'could not report the failed follow-up'));
      return undefined;
    }
  }

  /**
   * Queues the continuation of a decided approval's turn. Callers wait for the row to be written:
   * until then the work queue does not know the turn goes on, so `idle()` (and a shutdown) would
   * see nothing left to do. It never rejects; a failure is logged and a restart resumes it.
   */
  async function resume(r: ApprovalRecord, outcome: ApprovalOutcome, by?: Speaker): Promise<void> {
    await deps.resumeLater(r, outcome, by).catch((err: Error) => log.error({ err: err.message, approvalId: r.id }, 'queueing an approval continuation failed; a restart resumes it'));
  }

  /**
   * The decision and its continuation row in one transaction: a crash leaves either a pending
   * request (decided again later) or the decision with its queued resume, never one without the other.
   */
  async function decideAndResume(id: string, to: 'approved' | 'denied' | 'expired' | 'cancelled', by?: Speaker): Promise<{ applied: boolean; record: ApprovalRecord | undefined }> {
    const result = await deps.approvals.decide(id, to, by, (tx, rec) => deps.resumeIn(tx, rec, to, by));
    if (result.applied && result.record) deps.wake(result.record);
    return result;
  }

  /** The continuation itself; runs inside the session's slot. */
  async function continueTurn(r: ApprovalRecord, outcome: ApprovalOutcome, by?: Speaker): Promise<void> {
    const state = await stateOrReport(r);
    if (!state) return;
    await deps.drive(state, async (signal) => {
      if (outcome === 'approved') {
        if (!(await deps.approvals.markRunning(r.id))) return false; // already ran or running elsewhere
        await deps.portFor(r.conversation)?.showProgress?.(r.conversation, `running ${r.toolName}`).catch(() => undefined);
        const result = await runApprovedCall(deps.turn, state, r, signal);
        await deps.approvals.markDone(r.id, result.content.slice(0, 500));
        await trace(r, result.ok ? 'done' : 'failed');
        await answerCall(r.sessionId, r.toolCallId, r.toolName, result.content, result.outsideSource);
      } else {
        await answerCall(r.sessionId, r.toolCallId, r.toolName, actionNotRun(r.toolName, outcome, by?.displayName ?? by?.userId));
        if (outcome === 'cancelled') {
          // The user said stop: the turn ends here, without a finish that would drop its stored state.
          await deps.pausedTurns.delete(r.turnId);
          return false;
        }
      }
      return true;
    });
  }

  /** A run that was cut off (crash, kill -9): never re-run; the model is told the outcome is unknown. Inside the slot. */
  async function continueAfterLostRun(r: ApprovalRecord): Promise<void> {
    const state = await stateOrReport(r);
    if (!state) return;
    await deps.drive(state, async () => {
      await answerCall(r.sessionId, r.toolCallId, r.toolName, actionOutcomeUnknown(r.toolName));
      return true;
    });
  }

  async function expire(id: string): Promise<void> {
    timers.get(id)?.();
    timers.delete(id);
    const { applied, record } = await decideAndResume(id, 'expired');
    if (!applied || !record) return;
    await trace(record, 'expired');
    await editPrompt(record, 'expired');
  }

  function arm(r: ApprovalRecord): void {
    timers.get(r.id)?.();
    const cancel = deps.clock.setTimer(() => {
      expire(r.id).catch((err: Error) => log.error({ err: err.message, approvalId: r.id }, 'expiring an approval failed'));
    }, r.expiresAt - deps.clock.now());
    timers.set(r.id, cancel);
  }

  /** Posts the prompt for a record that is already stored. */
  async function show(r: ApprovalRecord): Promise<void> {
    const port = deps.portFor(r.conversation);
    try {
      if (!port) throw new Error(`no adapter for ${r.conversation.platform}`);
      const ref = await port.showApproval(r.conversation, viewOf(r), { replyTo: r.replyTo });
      await deps.approvals.setMessageRef(r.id, ref);
      if (r.conversation.threadId) await deps.sessions.markJoined(r.conversation);
      arm(r);
    } catch (err) {
      log.error({ err: (err as Error).message, approvalId: r.id }, 'could not post the approval prompt; cancelling it');
      const { applied } = await deps.approvals.decide(r.id, 'cancelled');
      if (applied) {
        await answerCall(r.sessionId, r.toolCallId, r.toolName, actionNotRun(r.toolName, 'cancelled'));
        await port?.sendText(r.conversation, `I needed your approval to run ${r.toolName}, but could not post the approval prompt, so it did not run.`, { replyTo: r.replyTo }).catch(() => undefined);
      }
    }
  }

  /** Cancels the session's pending requests; returns the tool call ids of requests still open after. */
  async function supersede(sessionId: string): Promise<Set<string>> {
    const stillOpen = new Set<string>();
    for (const r of await deps.approvals.openForSession(sessionId)) {
      if (r.status !== 'pending') {
        if (OPEN.has(r.status)) stillOpen.add(r.toolCallId);
        continue;
      }
      const { applied, record } = await deps.approvals.decide(r.id, 'cancelled');
      if (!applied || !record) {
        // Someone else decided it meanwhile: it may be approved and about to run.
        stillOpen.add(r.toolCallId);
        continue;
      }
      timers.get(r.id)?.();
      await trace(record, 'cancelled');
      await editPrompt(record, 'cancelled');
      await answerCall(sessionId, r.toolCallId, r.toolName, actionNotRun(r.toolName, 'cancelled'));
    }
    return stillOpen;
  }

  /**
   * Answers tool calls left without a result by a crash, except those of requests still `open`.
   * Returns the session's whole history as it is now, fixes included.
   */
  async function repairHistory(sessionId: string, open?: Set<string>): Promise<ChatMessage[]> {
    const waiting = open ?? new Set((await deps.approvals.openForSession(sessionId)).filter((r) => OPEN.has(r.status)).map((r) => r.toolCallId));
    const history = await deps.sessions.history(sessionId);
    const answered = new Set(history.flatMap((m) => (m.role === 'tool' ? [m.toolCallId] : [])));
    const fixes = history.flatMap((m) =>
      m.role === 'assistant' && m.toolCalls
        ? m.toolCalls.filter((c) => !answered.has(c.id) && !waiting.has(c.id)).map((c) => ({ role: 'tool' as const, toolCallId: c.id, name: c.name, content: interruptedCall(c.name) }))
        : [],
    );
    if (fixes.length) await deps.sessions.append(sessionId, fixes);
    return [...history, ...fixes];
  }

  /**
   * A turn a crash (or a lost claim) cut off, found so by the job that claimed its row again; `own`
   * picks the turn's requests among the session's. The turn still goes on when it reached an
   * approval prompt (its state stored, the prompt posted) or one of its requests was decided, also
   * by a click or an expiry while this runs: that decision's resume row continues the turn and
   * gives its answer, so telling the person "I was restarted" as well would be a second answer.
   * Otherwise it was cut off: the session's pending requests are cancelled, calls left without a
   * result are answered, the turn's stored state is dropped, and the caller tells the person.
   */
  async function settleCutOff(sessionId: string, own: (r: ApprovalRecord) => boolean, turnId?: string): Promise<'goes_on' | 'cut_off'> {
    const mine = (await deps.approvals.ofSession(sessionId)).filter(own);
    if (mine.some((r) => GOES_ON.has(r.status))) return 'goes_on';
    const shown = mine.filter((r) => r.status === 'pending' && r.messageRef !== undefined);
    if (shown.length > 0 && (await deps.pausedTurns.which(shown.map((r) => r.turnId))).size > 0) return 'goes_on';
    const open = await supersede(sessionId);
    // Decided between the read above and the cancel (supersede lost the compare-and-set, or read it decided already).
    const decided: ApprovalRecord[] = [];
    for (const r of mine) {
      const now = await deps.approvals.get(r.id);
      if (now && GOES_ON.has(now.status)) decided.push(now);
    }
    for (const r of decided) open.add(r.toolCallId);
    await repairHistory(sessionId, open);
    if (decided.length > 0) return 'goes_on';
    for (const id of new Set([...mine.map((r) => r.turnId), ...(turnId === undefined ? [] : [turnId])])) await deps.pausedTurns.delete(id);
    return 'cut_off';
  }

  /**
   * Claimed before, whether this continuation had begun: the approved action ran (or its cut-off
   * run was reported unknown), or a denial's, expiry's or cancel's answer is in the history.
   */
  async function continuationBegan(r: ApprovalRecord, outcome: ApprovalOutcome): Promise<boolean> {
    if (outcome === 'approved') return r.status === 'done' || r.status === 'unknown';
    const history = await deps.sessions.history(r.sessionId);
    return history.some((m) => m.role === 'tool' && m.toolCallId === r.toolCallId);
  }

  return {
    show,

    async decide(input: ApprovalDecisionInput): Promise<DecisionResult> {
      const r = await deps.approvals.get(input.approvalId);
      if (!r || r.tampered) return { kind: 'unknown', text: say.APPROVAL_UNKNOWN };
      if (input.decidedBy.platform !== r.conversation.platform || (input.channelId !== undefined && input.channelId !== r.conversation.channelId)) {
        log.warn({ approvalId: r.id, channelId: input.channelId }, 'approval click from another conversation refused');
        await trace(r, 'refused', input.decidedBy, 'other_conversation');
        return { kind: 'not_allowed', text: say.APPROVAL_OTHER_CONVERSATION };
      }
      // Someone HERMES_ALLOW does not admit never decides, not even their own earlier request.
      if (await deps.access.checkAccess({ speaker: input.decidedBy, conversation: r.conversation, roles: input.roles }, 'click')) {
        return { kind: 'not_allowed', text: say.NOT_ALLOWED };
      }
      const isRequester = speakerKey(r.requester) === speakerKey(input.decidedBy);
      // Asked at click time: the policy in force now decides, not the one when the request was made.
      const approvers = deps.policies?.at(r.conversation).approvers ?? [];
      const isApprover = personListed(approvers, input.decidedBy.platform, input.decidedBy.userId, input.roles);
      if (!isRequester && !deps.isAdmin(input.decidedBy) && !isApprover) {
        await trace(r, 'refused', input.decidedBy, approvers.length ? 'not_requester_admin_or_approver' : 'not_requester_or_admin');
        return { kind: 'not_allowed', text: approvers.length ? say.NOT_AN_APPROVER : say.NOT_YOUR_APPROVAL };
      }
      if (r.status === 'pending' && deps.clock.now() >= r.expiresAt) {
        await expire(r.id);
        return { kind: 'already', outcome: 'expired' };
      }
      const to = input.decision === 'approve' ? 'approved' : 'denied';
      const { applied, record } = await decideAndResume(r.id, to, input.decidedBy);
      if (!applied || !record) {
        const status = record?.status ?? r.status;
        const outcome: ApprovalOutcome = status === 'denied' || status === 'expired' || status === 'cancelled' ? status : 'approved';
        return { kind: 'already', outcome };
      }
      timers.get(r.id)?.();
      timers.delete(r.id);
      await trace(record, to, input.decidedBy);
      // The decision and its resume row are durable now. Editing the prompt is a platform call and
      // must not hold up the adapter's acknowledgement of the click (recover() repeats it after a crash).
      void editPrompt(record, to, input.decidedBy);
      return { kind: 'applied', outcome: to };
    },

    /**
     * After a crash, for the turn of message `inboundId` that had started: `goes_on` when it got
     * as far as its approval (its state stored and the prompt posted) or one of its requests was
     * decided (also while this runs): the decision's resume continues it. Otherwise `cut_off`:
     * its requests are cancelled, the history repaired, and the caller tells the person.
     */
    async settleCutOffTurn(sessionId: string, inboundId: string): Promise<'goes_on' | 'cut_off'> {
      // Only this turn's requests: their calls come after its question in the history. An earlier
      // turn's approved request, its resume queued behind this message, is no pause of this turn
      // (counting it left the message cut off by the crash without a word).
      const history = await deps.sessions.history(sessionId);
      const asked = history.findIndex((m) => m.role === 'user' && m.inboundId === inboundId);
      const calls = new Set(asked < 0 ? [] : history.slice(asked + 1).flatMap((m) => (m.role === 'assistant' && m.toolCalls ? m.toolCalls.map((c) => c.id) : [])));
      return settleCutOff(sessionId, (r) => calls.has(r.toolCallId));
    },

    /**
     * Before a new turn of the session: supersede, then repair, reading the session's open requests
     * once for both (what supersede did not close is still open for the repair).
     */
    /** Returns the session's whole history afterwards, so the turn need not read it again. */
    async supersedeAndRepair(sessionId: string): Promise<ChatMessage[]> {
      return repairHistory(sessionId, await supersede(sessionId));
    },

    /** `/hermes stop`: cancel pending requests now, answer their calls in the slot. */
    async cancelForSession(sessionId: string, by: Speaker): Promise<number> {
      let n = 0;
      for (const r of await deps.approvals.openForSession(sessionId)) {
        if (r.status !== 'pending') continue;
        const { applied, record } = await decideAndResume(r.id, 'cancelled', by);
        if (!applied || !record) continue;
        n++;
        timers.get(r.id)?.();
        await trace(record, 'cancelled', by);
        await editPrompt(record, 'cancelled', by);
      }
      return n;
    },

    /**
     * At start (other instances may be running on a shared database, so only what is safe with
     * them alive is done): pending requests get their expiry timer, or are posted again where
     * prompts do not survive a restart; decided-but-not-run ones get their resume row back (its
     * id is the approval's, so a row still queued is not doubled). A run cut off mid-way keeps
     * its resume row, and whoever claims it next reports it unknown (runJob below).
     */
    async recover(): Promise<void> {
      for (const r of await deps.approvals.listOpen()) {
        if (r.status === 'pending') {
          if (deps.clock.now() >= r.expiresAt) await expire(r.id);
          else if (deps.portFor(r.conversation)?.promptsVanish) await show(r);
          else if (!timers.has(r.id)) arm(r);
        } else if (r.status === 'approved') {
          // The prompt edit may not have happened before a crash, so it is made (again).
          await editPrompt(r, 'approved', r.decidedBy);
          await resume(r, 'approved', r.decidedBy);
        } else if (r.status === 'running') {
          // Normally its row is still queued (then this adds nothing); runJob reports it unknown.
          await resume(r, 'approved', r.decidedBy);
        }
      }
    },

    /**
     * On a shared database, called now and then: requests posted by other instances get an
     * expiry timer here too, so one expires on time even when the instance that posted it died.
     */
    async watchExpiries(): Promise<void> {
      for (const r of await deps.approvals.listOpen()) {
        if (r.status !== 'pending' || timers.has(r.id)) continue;
        if (deps.clock.now() >= r.expiresAt) await expire(r.id);
        else arm(r);
      }
    },

    /**
     * A durable continuation job, run by the session's lease holder. Jobs of a session run one at
     * a time, so a record still 'running' when its job starts was cut off by an instance that died
     * mid-run: it is reported unknown, never run again. One already 'done' or 'unknown' when its
     * job is claimed again had its continuation cut off after that: reported interrupted.
     */
    async runJob(approvalId: string, outcome: ApprovalOutcome, by: Speaker | undefined, startedBefore: boolean): Promise<'ran' | 'interrupted' | 'nothing'> {
      const r = await deps.approvals.get(approvalId);
      if (!r || r.tampered) return 'nothing';
      if (r.status === 'running') {
        await deps.approvals.markUnknown(r.id);
        await trace(r, 'unknown');
        await continueAfterLostRun(r);
        return 'ran';
      }
      // Claimed before, and the continuation had begun and was cut off in turn: it is not run again
      // (a denial's answer posted twice, an action's result told twice). The person is told, unless
      // the turn paused again on a later request of its own (shown, or decided): that one goes on.
      // (Only an approved 'done' used to count: after a second kill an 'unknown' one ended in silence.)
      if (startedBefore && (await continuationBegan(r, outcome))) {
        const fate = await settleCutOff(r.sessionId, (x) => x.turnId === r.turnId && x.id !== r.id && x.createdAt >= r.createdAt, r.turnId);
        // A cancel ends its turn without a word of its own: nothing was cut off that the person awaits.
        return fate === 'cut_off' && outcome !== 'cancelled' ? 'interrupted' : 'nothing';
      }
      if (outcome === 'approved' && r.status !== 'approved') return 'nothing';
      await continueTurn(r, outcome, by);
      return 'ran';
    },

    close(): void {
      for (const cancel of timers.values()) cancel();
      timers.clear();
    },
  };
}
