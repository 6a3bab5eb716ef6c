import { describe, expect, it } from 'vitest';
import { isNearDuplicate, lexicalScore, looksLikeSecret, mergedFactText, queryTerms } from '../../src/state/memory/fact-text.js';

describe('fact text rules', () => {
  it('treats rewordings as duplicates but not contradictions or single words', () => {
    expect(isNearDuplicate('Prefers metric units.', 'prefers METRIC units')).toBe(true);
    expect(isNearDuplicate('Lives in Berlin, Germany', 'Germany, lives in Berlin')).toBe(true);
    expect(isNearDuplicate('Prefers metric units', 'Prefers metric units when cooking')).toBe(true);
    expect(isNearDuplicate('Is vegan', 'Is not vegan')).toBe(false);
    expect(isNearDuplicate('vegan', 'Is not vegan')).toBe(false);
    expect(isNearDuplicate('Timezone is Europe/Berlin', 'Timezone is Europe/Paris')).toBe(false);
    expect(isNearDuplicate('', 'anything')).toBe(false);
    expect(isNearDuplicate('Ведёт проект Альфа', 'ведёт проект альфа')).toBe(true);
  });

  it('keeps the more detailed wording when one contains the other', () => {
    expect(mergedFactText('Prefers metric units when cooking', 'prefers metric units')).toBe('Prefers metric units when cooking');
    expect(mergedFactText('prefers metric units', 'Prefers metric units when cooking')).toBe('Prefers metric units when cooking');
    expect(mergedFactText('Lives in Berlin, Germany', 'Germany, lives in Berlin')).toBe('Germany, lives in Berlin');
  });

  it('spots credentials but not talk about them', () => {
    expect(looksLikeSecret('Bearer abcdefghijklmnopqrstuvwxyz123456')).toBe(true);
    expect(looksLikeSecret('-----BEGIN RSA PRIVATE KEY-----')).toBe(true);
    expect(looksLikeSecret('eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U')).toBe(true);
    expect(looksLikeSecret('my api key = abc123')).toBe(true);
    expect(looksLikeSecret('Prefers strong passwords and 2FA')).toBe(false);
    expect(looksLikeSecret('The secret to good coffee is fresh beans')).toBe(false);
    expect(looksLikeSecret('Works at https://example.com/team/payments')).toBe(false);
  });

  it('scores facts by the share of query words they contain', () => {
    const terms = queryTerms('How do I deploy the payments service?');
    expect(terms).toEqual(['deploy', 'payments', 'service']);
    expect(lexicalScore(terms, 'Deploys the payments service on Fridays')).toBeCloseTo((0.5 + 1 + 1) / 3);
    expect(lexicalScore(terms, 'Likes tea')).toBe(0);
    expect(lexicalScore([], 'anything')).toBe(0);
  });
});
