/**
 * Keeps what the model sees of a stream small while the program may print without end: the first
 * `headChars` and the last `tailChars` characters, and the count of what was dropped between them.
 * Everything is also passed to `spill` (the full-output file) up to `spillBytes`.
 */
export class HeadTail {
  private head = '';
  private tail = '';
  private dropped = 0;
  private decoder = new TextDecoder('utf-8');
  bytes = 0;

  constructor(private readonly headChars: number, private readonly tailChars: number) {}

  push(chunk: Uint8Array): void {
    this.bytes += chunk.length;
    this.add(this.decoder.decode(chunk, { stream: true }));
  }

  end(): void {
    this.add(this.decoder.decode());
  }

  private add(text: string): void {
    if (!text) return;
    const room = this.headChars - this.head.length;
    if (room > 0) {
      this.head += text.slice(0, room);
      text = text.slice(room);
      if (!text) return;
    }
    const joined = this.tail + text;
    const excess = joined.length - this.tailChars;
    if (excess > 0) this.dropped += excess;
    this.tail = excess > 0 ? joined.slice(excess) : joined;
  }

  get truncated(): boolean {
    return this.dropped > 0;
  }

  /** The text for the model, with a marker where characters were left out. */
  text(): string {
    if (!this.truncated) return this.head + this.tail;
    return `${this.head}\n[… ${this.dropped.toLocaleString('en-US')} characters left out …]\n${this.tail}`;
  }
}
