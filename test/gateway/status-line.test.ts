import { describe, expect, it } from 'vitest';
import { startStatusLine } from '../../src/gateway/status-line.js';
import type { OutboundPort } from '../../src/basics/ports.js';
import { ManualClock } from '../reminders/manual-clock.js';

/** The sub-agent status message of one turn: a platform whose calls are recorded, and a clock moved by hand. */

const conversation = { platform: 'slack' as const, workspaceId: 'T1', channelId: 'C1', threadId: '1.1', isDm: false };
const silent = { warn: () => undefined };
const flush = () => new Promise<void>((r) => setImmediate(r));

function platform(opts: { failPost?: boolean; holdPost?: boolean } = {}) {
  const calls: string[] = [];
  let releasePost: () => void = () => undefined;
  const posted = new Promise<void>((r) => (releasePost = r));
  const port = {
    statusMessages: {
      async post(_c, note) {
        calls.push(`post ${note}`);
        if (opts.holdPost) await posted;
        if (opts.failPost) throw new Error('missing_scope');
        return 'C1/9.9';
      },
      async edit(_c, ref, note) {
        calls.push(`edit ${ref} ${note}`);
      },
      async remove(_c, ref) {
        calls.push(`delete ${ref}`);
      },
    },
  } satisfies Pick<OutboundPort, 'statusMessages'>;
  return { port, calls, releasePost };
}

describe('status line (what sub-agents are doing, on chat platforms)', () => {
  it('posts the first note at once, edits at most once per interval to the latest note, deletes it at the end', async () => {
    const clock = new ManualClock(0);
    const { port, calls } = platform();
    const line = startStatusLine(port, conversation, '1.1', { clock, log: silent, minIntervalMs: 2000 });
    line.show('researcher: fetch_url');
    await flush();
    expect(calls).toEqual(['post researcher: fetch_url']);
    // Three notes inside the interval: one edit, with the last of them, when the interval is over.
    line.show('researcher: calculator');
    line.show('coder: run_code');
    line.show('researcher: get_current_time');
    clock.advance(1999);
    await flush();
    expect(calls).toHaveLength(1);
    clock.advance(1);
    await flush();
    expect(calls.at(-1)).toBe('edit C1/9.9 researcher: get_current_time');
    // The same note again writes nothing; a new one after the interval is written at once.
    line.show('researcher: get_current_time');
    clock.advance(5000);
    line.show('researcher: stopped (out of steps)');
    await flush();
    expect(calls).toEqual(['post researcher: fetch_url', 'edit C1/9.9 researcher: get_current_time', 'edit C1/9.9 researcher: stopped (out of steps)']);
    await line.stop();
    expect(calls.at(-1)).toBe('delete C1/9.9');
    line.show('too late');
    await flush();
    expect(calls).toHaveLength(4);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('a turn without notes posts nothing; stop drops a pending edit and waits for a post on its way', async () => {
    const clock = new ManualClock(0);
    const quiet = platform();
    await startStatusLine(quiet.port, conversation, undefined, { clock, log: silent }).stop();
    expect(quiet.calls).toEqual([]);

    const slow = platform({ holdPost: true });
    const line = startStatusLine(slow.port, conversation, undefined, { clock, log: silent, minIntervalMs: 2000 });
    line.show('writer: read_file');
    line.show('writer: write_file');
    const stopping = line.stop();
    await flush();
    expect(slow.calls).toEqual(['post writer: read_file']);
    slow.releasePost();
    await stopping;
    // The pending edit was dropped; the message that did get posted is deleted, not left behind.
    expect(slow.calls).toEqual(['post writer: read_file', 'delete C1/9.9']);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('a failed post is logged and never retried; the turn is not disturbed', async () => {
    const clock = new ManualClock(0);
    const warnings: string[] = [];
    const { port, calls } = platform({ failPost: true });
    const line = startStatusLine(port, conversation, undefined, { clock, log: { warn: (...args: unknown[]) => void warnings.push(String(args[1])) }, minIntervalMs: 10 });
    line.show('researcher: fetch_url');
    await flush();
    clock.advance(100);
    line.show('researcher: calculator');
    clock.advance(100);
    await flush();
    await line.stop();
    expect(calls).toEqual(['post researcher: fetch_url']);
    expect(warnings).toEqual(['status message: post failed']);
  });

  it('prints every note on a platform with showProgress (the terminal), and posts nothing', async () => {
    const printed: string[] = [];
    const port: Pick<OutboundPort, 'showProgress'> = { showProgress: async (_c, note) => void printed.push(note) };
    const line = startStatusLine(port, conversation, undefined, { clock: new ManualClock(0), log: silent });
    line.show('researcher: fetch_url');
    line.show('researcher: calculator');
    await line.stop();
    expect(printed).toEqual(['researcher: fetch_url', 'researcher: calculator']);
  });
});
