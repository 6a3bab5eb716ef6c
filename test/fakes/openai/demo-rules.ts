import type { ChatCompletionRequestBody, FakeReply } from './fake-openai.js';

/**
 * The few phrases `npm run fake-model` understands, so a newcomer can watch tools, an approval
 * and memory work with no model server. Pure: the request in, one scripted reply out. It is a
 * development aid, not a model: anything else gets the list of phrases back.
 */

type Msg = ChatCompletionRequestBody['messages'][number];

export const DEMO_HELP =
  'I am the fake model (a development aid, not a language model). Try: "what time is it?", ' +
  '"calculate 12*34", "remember that I like tea", "what do you remember about me?", ' +
  '"post a webhook" (asks for approval), or "send broken json" (a tool call with a trailing comma).';

function text(m: Msg | undefined): string {
  if (!m) return '';
  if (typeof m.content === 'string') return m.content;
  return (m.content ?? []).map((p) => ('text' in p ? p.text : '')).join('');
}

/** `sinkUrl`: where "post a webhook" sends (the fake server's own /sink). */
export function demoReply(req: ChatCompletionRequestBody, sinkUrl: string): FakeReply {
  const msgs = req.messages;
  const last = msgs[msgs.length - 1];
  if (last?.role === 'tool') {
    const result = text(last);
    if (/did not run/i.test(result)) return { text: 'Understood: that action did not run, and I will not retry it.' };
    return { text: `Done. The tool answered:\n${result.length > 600 ? `${result.slice(0, 600)}…` : result}` };
  }
  const lastUser = [...msgs].reverse().find((m) => m.role === 'user');
  const said = text(lastUser).toLowerCase();
  const remember = /remember that (.+)/i.exec(text(lastUser));
  if (remember) return { toolCalls: [{ name: 'remember_fact', arguments: { fact: remember[1]!.trim() } }] };
  if (/what do you (remember|know)|recall/.test(said)) return { toolCalls: [{ name: 'recall_facts', arguments: {} }] };
  if (/broken json/.test(said)) return { toolCalls: [{ name: 'calculator', arguments: '{"expression": "6*7",}' }] };
  if (/webhook/.test(said)) {
    return { toolCalls: [{ name: 'send_webhook', arguments: { url: sinkUrl, body: { text: 'hello from the fake model' } } }] };
  }
  const sum = /calculate\s+([-+*/^().\d\s]+)/.exec(said);
  if (sum) return { toolCalls: [{ name: 'calculator', arguments: { expression: sum[1]!.trim() } }] };
  if (/\btime\b/.test(said)) return { toolCalls: [{ name: 'get_current_time', arguments: {} }] };
  return { text: DEMO_HELP };
}
