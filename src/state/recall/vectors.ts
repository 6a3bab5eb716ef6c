/** Vectors as stored (Float32 little-endian, base64 text: one column type on both engines) and compared. */

export function encodeVector(v: Float32Array): string {
  return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64');
}

export function decodeVector(text: string): Float32Array | undefined {
  const buf = Buffer.from(text, 'base64');
  if (buf.length === 0 || buf.length % 4 !== 0) return undefined;
  // Copied into an aligned buffer: a Buffer's offset inside Node's pool may not be a multiple of 4.
  const copy = new Uint8Array(buf.length);
  copy.set(buf);
  return new Float32Array(copy.buffer);
}

/** Cosine similarity; 0 for vectors of different sizes or a zero vector. */
export function cosine(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length || a.length === 0) return 0;
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}
