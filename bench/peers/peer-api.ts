/**
 * What the bench asks of each peer framework. Tools take one string argument so the same tool
 * can be declared in every framework's own way (zod schema, tool() helper) without adapters.
 */
export interface PeerTool {
  name: string;
  description: string;
  argName: string;
  run(arg: string): string;
}

export interface PeerAgent {
  /** One turn in a brand-new conversation (the overhead bench). */
  askFresh(text: string): Promise<string>;
  /** One turn in the kept conversation, using the framework's default way of keeping it. */
  ask(text: string): Promise<string>;
}

export interface PeerModule {
  name: string;
  /** npm packages whose versions the report lists. */
  packages: string[];
  /** What "keep the conversation" means for this peer, in its own documented default way. */
  sessionNote: string;
  create(baseURL: string, tools: PeerTool[], instructions: string): Promise<PeerAgent>;
}

export const MODEL = 'gpt-4o-mini';
export const API_KEY = 'bench-key';
export const MAX_STEPS = 10;
