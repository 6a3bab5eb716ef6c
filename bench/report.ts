import type { BenchResult } from './bench-result.js';

/** The Markdown the README's performance section shows: one table per section, then the goals. */
export function renderMarkdown(r: BenchResult): string {
  const m = r.machine;
  const out: string[] = [];
  out.push(`### Benchmark results (${r.mode} run, ${r.startedAt.slice(0, 16).replace('T', ' ')} UTC, ${r.durationS} s)`);
  out.push('');
  out.push(`Machine: ${m.cpuModel}, ${m.cores} cores, ${m.memoryGb} GB RAM, Node ${m.node}, ${m.platform}; load average at start ${m.loadAverageAtStart.join(' / ')}.`);
  const peers = Object.entries(r.versions.peers).map(([k, v]) => `${k} ${v}`).join(', ');
  out.push(`Versions: hermes-agent ${r.versions.hermes} (openai SDK ${r.versions.hermesOpenaiSdk ?? '?'})${peers ? `; peers: ${peers}` : '; peers not installed'}.`);
  out.push('');

  if (r.overhead) {
    const o = r.overhead;
    out.push(`#### 1. Core overhead per step (5-step tool turn, fake model at 0 ms; ${o.sizes.rounds} interleaved rounds × ${o.sizes.turnsPerRound} turns after ${o.sizes.warmupTurns} warm-up turns each)`);
    out.push('');
    out.push('| runner | wall ms/step | CPU ms/step | overhead wall ms/step | overhead CPU ms/step | heap KB allocated/turn | overhead ÷ hermes |');
    out.push('|---|---:|---:|---:|---:|---:|---:|');
    for (const x of o.rows) {
      out.push(`| ${x.name} | ${x.wallMsPerStep} | ${x.cpuMsPerStep} | ${x.kind === 'baseline' ? '—' : x.overheadWallMsPerStep} | ${x.kind === 'baseline' ? '—' : x.overheadCpuMsPerStep} | ${x.heapKbPerTurn} | ${x.ratioToHermes ?? '—'} |`);
    }
    out.push('');
    out.push(`Overhead = runner's time per model step minus the baseline's (${o.baselineNote}). CPU is the whole process (process.cpuUsage). Ratio > 1 means more overhead than hermes-agent.`);
    out.push('');
  }

  if (r.throughput) {
    const t = r.throughput;
    out.push(`#### 2. Slack gateway throughput (HTTP mode, fake model latency ${t.modelLatencyMs} ms, ${t.maxConcurrentTurns === undefined ? 'shipped settings' : `HERMES_MAX_CONCURRENT_TURNS=${t.maxConcurrentTurns}`})`);
    out.push('');
    out.push('| sessions | replies | replies/s | physical limit/s | % of limit | reply above model p50 / p99 ms | ack p50 / p99 ms | event-loop lag p99 ms | peak RSS MB | failures |');
    out.push('|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
    for (const x of t.rows) {
      out.push(`| ${x.sessions} | ${x.replies} | ${x.repliesPerSecond} | ${x.physicalLimit} | ${x.percentOfLimit} | ${x.replyAboveModelP50Ms} / ${x.replyAboveModelP99Ms} | ${x.ackP50Ms} / ${x.ackP99Ms} | ${x.eventLoopLagP99Ms} | ${x.peakRssMb} | ${x.failures} |`);
    }
    out.push('');
    out.push('Where the time goes (bot process):');
    out.push('');
    out.push('| sessions | bot CPU ms/reply | bot CPU % of one core | store calls/reply | mean store call ms (caller side) | ack p99 inside the bot ms | load-generator lag p99 ms |');
    out.push('|---:|---:|---:|---:|---:|---:|---:|');
    for (const x of t.rows) out.push(`| ${x.sessions} | ${x.botCpuMsPerReply} | ${x.botCpuPercent} | ${x.storeOpsPerReply} | ${x.storeWaitMsPerOp} | ${x.serverAckP99Ms ?? '—'} | ${x.generatorLagP99Ms} |`);
    out.push('');
    out.push('Each session is its own channel and posts its next mention as soon as the previous reply arrives (closed loop); a reply is the bot’s chat.postMessage as the fake Slack records it. The bot runs in its own process; lag and RSS are that process’s. *Ack* is timed by the load generator (what Slack would see); *ack inside the bot* from the request’s arrival in the bot’s HTTP server to its response, so the difference is time before the bot had the request (connection set-up, the generator’s own loop).');
    out.push('');
  }

  if (r.tokens) {
    const k = r.tokens;
    out.push(`#### 3. Prompt tokens over a ${k.sizes.turns}-turn conversation with tool output (pages 3–8 KB, search results ~1.5 KB), o200k tokenizer`);
    out.push('');
    out.push(`| who | turns measured | requests | p50 tokens/request | max | at turn ${k.sizes.turns} | ÷ full history | note |`);
    out.push('|---|---:|---:|---:|---:|---:|---:|---|');
    for (const x of k.rows) {
      const last = x.extrapolatedAtLongRun !== undefined ? `≈ ${x.extrapolatedAtLongRun} (extrapolated)` : String(x.atLastTurn);
      out.push(`| ${x.name} | ${x.turns} | ${x.requests} | ${x.p50} | ${x.max} | ${last} | ${x.ratioToFullHistory ?? '—'} | ${x.note} |`);
    }
    out.push('');
    out.push(`hermes-agent also made ${k.summaryCalls} running-summary calls (${k.summaryPromptTokens} prompt tokens in total). Whole conversation: hermes ${k.totalPromptTokens.hermes + k.summaryPromptTokens} prompt tokens including summaries, full history ${k.totalPromptTokens.fullHistory}. At turn ${k.sizes.turns}: ${k.reductionAtLastTurn}× fewer than full history; the fact from turn 1 was ${k.factInLastPrompt ? `in the prompt (${k.factWhere})` : 'not in the prompt'} and ${k.factRecalled ? 'recalled' : 'not recalled'}.`);
    out.push('');
  }

  if (r.store) {
    const s = r.store;
    out.push('#### 4. Store and start');
    out.push('');
    out.push('| measure | value |');
    out.push('|---|---:|');
    out.push(`| facts written/s (SQLite, ${s.facts} facts, users in parallel) | ${s.factWritesPerSecond} |`);
    out.push(`| facts read/s (recall with a query) | ${s.factReadsPerSecond} |`);
    out.push(`| raw store writes/s (one at a time) | ${s.rawStoreWritesPerSecond} |`);
    if (s.coldStart) {
      out.push(`| cold start: \`npm start\` to \`"msg":"ready"\` (median of ${s.coldStart.runs}) | ${s.coldStart.readyMsMedian} ms |`);
      out.push(`| cold start: \`npm start\` to GET /healthz = 200 | ${s.coldStart.healthzMsMedian} ms |`);
      if (s.coldStart.idleRssMbMedian !== undefined) {
        out.push(`| idle RSS of what \`npm start\` runs, npm aside (Slack HTTP mode, median; ${s.coldStart.processes?.join(' + ') ?? ''}) | ${s.coldStart.idleRssMbMedian} MB |`);
      }
    }
    if (s.terminalChat?.idleRssMb !== undefined) {
      out.push(`| idle RSS of what \`npm start\` runs, npm aside (terminal chat; ${s.terminalChat.processes?.join(' + ') ?? ''}) | ${s.terminalChat.idleRssMb} MB |`);
    }
    out.push('');
  }

  if (r.instances) {
    const x = r.instances;
    out.push(`#### 5. Several instances: Slack throughput per store setup (as section 2; PostgreSQL: ${x.postgres})`);
    out.push('');
    out.push('| setup | sessions | replies/s | % of limit | ack p50 / p99 ms | reply above model p50 / p99 ms | store calls/reply | mean store call ms | bot CPU ms/reply (all instances) | failures |');
    out.push('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
    for (const t of x.setups) {
      for (const row of t.rows) {
        out.push(`| ${t.setup ?? ''} | ${row.sessions} | ${row.repliesPerSecond} | ${row.percentOfLimit} | ${row.ackP50Ms} / ${row.ackP99Ms} | ${row.replyAboveModelP50Ms} / ${row.replyAboveModelP99Ms} | ${row.storeOpsPerReply} | ${row.storeWaitMsPerOp} | ${row.botCpuMsPerReply} | ${row.failures} |`);
      }
    }
    out.push('');
    out.push('Two instances get each event round-robin (the two deliveries of one mention usually reach different instances), so dedupe, the shared inbox and the session leases are all on the path. PostgreSQL is not cached in-process, but for channel notes (kept while the instances tell each other of changes).');
    out.push('');
  }

  if (r.sandbox && r.sandbox.rows.length) {
    const b = r.sandbox;
    out.push(`#### 6. run_code start-up overhead (spawn to first line of output; ${b.sizes.runs} runs each, interleaved${b.runAsRoot ? '; bot as root, so bwrap runs as uid 65534' : ''})`);
    out.push('');
    out.push('| language | how | runs | p50 ms | p99 ms |');
    out.push('|---|---|---:|---:|---:|');
    for (const x of b.rows) out.push(`| ${x.language} | ${x.how} | ${x.runs} | ${x.p50Ms} | ${x.p99Ms} |`);
    out.push('');
    out.push('"sandboxed" is bwrap with every limit of a real call, from spawn to the first stdout byte; "plain spawn" is the same interpreter started directly; "whole run_code call" adds the workspace snapshots before and after and the hand-over to the sandbox user.');
    out.push('');
  }

  if (r.dashboard) {
    const x = r.dashboard;
    out.push(`#### 7. Dashboard turn list (${x.sizes.turns} turns, ${x.traceMb} MB of traces in 30 day files; over HTTP on 127.0.0.1 with a bearer token)`);
    out.push('');
    out.push('| open | ms |');
    out.push('|---|---:|');
    out.push(`| first open in a fresh process (cold: index built from every file) | ${x.firstOpenMs} (${x.firstOpenCpuMs} of CPU) |`);
    out.push(`| warm open, median / p95 of ${x.sizes.opens} | ${x.warmOpenMedianMs} / ${x.warmOpenP95Ms} |`);
    out.push(`| filtered open (platform + text + outcome), median | ${x.filteredOpenMedianMs} |`);
    out.push(`| open right after 100 more turns were appended | ${x.afterAppendOpenMs} |`);
    out.push(`| one turn's page, median | ${x.turnPageMedianMs} |`);
    out.push('');
    out.push(`Heap the index holds: ${x.indexHeapMb} MB for ${x.sizes.turns} turns (the dashboard's own process after a full GC: ${x.heapMbBeforeIndex} MB before the first open, ${x.heapMbAfterIndex} MB after it, ${x.heapMbAfterRun} MB after every open above). Warm opens read no trace bytes: one stat per day file.`);
    out.push('');
  }

  if (r.soak && r.soak.rows.length) {
    const k = r.soak;
    out.push(`#### 8. Memory over many turns (one-step turns, fake model at 0 ms, each runner in its own process; hermes-agent ${k.sizes.hermesTurns} turns, peers ${k.sizes.peerTurns}; sampled every ${k.sizes.sampleEvery} turns after a full GC)`);
    out.push('');
    out.push('| runner | turns | seconds | RSS start → end MB | peak RSS MB | RSS MB per 1,000 turns | heap MB per 1,000 turns |');
    out.push('|---|---:|---:|---:|---:|---:|---:|');
    for (const x of k.rows) out.push(`| ${x.name} | ${x.turns} | ${x.seconds} | ${x.rssStartMb} → ${x.rssEndMb} | ${x.rssPeakMb} | ${x.rssMbPer1kTurns} | ${x.heapMbPer1kTurns} |`);
    out.push('');
    out.push('Per 1,000 turns: least-squares slope over the second half of each run (the first half lets bounded caches fill). hermes-agent runs its full path (gateway, SQLite, traces) with a new conversation every turn; peers run their fresh-conversation turn.');
    out.push('');
  }

  if (r.streaming) {
    const x = r.streaming;
    out.push(`#### 9. Answers shown as they are written (Slack, real adapter against the fake Slack; the model writes ${x.sizes.chunks} pieces ${x.sizes.chunkDelayMs} ms apart; ${x.sizes.turns} answers)`);
    out.push('');
    out.push('| measure | value |');
    out.push('|---|---:|');
    out.push(`| first visible text p50 / p95 / max ms (model’s first text written → Slack call showing it) | ${x.firstVisibleP50Ms} / ${x.firstVisibleP95Ms} / ${x.firstVisibleMaxMs} |`);
    out.push(`| Slack calls per answer, streamed | ${x.callsPerAnswerStreamed} |`);
    out.push(`| Slack calls per answer, posted whole (HERMES_STREAMING=off) | ${x.callsPerAnswerPosted} |`);
    out.push(`| extra calls per answer for streaming | ${x.extraCallsPerAnswer} |`);
    out.push('');
    out.push(`Calls of a streamed answer: ${Object.entries(x.streamedCallMix).map(([k, v]) => `${k} ${v}`).join(', ')}. The time is all ours: the openai SDK parsing the stream, the turn's sink, the adapter and one HTTP call on 127.0.0.1.`);
    out.push('');
  }

  out.push('#### Goals');
  out.push('');
  out.push('| goal | status | numbers |');
  out.push('|---|---|---|');
  for (const g of r.goals) out.push(`| ${g.goal} | **${g.status}** | ${g.detail} |`);
  out.push('');
  if (r.notes.length || r.errors.length) {
    for (const n of r.notes) out.push(`- Note: ${n}`);
    for (const e of r.errors) out.push(`- Error: ${e.replace(/\n/g, ' ')}`);
    out.push('');
  }
  return out.join('\n');
}
