import { describe, expect, it } from 'vitest';
import { formatReminder } from '../../src/state/reminders/format-reminder.js';

const due = Date.UTC(2026, 10, 29, 14, 5);

describe('formatReminder', () => {
  it('mentions the user and carries the text', () => {
    expect(formatReminder({ text: 'water the plants', dueAt: due }, '<@U1>', false, due)).toBe('⏰ <@U1> Reminder: water the plants');
  });

  it('says when a late reminder was due, with the date once it is another day', () => {
    expect(formatReminder({ text: 'x', dueAt: due }, '<@U1>', true, due + 10 * 60_000)).toBe('⏰ <@U1> Reminder: x (late: was due 14:05 UTC)');
    expect(formatReminder({ text: 'x', dueAt: due }, '<@U1>', true, due + 26 * 3_600_000)).toBe(
      '⏰ <@U1> Reminder: x (late: was due 2026-11-29 14:05 UTC)',
    );
  });

  it('flags a possible repeat', () => {
    expect(formatReminder({ text: 'x', dueAt: due, maybeRepeat: true }, '<@1>', false, due)).toBe('⏰ <@1> Reminder: x (may be a repeat)');
  });
});
