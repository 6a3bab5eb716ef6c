import type { ImageMime } from '../../basics/types.js';

/**
 * Which image a file is, from its first bytes (never its name: a PNG called report.pdf is a PNG,
 * and a text file called cat.png is not an image), with its pixel size when the header says it.
 * Only the four types vision models accept are recognised.
 */

export interface ImageType {
  mime: ImageMime;
  /** PNG, JPEG, GIF or WebP: for what the model and people read. */
  label: string;
  width?: number;
  height?: number;
}

export function sniffImage(bytes: Uint8Array): ImageType | undefined {
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (b.length >= 8 && b.readUInt32BE(0) === 0x89504e47 && b.readUInt32BE(4) === 0x0d0a1a0a) {
    // IHDR is always the first chunk: width and height at bytes 16 and 20.
    return withSize({ mime: 'image/png', label: 'PNG' }, b.length >= 24 ? [b.readUInt32BE(16), b.readUInt32BE(20)] : undefined);
  }
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return withSize({ mime: 'image/jpeg', label: 'JPEG' }, jpegSize(b));
  if (b.length >= 6 && /^GIF8[79]a$/.test(b.toString('latin1', 0, 6))) {
    return withSize({ mime: 'image/gif', label: 'GIF' }, b.length >= 10 ? [b.readUInt16LE(6), b.readUInt16LE(8)] : undefined);
  }
  if (b.length >= 12 && b.toString('latin1', 0, 4) === 'RIFF' && b.toString('latin1', 8, 12) === 'WEBP') {
    return withSize({ mime: 'image/webp', label: 'WebP' }, webpSize(b));
  }
  return undefined;
}

function withSize(type: ImageType, size: [number, number] | undefined): ImageType {
  return size && size[0] > 0 && size[1] > 0 ? { ...type, width: size[0], height: size[1] } : type;
}

/** Walks the JPEG segments to the first start-of-frame marker (bounded by the buffer). */
function jpegSize(b: Buffer): [number, number] | undefined {
  let i = 2;
  while (i + 9 < b.length) {
    if (b[i] !== 0xff) return undefined;
    const marker = b[i + 1]!;
    if (marker === 0xff) {
      i += 1;
      continue;
    }
    const length = b.readUInt16BE(i + 2);
    // SOF0–SOF15, except DHT (C4), JPG (C8) and DAC (CC), carry height then width.
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      return [b.readUInt16BE(i + 7), b.readUInt16BE(i + 5)];
    }
    if (length < 2) return undefined;
    i += 2 + length;
  }
  return undefined;
}

function webpSize(b: Buffer): [number, number] | undefined {
  if (b.length < 30) return undefined;
  const chunk = b.toString('latin1', 12, 16);
  if (chunk === 'VP8 ') return [b.readUInt16LE(26) & 0x3fff, b.readUInt16LE(28) & 0x3fff];
  if (chunk === 'VP8L') {
    const bits = b.readUInt32LE(21);
    return [(bits & 0x3fff) + 1, ((bits >> 14) & 0x3fff) + 1];
  }
  if (chunk === 'VP8X') return [b.readUIntLE(24, 3) + 1, b.readUIntLE(27, 3) + 1];
  return undefined;
}
