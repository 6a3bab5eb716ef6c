import { createReadStream } from 'node:fs';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { joinPrompts } from './trace-prompts.js';

/**
 * `npm run trace -- <turn id>` or `npm run trace -- last`: prints one turn from the JSONL traces
 * readably (model calls with what was sent and answered, tool calls with arguments and results).
 */

type Event = Record<string, unknown> & { type: string; turnId: string; ts: string };

export async function readTurn(dir: string, turnId: string | 'last'): Promise<Event[]> {
  let files: string[];
  try {
    files = (await readdir(dir)).filter((f) => f.endsWith('.jsonl')).sort();
  } catch {
    return [];
  }
  // Newest file first: `last` and recent ids are found without reading old days.
  for (const f of files.reverse()) {
    const events: Event[] = [];
    const rl = createInterface({ input: createReadStream(path.join(dir, f), 'utf8'), crlfDelay: Infinity });
    for await (const line of rl) {
      try {
        events.push(JSON.parse(line) as Event);
      } catch {
        /* torn line */
      }
    }
    const id = turnId === 'last' ? [...events].reverse().find((e) => e.type === 'turn_start')?.turnId : turnId;
    if (!id) continue;
    const mine = events.filter((e) => e.turnId === id);
    if (mine.length) return joinPrompts(mine);
  }
  return [];
}

const clip = (s: string, n = 600) => (s.length > n ? `${s.slice(0, n)}… [${s.length - n} more chars]` : s);

export function formatTurn(events: Event[]): string {
  const out: string[] = [];
  for (const e of events) {
    const t = e.ts.slice(11, 23);
    switch (e.type) {
      case 'turn_start':
        out.push(`${t}  TURN ${e.turnId}  session ${String(e.sessionId)}  user ${String(e.userKey)}`, `          user: ${clip(String(e.text))}`);
        break;
      case 'model_call': {
        const usage = e.usage as { promptTokens?: number; completionTokens?: number } | undefined;
        out.push(`${t}  MODEL step ${String(e.step)} · ${String(e.model)} · ${String(e.latencyMs)} ms · ${usage?.promptTokens ?? '?'} in / ${usage?.completionTokens ?? '?'} out · tools: ${(e.tools as string[]).join(', ') || '-'}`);
        const msgs = (e.messages as Array<{ role: string; content?: string | null }>) ?? [];
        out.push(`          sent ${e.promptIncomplete ? `the last ${msgs.length} messages (the line with the earlier ones is missing)` : `${msgs.length} messages`}; last: ${msgs.length ? `${msgs[msgs.length - 1]!.role}: ${clip(String(msgs[msgs.length - 1]!.content ?? ''), 300)}` : '-'}`);
        if (e.error) out.push(`          ERROR ${String(e.error)}`);
        const r = e.response as { content?: string | null; toolCalls?: Array<{ name: string; arguments: string }>; parseErrors?: string[] } | null;
        if (r?.content) out.push(`          answer: ${clip(r.content)}`);
        for (const c of r?.toolCalls ?? []) out.push(`          calls ${c.name}(${clip(c.arguments, 300)})`);
        for (const p of r?.parseErrors ?? []) out.push(`          could not parse: ${p}`);
        break;
      }
      case 'tool_call':
        out.push(`${t}  TOOL ${String(e.name)} ${e.ok ? 'ok' : `FAILED (${String(e.errorKind ?? 'error')})`} · ${String(e.durationMs)} ms`, `          args: ${clip(JSON.stringify(e.args), 300)}`, `          result: ${clip(String(e.result))}`);
        break;
      case 'approval':
        out.push(`${t}  APPROVAL ${String(e.approvalId)} ${String(e.tool)} → ${String(e.status)}${e.by ? ` by ${String(e.by)}` : ''}`);
        break;
      case 'turn_end':
        out.push(`${t}  END ${String(e.outcome)} · ${String(e.steps)} steps · ${String(e.durationMs)} ms · ${String(e.promptTokens)} in / ${String(e.completionTokens)} out`);
        break;
      default:
        out.push(`${t}  ${e.type}`);
    }
  }
  return out.join('\n');
}

async function main(): Promise<void> {
  const arg = process.argv[2];
  if (!arg || arg === '--help') {
    process.stderr.write('usage: npm run trace -- <turn id> | last   (reads HERMES_DATA_DIR/traces, default ./data/traces)\n');
    process.exit(arg ? 0 : 2);
  }
  const dir = path.join(path.resolve(process.env.HERMES_DATA_DIR?.trim() || './data'), 'traces');
  const events = await readTurn(dir, arg);
  if (events.length === 0) {
    process.stderr.write(`no trace found for ${arg} in ${dir}\n`);
    process.exit(1);
  }
  process.stdout.write(`${formatTurn(events)}\n`);
}

if (process.argv[1] && import.meta.url === new URL(`file://${path.resolve(process.argv[1])}`).href) {
  void main();
}
