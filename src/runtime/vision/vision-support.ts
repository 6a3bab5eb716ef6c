import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../../basics/log.js';
import type { VisionAnswer } from './vision-probe.js';

/**
 * Whether images go to the model as images (HERMES_VISION): `on` and `off` say so; `auto` asks
 * the server once per model (vision-probe.ts) and remembers the answer in the data directory, so
 * a restart does not ask again. An inconclusive probe (server down) is retried a minute later at
 * the earliest; until there is an answer, images are described to the model instead of shown.
 * A model request that the server refuses because of its images teaches `auto` the same "no".
 */

export type VisionMode = 'auto' | 'on' | 'off';

export interface VisionSupport {
  readonly mode: VisionMode;
  /** HERMES_MAX_IMAGE_MB in bytes. */
  readonly maxImageBytes: number;
  /** Known right now (no waiting): `on`, or `auto` with a remembered yes. Starts a probe in the background when unknown. */
  canSee(): boolean;
  /** The answer, asking the server first when `auto` has none yet (bounded by the probe's timeout). */
  check(): Promise<boolean>;
  /** The server refused a request because of its images (resolves once the answer is saved). */
  refused(reason: string): Promise<void>;
}

export interface VisionSupportOptions {
  mode: VisionMode;
  maxImageBytes: number;
  /** Which model at which server: the key the answer is remembered under. */
  model: string;
  baseURL?: string;
  probe: () => Promise<VisionAnswer>;
  /** Where answers are kept (`<data dir>/vision.json`); absent → only in memory. */
  file?: string;
  log: Logger;
  now?: () => number;
}

const RETRY_AFTER_MS = 60_000;

export function createVisionSupport(opts: VisionSupportOptions): VisionSupport {
  const key = `${opts.baseURL ?? 'openai'}|${opts.model}`;
  const now = opts.now ?? Date.now;
  let known: boolean | undefined;
  let loaded = false;
  let inFlight: Promise<boolean> | undefined;
  let lastTry = -Infinity;

  async function remembered(): Promise<Record<string, { images: boolean; checkedAt: string }>> {
    if (!opts.file) return {};
    try {
      return JSON.parse(await readFile(opts.file, 'utf8')) as Record<string, { images: boolean; checkedAt: string }>;
    } catch {
      return {};
    }
  }

  async function remember(images: boolean): Promise<void> {
    known = images;
    if (!opts.file) return;
    try {
      const all = await remembered();
      all[key] = { images, checkedAt: new Date(now()).toISOString() };
      await mkdir(path.dirname(opts.file), { recursive: true });
      const tmp = `${opts.file}.${process.pid}.tmp`;
      await writeFile(tmp, `${JSON.stringify(all, null, 2)}\n`);
      await rename(tmp, opts.file);
    } catch (err) {
      opts.log.warn({ err: (err as Error).message }, 'vision: could not save what the model supports; it is asked again after a restart');
    }
  }

  function ask(): Promise<boolean> {
    inFlight ??= (async () => {
      if (!loaded) {
        loaded = true;
        const saved = (await remembered())[key];
        if (saved) {
          known = saved.images;
          return known;
        }
      }
      if (now() - lastTry < RETRY_AFTER_MS) return false;
      lastTry = now();
      const answer = await opts.probe().catch((): VisionAnswer => 'unknown');
      if (answer === 'unknown') {
        opts.log.warn({ model: opts.model }, 'vision: could not tell whether the model takes images (server not answering?); images are described, not shown, until it does. Set HERMES_VISION=on or off to skip the check.');
        return false;
      }
      opts.log.info({ model: opts.model, images: answer === 'yes' }, answer === 'yes' ? 'vision: the model takes images' : 'vision: the model does not take images; they are described to it instead');
      await remember(answer === 'yes');
      return answer === 'yes';
    })().finally(() => {
      inFlight = undefined;
    });
    return inFlight;
  }

  return {
    mode: opts.mode,
    maxImageBytes: opts.maxImageBytes,
    canSee() {
      if (opts.mode !== 'auto') return opts.mode === 'on';
      if (known === undefined) void ask();
      return known === true;
    },
    async check() {
      if (opts.mode !== 'auto') return opts.mode === 'on';
      return known ?? ask();
    },
    async refused(reason) {
      opts.log.warn({ model: opts.model, reason }, 'vision: the model server refused a request with images; they are described to it instead');
      if (opts.mode === 'auto') await remember(false);
    },
  };
}
