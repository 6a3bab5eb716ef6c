import * as z from 'zod';
import { defineTool } from '../src/capabilities/toolkit/tool-api.js';

export const MAX_EXPRESSION_CHARS = 500;

export const calculator = defineTool({
  name: 'calculator',
  description:
    'Evaluate an arithmetic expression exactly (e.g. "(3.5 + 2) * 4", "sqrt(2)^2", "15% of 80" as "0.15 * 80", "5 km to mile"). ' +
    'Supports + - * / ^ %, parentheses, common functions (sqrt, log, sin, round, min, max, mean…), pi, e and unit conversion. Use it instead of mental arithmetic.',
  input: z.object({
    expression: z.string().min(1).max(MAX_EXPRESSION_CHARS).describe('One arithmetic expression, e.g. "2 * (3 + 4) / 7"'),
  }),
  category: 'general',
  // Evaluation is synchronous and bounded by the input limits above, so this limit only bounds the
  // first call, which loads mathjs (1–3 s on a busy machine).
  timeoutMs: 10_000,
  async run({ expression }) {
    const { calculate } = await import('./calculate.js');
    return calculate(expression, MAX_EXPRESSION_CHARS);
  },
});

export default calculator;
