import type { ChatMessage, Speaker } from '../../basics/types.js';
import { speakerKey } from '../../basics/types.js';
import { privateCallArgsStub, privateResultStub } from '../../basics/model-notes.js';

/**
 * A shared thread's history holds every participant's tool calls. Calls of tools marked `private`
 * (facts, reminders, schedules) belong to the person whose turn made them: their arguments and
 * results reach the model only on that person's turns. On anyone else's turn — and in the running
 * summary, which every participant's turns read — both are replaced by a short stub, so alice's
 * `recall_facts` result never travels to the model while bob speaks. Pure.
 *
 * The owner of a call is the speaker of the latest user message before it (a turn's calls follow
 * its user message). A call with no known owner is stubbed for everyone.
 */
export function hidePrivateCalls(history: ChatMessage[], viewer: Speaker | undefined, isPrivate: (toolName: string) => boolean): ChatMessage[] {
  const viewerKey = viewer ? speakerKey(viewer) : undefined;
  let ownerKey: string | undefined;
  const hiddenCalls = new Set<string>();
  let changed = false;
  const out = history.map((m): ChatMessage => {
    if (m.role === 'user' && m.speaker) ownerKey = speakerKey(m.speaker);
    if (m.role === 'assistant' && m.toolCalls?.some((c) => isPrivate(c.name))) {
      if (viewerKey !== undefined && ownerKey === viewerKey) return m;
      changed = true;
      return {
        ...m,
        toolCalls: m.toolCalls.map((c) => {
          if (!isPrivate(c.name)) return c;
          hiddenCalls.add(c.id);
          return { ...c, arguments: privateCallArgsStub() };
        }),
      };
    }
    if (m.role === 'tool' && hiddenCalls.has(m.toolCallId)) {
      changed = true;
      return { ...m, content: privateResultStub(m.name) };
    }
    return m;
  });
  return changed ? out : history;
}
