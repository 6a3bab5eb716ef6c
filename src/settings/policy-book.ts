import { resolvePolicy, type ChannelPolicy, type ChannelsFile, type PolicyPlace } from './channel-policies.js';

/**
 * The channel policies in force, replaced as a whole when the config file is reloaded. Everything
 * that applies a policy asks here at the moment it acts (a model call, a click, a scheduled run),
 * never keeps a resolved policy, so a changed policy applies from the next step on.
 */
export interface PolicyBook {
  at(place: PolicyPlace): ChannelPolicy;
  /** The `channels:` section as in force now. */
  current(): ChannelsFile;
  replace(next: ChannelsFile): void;
  /** Whether any policy sets `respond`, `users`/`roles` or a budget (cheap checks skip the rest). */
  readonly configured: boolean;
}

export function createPolicyBook(initial: ChannelsFile = {}): PolicyBook {
  let file = initial;
  return {
    at: (place) => resolvePolicy(file, place),
    current: () => file,
    replace(next) {
      file = next;
    },
    get configured() {
      return Object.keys(file).length > 0;
    },
  };
}
