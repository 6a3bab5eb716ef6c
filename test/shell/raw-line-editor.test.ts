import { describe, expect, it } from 'vitest';
import { RawLineEditor } from '../../adapters/shell/raw-line-editor.js';

describe('raw-mode line editor', () => {
  it('turns keystrokes into lines, with backspace, and echoes what raw mode does not', () => {
    const e = new RawLineEditor(100);
    const r = e.feed('helo\x7flo\r');
    expect(r.events).toEqual([{ kind: 'line', text: 'hello' }]);
    expect(r.echo).toBe('helo\b \blo\r\n');
  });

  it('keeps a line longer than a terminal buffer whole, across chunks', () => {
    const e = new RawLineEditor(40_000);
    const events = [...e.feed('x'.repeat(5_000)).events, ...e.feed('y'.repeat(5_000)).events, ...e.feed('\r').events];
    expect(events).toEqual([{ kind: 'line', text: 'x'.repeat(5_000) + 'y'.repeat(5_000) }]);
  });

  it('keeps a bracketed paste as one message, newlines included, even when the markers are split', () => {
    const e = new RawLineEditor(1_000);
    const a = e.feed('\x1b[20');
    const b = e.feed('0~line one\rline two\x1b[201~');
    expect([...a.events, ...b.events]).toEqual([]);
    expect(e.feed('\r').events).toEqual([{ kind: 'line', text: 'line one\nline two' }]);
  });

  it('reports a line over the limit by its length only', () => {
    const e = new RawLineEditor(10);
    expect(e.feed(`${'a'.repeat(25)}\r`).events).toEqual([{ kind: 'too_long', length: 25 }]);
    expect(e.current).toBe('');
    expect(e.feed('ok\r').events).toEqual([{ kind: 'line', text: 'ok' }]);
  });

  it('ignores arrow keys, and reads Ctrl-C and Ctrl-D (the latter only on an empty line)', () => {
    const e = new RawLineEditor(100);
    expect(e.feed('a\x1b[Ab\x1b[D').events).toEqual([]);
    expect(e.current).toBe('ab');
    expect(e.feed('\x04').events).toEqual([]);
    expect(e.feed('\x03').events).toEqual([{ kind: 'interrupt' }]);
    e.clear();
    expect(e.feed('\x04').events).toEqual([{ kind: 'eof' }]);
  });
});
