/** A long-term fact as tools, the system prompt and `/hermes memory` see it, and the speaker-scoped view of the fact store. */

export interface FactView {
  id: string;
  text: string;
  createdAt: number;
  updatedAt: number;
}

/** The speaking user's long-term facts. Scoped before a tool sees it: no user id to pass. */
export interface UserFacts {
  remember(text: string): Promise<{ fact: FactView; merged: boolean }>;
  recall(query?: string, limit?: number): Promise<FactView[]>;
  /** Returns how many facts were deleted. */
  forget(idOrAll: string): Promise<number>;
}
