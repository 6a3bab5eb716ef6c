/**
 * Keystrokes from a terminal in raw mode → whole lines. Pure: `feed` takes what the terminal sent
 * and returns what happened, plus what to echo (raw mode does not echo). Raw mode is what lets a
 * long paste arrive whole: a terminal in line mode cuts a line at its 4 KB buffer without a word.
 * Bracketed paste (ESC[200~ … ESC[201~) keeps a pasted block's newlines inside one message.
 */

export type EditorEvent =
  | { kind: 'line'; text: string }
  /** A line longer than `maxChars`: only its length is kept, so a runaway paste costs no memory. */
  | { kind: 'too_long'; length: number }
  | { kind: 'interrupt' } // Ctrl-C
  | { kind: 'eof' }; // Ctrl-D on an empty line

export interface FeedResult {
  events: EditorEvent[];
  echo: string;
}

const PASTE_START = '\x1b[200~';
const PASTE_END = '\x1b[201~';
/** An escape sequence longer than this is not one we know; it is dropped. */
const MAX_ESCAPE = 16;

export class RawLineEditor {
  private buffer = '';
  private length = 0;
  private pasting = false;
  private escape = '';

  constructor(private readonly maxChars: number) {}

  /** The line typed so far (for redrawing after output). */
  get current(): string {
    return this.buffer;
  }

  feed(chunk: string): FeedResult {
    const events: EditorEvent[] = [];
    let echo = '';
    for (const ch of chunk) {
      if (this.escape) {
        this.escape += ch;
        if (this.escape === PASTE_START) { this.pasting = true; this.escape = ''; }
        else if (this.escape === PASTE_END) { this.pasting = false; this.escape = ''; }
        else if ((this.escape.length > 2 && /[@-~]/.test(ch)) || this.escape.length > MAX_ESCAPE) this.escape = ''; // arrows, function keys: ignored
        continue;
      }
      if (ch === '\x1b') { this.escape = ch; continue; }
      if (this.pasting) {
        if (ch === '\r' || ch === '\n') { this.add('\n'); echo += '\r\n'; }
        else if (ch >= ' ' || ch === '\t') { this.add(ch); echo += ch; }
        continue;
      }
      if (ch === '\r' || ch === '\n') {
        events.push(this.length > this.maxChars ? { kind: 'too_long', length: this.length } : { kind: 'line', text: this.buffer });
        this.buffer = '';
        this.length = 0;
        echo += '\r\n';
      } else if (ch === '\x7f' || ch === '\b') {
        if (this.length > 0 && this.length <= this.buffer.length) {
          this.buffer = this.buffer.slice(0, -1);
          this.length = this.buffer.length;
          echo += '\b \b';
        } else if (this.length > 0) {
          this.length -= 1;
        }
      } else if (ch === '\x03') {
        events.push({ kind: 'interrupt' });
      } else if (ch === '\x04') {
        if (this.length === 0) events.push({ kind: 'eof' });
      } else if (ch === '\x15') {
        // Ctrl-U: clear the line
        echo += '\b \b'.repeat(Math.min(this.buffer.length, 10_000));
        this.buffer = '';
        this.length = 0;
      } else if (ch >= ' ' || ch === '\t') {
        this.add(ch);
        echo += ch;
      }
    }
    return { events, echo };
  }

  /** Clears the line typed so far (Ctrl-C on a non-empty line). */
  clear(): void {
    this.buffer = '';
    this.length = 0;
  }

  private add(ch: string): void {
    this.length += ch.length;
    if (this.buffer.length <= this.maxChars) this.buffer += ch;
  }
}
