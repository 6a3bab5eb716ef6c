import type { IncomingMessage } from 'node:http';
import type { Transform } from 'node:stream';
import zlib from 'node:zlib';

/**
 * Reads a response body, decompressed, up to a byte cap. The cap counts bytes *after*
 * decompression and reading stops (streams destroyed) the moment it is reached, so a 1 GB gzip
 * bomb costs at most `maxBytes` plus one zlib chunk of memory.
 */

export interface BodyResult {
  body: Buffer;
  truncated: boolean;
}

const SUPPORTED = new Set(['', 'identity', 'gzip', 'x-gzip', 'deflate', 'br']);

// Z_SYNC_FLUSH: a body cut short by the server still yields what was decoded, as browsers do.
function makeDecoder(encoding: string, first: Buffer): Transform | null {
  const flush = { finishFlush: zlib.constants.Z_SYNC_FLUSH };
  if (encoding === 'gzip' || encoding === 'x-gzip') return zlib.createGunzip(flush);
  if (encoding === 'br') return zlib.createBrotliDecompress({ finishFlush: zlib.constants.BROTLI_OPERATION_FLUSH });
  if (encoding === 'deflate') {
    // "deflate" should be zlib-wrapped (first byte's low nibble 8), but some servers send raw deflate.
    return ((first[0] ?? 0) & 0x0f) === 8 ? zlib.createInflate(flush) : zlib.createInflateRaw(flush);
  }
  return null;
}

/**
 * Resolves with the (possibly truncated) body; rejects with a clear Error on a decoding problem.
 * `stop` is called whenever reading ends early, so the caller closes the socket.
 */
export function readBody(res: IncomingMessage, maxBytes: number, stop: () => void): Promise<BodyResult> {
  const encoding = String(res.headers['content-encoding'] ?? '').trim().toLowerCase();
  return new Promise<BodyResult>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let total = 0;
    let settled = false;
    let decoder: Transform | null | undefined;

    const finish = (truncated: boolean): void => {
      if (settled) return;
      settled = true;
      decoder?.destroy();
      if (truncated) stop();
      resolve({ body: Buffer.concat(chunks, total), truncated });
    };
    const fail = (err: Error): void => {
      if (settled) return;
      settled = true;
      decoder?.destroy();
      stop();
      const what = encoding && encoding !== 'identity' ? `could not decode the ${encoding} response` : 'the response was cut off';
      reject(new Error(`${what}: ${err.message}`));
    };
    const take = (chunk: Buffer): void => {
      if (settled) return;
      const room = maxBytes - total;
      if (chunk.length > room) {
        chunks.push(chunk.subarray(0, room));
        total += room;
        finish(true);
        return;
      }
      chunks.push(chunk);
      total += chunk.length;
    };

    if (!SUPPORTED.has(encoding)) {
      fail(new Error(`unsupported content encoding "${encoding.slice(0, 40)}"`));
      return;
    }
    if (maxBytes <= 0) {
      finish(true);
      return;
    }

    res.on('data', (chunk: Buffer) => {
      if (settled) return;
      if (decoder === undefined) {
        decoder = makeDecoder(encoding, chunk);
        decoder?.on('data', take).on('end', () => finish(false)).on('error', fail);
        decoder?.on('drain', () => res.resume());
      }
      if (!decoder) return take(chunk);
      // Backpressure: an inflating decoder can produce far more than it gets; let it catch up.
      if (!decoder.write(chunk)) res.pause();
    });
    res.on('end', () => {
      if (decoder) decoder.end();
      else finish(false);
    });
    res.on('error', fail);
    // Destroyed before the end (abort, timeout, reset): 'close' without 'end' must not hang the read.
    res.on('close', () => {
      if (!res.complete) fail(new Error('connection closed early'));
    });
  });
}
