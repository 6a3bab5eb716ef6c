import { createRequire } from 'node:module';
import type Cronstrue from 'cronstrue';

// Loaded when a schedule is first described in words, not at start.
const cronstrue = (): typeof Cronstrue => createRequire(import.meta.url)('cronstrue') as typeof Cronstrue;

/**
 * A cron expression in English words ("At 09:00 AM, Monday through Friday" style, 24-hour
 * clock). cronstrue owns the wording; an expression it cannot word (it is valid for croner, or
 * we would not be here) is shown as itself rather than failing the prompt.
 */
export function describeCron(expression: string): string {
  try {
    return cronstrue().toString(expression, { use24HourTimeFormat: true, verbose: false });
  } catch {
    return `cron ${expression}`;
  }
}
