import type { Logger } from '../log.js';
import { ModelError, type ModelProvider } from '../provider/provider.js';
import type { ChatMessage, ImageRef } from '../types.js';
import type { SessionWorkspace } from '../workspace/workspace.js';
import { IMAGE_NOTES } from './image-notes.js';
import { imageDataUrl } from './image-ref.js';
import { imagesOf, promptImages, withoutImages } from './prompt-images.js';
import { refusesImages } from './vision-probe.js';
import type { VisionSupport } from './vision-support.js';

/**
 * Images in a turn's model calls. The history keeps only references (ImageRef); this is where they
 * become pictures: `prepare` decides which the model is shown (prompt-images.ts), and the provider
 * returned by `provider` reads their bytes from the session's workspace right before each call,
 * checking each is still the same file, and hands them to the wire layer as data URLs.
 */
export interface TurnImages {
  /** Whether the model is shown images now (tools that need vision are offered only then). */
  canSee(): boolean;
  /** The history as this step's model call sees it (prompt-images.ts); settles canSee() first. */
  prepare(history: ChatMessage[]): Promise<ChatMessage[]>;
  provider(inner: ModelProvider, sessionId: string): ModelProvider;
}

export function createTurnImages(opts: { vision: VisionSupport; workspace: (sessionId: string) => SessionWorkspace; log: Logger }): TurnImages {
  const { vision, log } = opts;
  return {
    canSee: () => vision.canSee(),
    async prepare(history) {
      // Settled before the step's tool list is made, so view_image is offered from the first step
      // (`auto` asks the server once per model; later it is a remembered answer).
      const canSee = await vision.check();
      if (!history.some((m) => imagesOf(m).length > 0)) return history;
      return promptImages(history, canSee);
    },
    provider(inner, sessionId) {
      return {
        model: inner.model,
        async complete(request) {
          if (!request.messages.some((m) => imagesOf(m).length > 0)) return inner.complete(request);
          const ws = opts.workspace(sessionId);
          const data = new Map<string, string>();
          const messages: ChatMessage[] = [];
          for (const m of request.messages) {
            if (m.role !== 'user' && m.role !== 'tool') {
              messages.push(m);
              continue;
            }
            const missing: ImageRef[] = [];
            for (const ref of imagesOf(m)) {
              const url = data.get(ref.sha256) ?? (await imageDataUrl(ws, ref));
              if (url) data.set(ref.sha256, url);
              else missing.push(ref);
            }
            messages.push(withoutImages(m, missing, IMAGE_NOTES.missing));
          }
          try {
            return await inner.complete({ ...request, messages, imageData: data });
          } catch (err) {
            if (!(err instanceof ModelError) || err.kind !== 'permanent' || !refusesImages(err.status, err.message)) throw err;
            // The server will not take images from this model: the same call again, described.
            await vision.refused(err.message);
            return inner.complete({ ...request, messages: promptImages(messages, false) });
          }
        },
      };
    },
  };
}
