/**
 * What a running turn tells the outside while it runs, and the one moment it listens: the port
 * between the agent loop and whatever shows the turn (chat platform, terminal, nothing at all in
 * benchmarks). Every member is optional; a sink that does nothing is `{}`.
 *
 * The order for one model step is: `beforeModelCall` → `textDelta`* → `stepEnded` → (when the
 * step asked for tools) `toolsStarting` → `progress`* while they run.
 */
export interface TurnSink {
  /**
   * Called before each model call of the turn, when no message of the turn is half-written: the
   * place to add messages that arrived while the turn ran (steering) to the session, since the loop
   * reads the session's history again right after.
   */
  beforeModelCall?(): Promise<void>;
  /**
   * Visible text of the current model step as the model writes it. Only a provider that streams
   * calls it (ModelRequest.onText); the rest never do, and the final answer still comes in
   * the turn's end. Text of tool-call markup never reaches it.
   */
  textDelta?(text: string): void;
  /**
   * The model step ended. `answer`: its text is the turn's final answer. `tool_calls`: the text
   * streamed in this step was a preamble to tool calls. `retry`: the text streamed in this step is
   * withdrawn and the model is asked again (its tool calls could not be parsed, or the answer
   * stated figures no tool gave — see grounding.ts); a streaming display should drop that text.
   */
  stepEnded?(kind: StepEnd): void;
  /**
   * What the turn's final answer carries into its history row (the gateway: its search row), opaque
   * to the loop: the answer's append writes `json` in its own statement (LoopConversation.append),
   * so the answer and its search row are one write; `written` is called once that append is done.
   */
  answerRow?(text: string): AnswerRow | undefined;
  /** Tools are about to run (names as the model called them). */
  toolsStarting?(names: string[]): void;
  /** A note while a tool runs, e.g. what a sub-agent is doing ("researcher: fetch_url"). */
  progress?(note: string): void;
}

export type StepEnd = 'answer' | 'tool_calls' | 'retry';

/** A row that rides on the final answer's append (TurnSink.answerRow). */
export interface AnswerRow {
  json: string;
  written(): void;
}
