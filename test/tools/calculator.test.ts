import { describe, expect, it } from 'vitest';
import { calculate as evaluate } from '../../tools/calculate.js';
import { calculator, MAX_EXPRESSION_CHARS } from '../../tools/calculator.js';
import defaultExport from '../../tools/calculator.js';
import { ToolExecutor } from '../../src/capabilities/toolkit/executor.js';
import { ToolRegistry } from '../../src/capabilities/toolkit/registry.js';
import { makeToolContext } from './context-helper.js';

const calculate = (expression: string) => evaluate(expression, MAX_EXPRESSION_CHARS);

async function run(args: unknown) {
  const registry = new ToolRegistry({});
  registry.register(calculator);
  const executor = new ToolExecutor({ registry, defaultTimeoutMs: 1000 });
  const p = executor.prepareCall({ id: 'c', name: 'calculator', arguments: JSON.stringify(args) }, { isAdmin: false });
  if (p.kind !== 'ready') return p.outcome;
  return executor.runPrepared(p, makeToolContext());
}

describe('calculator', () => {
  it('is exported as default and named', () => {
    expect(defaultExport).toBe(calculator);
  });

  it('evaluates arithmetic and formats results sanely', () => {
    expect(calculate('0.1+0.2')).toBe('0.3');
    expect(calculate('2 * (3 + 4)')).toBe('14');
    expect(calculate('1/3')).toBe('0.33333333333333');
    expect(calculate('2^10')).toBe('1024');
    expect(calculate('sqrt(16) + abs(-2)')).toBe('6');
    expect(calculate('100000000 * 3')).toBe('300000000');
    expect(calculate('round(2.567, 2)')).toBe('2.57');
    expect(calculate('mean(1, 2, 3)')).toBe('2');
    expect(calculate('sqrt(-4)')).toBe('2i');
    expect(calculate('1/0')).toBe('Infinity');
    expect(calculate('3 > 2')).toBe('true');
  });

  it('accepts the spellings models copy from prose', () => {
    expect(calculate('10 × 3 ÷ 2')).toBe('15');
    expect(calculate('2**8')).toBe('256');
    expect(calculate('5 − 7')).toBe('-2');
  });

  it('converts units', () => {
    expect(calculate('5 km to mile')).toBe('3.1068559611867 mile');
    expect(calculate('5 feet + 3 inch to cm')).toBe('160.02 cm');
  });

  it('refuses assignments, function definitions and several statements', () => {
    expect(() => calculate('x = 3')).toThrow(/assignments \(=\) are not supported/);
    expect(() => calculate('f(x) = x^2')).toThrow(/function definitions are not supported/);
    expect(() => calculate('1; 2')).toThrow(/several expressions/);
  });

  it('refuses functions outside the allow-list, including the dangerous ones', () => {
    for (const expr of ['import({}, {})', 'createUnit("foo")', 'evaluate("1+1")', 'parse("1")', 'simplify("x+x")', 'zeros(100000, 100000)', 'foo(1)']) {
      expect(() => calculate(expr), expr).toThrow(/is not supported/);
    }
  });

  it('refuses what could allocate or loop without bound', () => {
    expect(() => calculate('1:1e9')).toThrow(/ranges/);
    expect(() => calculate('factorial(1e7)')).toThrow(/limited to arguments up to 10000/);
    expect(() => calculate('combinations(1e9, 5e8)')).toThrow(/limited/);
    expect(() => calculate('[1,2,3][2]')).toThrow(/index access/);
    expect(() => calculate('1+'.repeat(300) + '1')).toThrow(/longer than 500 characters/);
  });

  it('gives clear errors for bad input', () => {
    expect(() => calculate('2 +')).toThrow('could not evaluate "2 +": Unexpected end of expression');
    expect(() => calculate('x + 1')).toThrow(/Undefined symbol x/);
    expect(() => calculate('sqrt')).toThrow(/does not produce a value/);
    expect(() => calculate('   ')).toThrow(/empty/);
    expect(calculate('0/0')).toMatch(/^NaN \(not a number/);
  });

  it('runs through the executor: result text, and errors as tool failures', async () => {
    expect(await run({ expression: '6 * 7' })).toMatchObject({ ok: true, content: '42' });
    const bad = await run({ expression: '2 +' });
    expect(bad).toMatchObject({ ok: false, errorKind: 'failed' });
    expect(bad.content).toMatch(/^calculator failed: could not evaluate "2 \+"/);
    expect(await run({})).toMatchObject({ ok: false, errorKind: 'invalid_args' });
    expect(await run('6 * 7')).toMatchObject({ ok: true, content: '42' });
  });
});
