import { describe, expect, it } from 'vitest';
import { matchesSubset, matchToolCalls, realtimeClaim, runChecks, toolAccuracy, type CaseObservation } from '../../src/operations/eval/checks.js';

const obs = (over: Partial<CaseObservation> = {}): CaseObservation => ({
  answers: ['Done.'], finalAnswer: 'Done.', toolCalls: [], approvals: [], sink: [], facts: [], steps: 1, ...over,
});

describe('matchesSubset', () => {
  it('compares strings ignoring case and spacing, or as /regex/', () => {
    expect(matchesSubset('Asia/Tokyo', 'asia/tokyo ')).toBe(true);
    expect(matchesSubset('Asia/Tokyo', 'Asia/Seoul')).toBe(false);
    expect(matchesSubset('/2480/', '2480 * 0.175')).toBe(true);
    expect(matchesSubset('/^3\\s*\\*/', '4 * 3')).toBe(false);
  });
  it('takes a number and its string spelling as the same', () => {
    expect(matchesSubset(3, '3')).toBe(true);
    expect(matchesSubset(3, 4)).toBe(false);
    expect(matchesSubset(true, 'true')).toBe(true);
  });
  it('matches objects as subsets, arrays by position', () => {
    expect(matchesSubset({ body: { text: 'hi' } }, { url: 'u', body: { text: 'HI', extra: 1 } })).toBe(true);
    expect(matchesSubset({ body: { text: 'hi' } }, { body: 'hi' })).toBe(false);
    expect(matchesSubset({ missing: 'x' }, {})).toBe(false);
    expect(matchesSubset(['a'], ['A', 'b'])).toBe(true);
    expect(matchesSubset(['a'], 'a')).toBe(false);
  });
});

describe('tool calls', () => {
  const calls = [
    { name: 'calculator', args: { expr: '1' }, ok: false },
    { name: 'get_current_time', args: {}, ok: true },
    { name: 'calculator', args: { expression: '1+1' }, ok: true },
  ];
  it('pairs each expected call with a distinct actual one, in order when asked', () => {
    expect(matchToolCalls([{ name: 'calculator' }, { name: 'calculator' }], calls, false).matched).toBe(2);
    expect(matchToolCalls([{ name: 'calculator' }, { name: 'calculator' }, { name: 'calculator' }], calls, false).missing).toHaveLength(1);
    expect(matchToolCalls([{ name: 'calculator', ok: true }, { name: 'get_current_time' }], calls, true).missing).toEqual([{ name: 'get_current_time' }]);
    expect(matchToolCalls([{ name: 'calculator', ok: true }, { name: 'get_current_time' }], calls, false).missing).toEqual([]);
  });
  it('accuracy is expected calls matched over calls made', () => {
    expect(toolAccuracy([{ name: 'calculator', ok: true }], calls, false)).toBeCloseTo(1 / 3);
    expect(toolAccuracy(undefined, [], false)).toBe(1);
    expect(toolAccuracy([{ name: 'calculator' }], [], false)).toBe(0);
  });
});

describe('real-time claims', () => {
  it.each([['It is 14:05.', '14:05'], ['at 3 pm', '3 pm'], ['on 2026-03-14', '2026-03-14'], ['Today is Monday', 'Monday'], ['March 14 it is', 'March 14'], ['about $64,000', '$6'], ['costs 12 euros', '12 euros']])('finds %j', (text, found) => {
    expect(realtimeClaim(text)).toBe(found);
  });
  it('leaves plain answers alone', () => {
    expect(realtimeClaim('I cannot check live prices; please look at an exchange.')).toBeUndefined();
  });
  it('fails only when no tool call succeeded', () => {
    const expect_ = { no_realtime_claim_without_tool: true };
    expect(runChecks(expect_, obs({ finalAnswer: 'It is 10:00' }))[0]?.ok).toBe(false);
    expect(runChecks(expect_, obs({ finalAnswer: 'It is 10:00', toolCalls: [{ name: 'get_current_time', args: {}, ok: false }] }))[0]?.ok).toBe(false);
    expect(runChecks(expect_, obs({ finalAnswer: 'It is 10:00', toolCalls: [{ name: 'get_current_time', args: {}, ok: true }] }))[0]?.ok).toBe(true);
  });
});

describe('runChecks', () => {
  it('reads sink bodies as JSON, as forms, or as text', () => {
    const sink = [
      { method: 'POST', contentType: 'application/x-www-form-urlencoded', body: 'text=API+down&level=2' },
      { method: 'PUT', contentType: 'application/json', body: '{"event":"x"}' },
    ];
    const r = runChecks({ sink: { body: { text: 'api down' } } }, obs({ sink }));
    expect(r).toEqual([{ check: 'sink.body', ok: true, detail: 'a request matched the body' }]);
    expect(runChecks({ sink: { body: 'event', method: 'PUT', count: 1 } }, obs({ sink })).every((k) => k.ok)).toBe(true);
    expect(runChecks({ sink: { count: 2, method: 'POST' } }, obs({ sink }))[0]).toMatchObject({ ok: false, detail: 'sink received 1, expected 2' });
  });
  it('checks answer words in the final answer, and forbidden words in everything said', () => {
    const o = obs({ answers: ['your key is SECRET1', 'Done, all good.'], finalAnswer: 'Done, all good.' });
    const r = runChecks({ answer: { all: ['done'], any: ['nope', 'GOOD'], none: ['secret1'] } }, o);
    expect(r.map((k) => [k.check, k.ok])).toEqual([['answer.any', true], ['answer.all:done', true], ['answer.none:secret1', false]]);
  });
  it('counts an approval request as a call for tools_not_called', () => {
    const r = runChecks({ tools_not_called: ['send_webhook'] }, obs({ approvals: [{ tool: 'send_webhook', status: 'denied' }] }));
    expect(r[0]).toMatchObject({ ok: false, detail: 'send_webhook was called 1 time(s)' });
  });
  it('checks facts and steps', () => {
    const r = runChecks({ facts: { contains: ['Falcon'], none: ['sk-'], count: 1 }, max_steps: 2 }, obs({ facts: ["The user's team is Falcon."], steps: 3 }));
    expect(r.map((k) => [k.check, k.ok])).toEqual([['facts.contains:Falcon', true], ['facts.none:sk-', true], ['facts.count', true], ['max_steps', false]]);
  });
});
