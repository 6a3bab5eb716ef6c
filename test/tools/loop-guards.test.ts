import { describe, expect, it } from 'vitest';
import { canonicalArgs, createLoopGuard, LOOP_GUARD_USER_TEXT, repeatsSameCall } from '../../src/agent/loop-guards.js';

describe('createLoopGuard', () => {
  it('allows the same call twice and stops the third, whatever the key order or spacing', () => {
    const guard = createLoopGuard();
    expect(guard.check({ name: 'fetch_url', args: { url: 'https://a.example', max_chars: 100 } })).toEqual({ allow: true });
    expect(guard.check({ name: 'fetch_url', args: '{ "max_chars": 100, "url": "https://a.example" }' })).toEqual({ allow: true });
    const third = guard.check({ name: 'fetch_url', args: { max_chars: 100, url: 'https://a.example' } });
    expect(third.allow).toBe(false);
    if (third.allow) return;
    expect(third.reason).toBe('repeated_call');
    expect(third.modelMessage).toContain('fetch_url');
    expect(third.modelMessage).toContain('Do not call it again with the same arguments');
    expect(third.userMessage).toBe(LOOP_GUARD_USER_TEXT.repeated_call('fetch_url'));
    expect(third.userMessage).not.toBe(third.modelMessage);
  });

  it('counts different arguments and different tools separately', () => {
    const guard = createLoopGuard();
    for (let i = 0; i < 2; i++) {
      expect(guard.check({ name: 'calculator', args: { expression: '1+1' } }).allow).toBe(true);
      expect(guard.check({ name: 'calculator', args: { expression: '2+2' } }).allow).toBe(true);
      expect(guard.check({ name: 'get_current_time', args: { expression: '1+1' } }).allow).toBe(true);
    }
    expect(guard.check({ name: 'calculator', args: { expression: '3+3' } }).allow).toBe(true);
    expect(guard.check({ name: 'calculator', args: { expression: '1+1' } }).allow).toBe(false);
  });

  it('stops a tool after three failures in a row; a success resets the streak', () => {
    const guard = createLoopGuard();
    const attempt = (n: number, ok: boolean) => {
      const v = guard.check({ name: 'send_webhook', args: { url: `https://h.example/${n}` } });
      if (v.allow) guard.record({ name: 'send_webhook', ok });
      return v;
    };
    expect(attempt(1, false).allow).toBe(true);
    expect(attempt(2, false).allow).toBe(true);
    expect(attempt(3, true).allow).toBe(true);
    expect(attempt(4, false).allow).toBe(true);
    expect(attempt(5, false).allow).toBe(true);
    expect(attempt(6, false).allow).toBe(true);
    const stopped = attempt(7, true);
    expect(stopped).toMatchObject({ allow: false, reason: 'repeated_failure' });
    if (!stopped.allow) expect(stopped.modelMessage).toContain('send_webhook has failed 3 times in a row');
    expect(guard.check({ name: 'calculator', args: {} }).allow).toBe(true);
  });

  it('takes its rules as data', () => {
    const guard = createLoopGuard([repeatsSameCall(2)]);
    expect(guard.check({ name: 'x', args: {} }).allow).toBe(true);
    expect(guard.check({ name: 'x', args: {} }).allow).toBe(false);
  });
});

describe('canonicalArgs', () => {
  it('sorts keys deeply, drops undefined, and keeps unparseable text as trimmed text', () => {
    expect(canonicalArgs({ b: 1, a: { d: [2, { z: 1, y: 2 }], c: undefined } })).toBe('{"a":{"d":[2,{"y":2,"z":1}]},"b":1}');
    expect(canonicalArgs('{"b":1,"a":2}')).toBe('{"a":2,"b":1}');
    expect(canonicalArgs('  not json ')).toBe('not json');
  });
});
