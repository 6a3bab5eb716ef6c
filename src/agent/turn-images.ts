import type { Logger } from '../basics/log.js';
import { ModelError, type ModelProvider } from '../runtime/provider/provider.js';
import type { ChatMessage, ImageRef } from '../basics/types.js';
import type { SessionWorkspace } from '../capabilities/workspace/workspace.js';
import { imageDataUrl } from '../capabilities/workspace/workspace-image.js';
import { IMAGE_NOTES } from '../runtime/vision/image-notes.js';
import { imagesOf, promptImages, withoutImages } from '../runtime/vision/prompt-images.js';
import { refusesImages } from '../runtime/vision/vision-probe.js';
import type { VisionSupport } from '../runtime/vision/vision-support.js';

/**
 * Images in a turn's model calls. The history keeps only references (ImageRef); which of them the
 * model is shown is decided per call (src/runtime/vision/prompt-images.ts), and the provider
 * returned by `provider` reads their bytes from the session's workspace right before each call,
 * checking each is still the same file, and hands them to the wire layer as data URLs. A server
 * that refuses the images gets the same call again with the images described.
 */
export interface TurnImages {
  /** Settles whether the model is shown images (`auto` asks the server once per model). */
  ready(): Promise<void>;
  /** Whether the model is shown images now (tools that need vision are offered only then). */
  canSee(): boolean;
  provider(inner: ModelProvider, sessionId: string): ModelProvider;
}

export function createTurnImages(opts: { vision: VisionSupport; workspace: (sessionId: string) => SessionWorkspace; log: Logger }): TurnImages {
  const { vision } = opts;
  return {
    ready: async () => {
      await vision.check();
    },
    canSee: () => vision.canSee(),
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
