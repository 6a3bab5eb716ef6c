import { all, create, type FactoryFunctionMap, type MathNode } from 'mathjs';

/**
 * A calculator the model cannot turn into anything else. mathjs parses the expression into a
 * tree, and only plain arithmetic survives: no assignments or function definitions, no property
 * access, no ranges or matrix builders that could allocate gigabytes, and only functions from an
 * allow-list. The instance's own import/createUnit/evaluate/parse are replaced with throwing
 * stubs as a second line of defence. Never eval, never Function.
 *
 * mathjs is the biggest library the bot has (~85 MB of resident memory once loaded), so this file is
 * imported by the calculator tool on its first call, never at start-up.
 */

const MAX_ARRAY_ITEMS = 1000;
/** Above this, factorial/combinations/permutations loop for a long time on the event loop. */
const MAX_COMBINATORIC_ARG = 10_000;

// `all` is always defined at run time; its typing allows undefined only for tree-shaken builds.
const math = create(all as FactoryFunctionMap, { number: 'number', precision: 64 });
const parse = math.parse.bind(math);

function checkBounds(value: unknown, fn: string): void {
  if (typeof value === 'number' && Math.abs(value) > MAX_COMBINATORIC_ARG) {
    throw new Error(`${fn} is limited to arguments up to ${MAX_COMBINATORIC_ARG}`);
  }
}

// mathjs computes these with loops over their argument; bound them so one call cannot stall the bot.
const factorial = math.factorial;
const combinations = math.combinations;
const permutations = math.permutations;
math.import(
  {
    factorial: (n: number) => (checkBounds(n, 'factorial'), factorial(n)),
    combinations: (n: number, k: number) => (checkBounds(n, 'combinations'), combinations(n, k)),
    permutations: (n: number, k?: number) => (checkBounds(n, 'permutations'), k === undefined ? permutations(n) : permutations(n, k)),
  },
  { override: true },
);

const disabled = (name: string) => () => {
  throw new Error(`${name} is not available in the calculator`);
};
math.import(
  Object.fromEntries(
    ['import', 'createUnit', 'evaluate', 'parse', 'compile', 'simplify', 'derivative', 'resolve', 'reviver', 'rationalize', 'chain', 'help'].map(
      (n) => [n, disabled(n)],
    ),
  ),
  { override: true },
);

const ALLOWED_FUNCTIONS = new Set([
  'abs', 'sqrt', 'cbrt', 'nthRoot', 'exp', 'expm1', 'log', 'log10', 'log2', 'log1p', 'pow', 'square', 'cube',
  'round', 'floor', 'ceil', 'fix', 'sign', 'mod', 'gcd', 'lcm', 'hypot',
  'sin', 'cos', 'tan', 'asin', 'acos', 'atan', 'atan2', 'sinh', 'cosh', 'tanh', 'asinh', 'acosh', 'atanh',
  'sec', 'csc', 'cot',
  'factorial', 'gamma', 'combinations', 'permutations',
  'min', 'max', 'sum', 'prod', 'mean', 'median', 'mode', 'std', 'variance',
  're', 'im', 'conj', 'arg', 'complex',
  'unit', 'to', 'number',
]);

const FORBIDDEN_NODES: Record<string, string> = {
  AssignmentNode: 'assignments (=) are',
  FunctionAssignmentNode: 'function definitions are',
  BlockNode: 'several expressions (separated by ; or new lines) are',
  AccessorNode: 'property or index access is',
  IndexNode: 'property or index access is',
  ObjectNode: 'objects are',
  RangeNode: 'ranges like 1:10 are',
};

function checkTree(root: MathNode): void {
  root.traverse((node) => {
    const what = FORBIDDEN_NODES[node.type];
    if (what) throw new Error(`${what} not supported; write a single arithmetic expression`);
    if (node.type === 'FunctionNode') {
      const fn = (node as MathNode & { fn: MathNode & { name?: string } }).fn;
      const name = fn.type === 'SymbolNode' ? (fn.name ?? '') : '';
      if (!ALLOWED_FUNCTIONS.has(name)) throw new Error(`the function ${name ? `"${name}"` : 'call'} is not supported`);
    }
    if (node.type === 'ArrayNode' && (node as MathNode & { items: unknown[] }).items.length > MAX_ARRAY_ITEMS) {
      throw new Error(`lists are limited to ${MAX_ARRAY_ITEMS} items`);
    }
  });
}

/** Spellings models copy from prose that mathjs reads differently or not at all. */
function normalise(expression: string): string {
  return expression.replace(/[×✕]/g, '*').replace(/÷/g, '/').replace(/−/g, '-').replace(/\*\*/g, '^').trim();
}

/**
 * Evaluates one arithmetic expression; throws an Error whose message is written for the model.
 * `maxChars` is the tool's input limit, checked again after normalising (passed in, not imported,
 * so calculator.ts can load this file, and mathjs with it, on first use).
 */
export function calculate(expression: string, maxChars: number): string {
  const text = normalise(expression);
  if (text === '') throw new Error('the expression is empty; send something like "2 * (3 + 4)"');
  if (text.length > maxChars) throw new Error(`the expression is longer than ${maxChars} characters; split it into smaller steps`);
  let result: unknown;
  try {
    const tree = parse(text);
    checkTree(tree);
    result = tree.compile().evaluate({});
  } catch (err) {
    throw new Error(`could not evaluate ${JSON.stringify(expression)}: ${(err as Error).message}`);
  }
  if (typeof result === 'function' || result === undefined) {
    throw new Error(`could not evaluate ${JSON.stringify(expression)}: it does not produce a value (a function needs arguments, e.g. sqrt(2))`);
  }
  if (typeof result === 'number' && Number.isNaN(result)) return 'NaN (not a number: the result is undefined, like 0/0, or too large to compute)';
  // 14 significant digits hide binary noise (0.1 + 0.2 → 0.3); plain notation up to 1e15 reads naturally.
  return math.format(result as Parameters<typeof math.format>[0], { precision: 14, lowerExp: -9, upperExp: 15 });
}

