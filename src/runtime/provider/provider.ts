import type { ChatMessage, ToolCall, TokenUsage } from '../../basics/types.js';

/** What the model sees of one tool: JSON Schema derived from the tool's zod input. */
export interface ToolSpec {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

export interface ModelRequest {
  messages: ChatMessage[];
  tools: ToolSpec[];
  signal?: AbortSignal;
  /** Override for this call (the summariser uses a smaller budget). */
  maxTokens?: number;
  /** Another model for this call (a sub-agent profile's `model`); default the provider's own. */
  model?: string;
  /**
   * Set to stream: the model is called with `stream: true` and the answer's visible text is passed
   * here as it is written. Joined, one call's pieces equal the response's `content` when the call
   * ends without a parse error (the provider passes the rest at the end); nothing that may be a tool
   * call written as text is ever passed (src/runtime/provider/visible-text.ts). A model that closes a
   * `</think>` it never opened is the one case where the pieces are not a prefix of `content`;
   * callers compare and show `content` instead.
   */
  onText?: (delta: string) => void;
  /**
   * The bytes of the images the messages reference, as data URLs by ImageRef.sha256 (filled in
   * right before the call by src/agent/turn-images.ts; the messages themselves never hold bytes).
   */
  imageData?: ReadonlyMap<string, string>;
  /**
   * Set by a caller that writes the call's outcome right after it (the agent loop: the step's
   * messages) and awaits what is handed here together with those writes, so on SQLite they land in
   * one group commit. A wrapper that writes after the call (the usage meter's charge) starts its
   * write and hands it here instead of awaiting it; without this, it awaits the write itself.
   */
  settleWith?: (write: Promise<unknown>) => void;
  /**
   * Set by a caller that appends the call's outcome to a session's history (the agent loop, for a
   * turn): the usage meter hands it the call's token charge instead of writing it, and the caller
   * writes it in that append's own statement (SessionStore.append `charge`). A charge the caller
   * ends up not appending it writes with `write()`.
   */
  carryCharge?: (charge: CarriedCharge) => void;
}

/** A model call's token charge, handed to the caller to write with its history append (carryCharge). */
export interface CarriedCharge {
  /** Opaque JSON for the append (schema step 0015's trigger adds it to the day's counters). */
  readonly row: string;
  /** Writes it in a statement of its own. */
  write(): Promise<void>;
}

export interface ModelResponse {
  /** Visible text of the answer with any parsed tool-call markup removed; null when there is none. */
  content: string | null;
  toolCalls: ToolCall[];
  /**
   * Problems understanding tool calls the model wrote as text (JSON mode, <tool_call> tags).
   * The loop sends these back to the model as an error instead of guessing.
   */
  parseErrors: string[];
  usage: TokenUsage;
  finishReason: string;
  model: string;
}

/**
 * How a model call failed:
 * - permanent: bad key, unknown model, quota exhausted, a 400 we caused: retrying cannot help
 * - transient: 429 / 5xx / connection error after the retries ran out
 * - timeout: one call took longer than HERMES_MODEL_TIMEOUT_MS
 * - aborted: the caller's AbortSignal fired (`/hermes stop`, newer message)
 */
/** too_large: the server refused the request's size (413, or a 400 naming the context length). */
export type ModelErrorKind = 'permanent' | 'transient' | 'timeout' | 'aborted' | 'too_large';

export class ModelError extends Error {
  constructor(
    readonly kind: ModelErrorKind,
    message: string,
    readonly status?: number,
    /** For transient failures: the last reason, short, for the one sentence a person reads. */
    readonly detail?: string,
  ) {
    super(message);
    this.name = 'ModelError';
  }
}

/** The only thing the agent loop knows about a model. */
export interface ModelProvider {
  readonly model: string;
  complete(request: ModelRequest): Promise<ModelResponse>;
}
