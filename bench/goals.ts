import type { BenchResult, Goal } from './bench-result.js';

export type { Goal } from './bench-result.js';


const status = (ok: boolean): Goal['status'] => (ok ? 'met' : 'missed');

export function evaluateGoals(r: Pick<BenchResult, 'overhead' | 'throughput' | 'tokens' | 'store' | 'dashboard' | 'soak' | 'streaming'>): Goal[] {
  const goals: Goal[] = [];

  const rows = r.overhead?.rows ?? [];
  const hermes = rows.find((x) => x.name === 'hermes-agent (gateway)');
  const peers = rows.filter((x) => x.kind === 'peer');
  const fastest = [...peers].sort((a, b) => a.overheadWallMsPerStep - b.overheadWallMsPerStep)[0];
  const fastestCpu = [...peers].sort((a, b) => a.overheadCpuMsPerStep - b.overheadCpuMsPerStep)[0];
  const overheadGoal = 'Overhead per step at most the fastest peer’s (standing goal: half of it)';
  goals.push(
    hermes && fastest && fastestCpu
      ? {
          goal: overheadGoal,
          status: status(hermes.overheadWallMsPerStep <= fastest.overheadWallMsPerStep && hermes.overheadCpuMsPerStep <= fastestCpu.overheadCpuMsPerStep),
          detail: `hermes ${hermes.overheadWallMsPerStep} ms wall / ${hermes.overheadCpuMsPerStep} ms CPU per step; fastest peer ${fastest.name} ${fastest.overheadWallMsPerStep} ms wall, ${fastestCpu.name} ${fastestCpu.overheadCpuMsPerStep} ms CPU; half of it: ${round(fastest.overheadWallMsPerStep / 2)} ms wall, ${round(fastestCpu.overheadCpuMsPerStep / 2)} ms CPU (${hermes.overheadWallMsPerStep <= fastest.overheadWallMsPerStep / 2 && hermes.overheadCpuMsPerStep <= fastestCpu.overheadCpuMsPerStep / 2 ? 'met' : 'not met'})`,
        }
      : { goal: overheadGoal, status: 'not measured', detail: hermes ? 'no peer ran (install them with `npm --prefix bench install`)' : 'overhead section did not run' },
  );

  const at500 = r.throughput?.rows.find((x) => x.sessions === 500);
  const tp = (goal: string, ok: (x: NonNullable<typeof at500>) => boolean, detail: (x: NonNullable<typeof at500>) => string): Goal =>
    at500 ? { goal, status: status(ok(at500)), detail: detail(at500) } : { goal, status: 'not measured', detail: '500-session level did not run (full run only)' };
  goals.push(
    tp('500 sessions: throughput ≥ 50 % of the physical limit', (x) => x.percentOfLimit >= 50, (x) => `${x.repliesPerSecond} replies/s of ${x.physicalLimit} possible (${x.percentOfLimit} %)`),
    tp('500 sessions: Slack ack p99 under 100 ms', (x) => x.ackP99Ms < 100, (x) => `ack p99 ${x.ackP99Ms} ms`),
    tp('500 sessions: event-loop lag p99 under 50 ms', (x) => x.eventLoopLagP99Ms < 50, (x) => `lag p99 ${x.eventLoopLagP99Ms} ms`),
    tp('500 sessions: bot CPU per reply ≤ 1.5 ms', (x) => x.botCpuMsPerReply <= 1.5, (x) => `${x.botCpuMsPerReply} ms CPU per reply`),
    tp('500 sessions: bot RSS ≤ 300 MB', (x) => x.peakRssMb <= 300, (x) => `peak RSS ${x.peakRssMb} MB`),
  );

  const t = r.tokens;
  const hermesTokens = t?.rows[0];
  if (t && hermesTokens) {
    goals.push({
      goal: 'Prompt tokens never above HERMES_CONTEXT_TOKENS',
      status: status(hermesTokens.max <= t.sizes.contextTokens),
      detail: `max ${hermesTokens.max} of ${t.sizes.contextTokens} over ${hermesTokens.requests} requests`,
    });
    goals.push({
      goal: `Turn ${t.sizes.turns}: ≥ 5× fewer tokens than full history, early fact recalled`,
      status: t.sizes.turns < 200 ? 'not measured' : status(t.reductionAtLastTurn >= 5 && t.factRecalled),
      detail: `${t.reductionAtLastTurn}× fewer (${hermesTokens.atLastTurn} vs ${t.rows[1]?.atLastTurn}); fact ${t.factRecalled ? 'recalled' : 'NOT recalled'} (in the prompt via ${t.factWhere})${t.sizes.turns < 200 ? `; only ${t.sizes.turns} turns in this run` : ''}`,
    });
  } else {
    goals.push({ goal: 'Prompt tokens never above HERMES_CONTEXT_TOKENS', status: 'not measured', detail: 'tokens section did not run' });
    goals.push({ goal: 'Turn 200: ≥ 5× fewer tokens than full history, early fact recalled', status: 'not measured', detail: 'tokens section did not run' });
  }
  goals.push(...footprintGoals(r.store));
  const d = r.dashboard;
  const listGoal = 'Dashboard: a list of 10,000 turns opens in under 1 s';
  goals.push(
    !d
      ? { goal: listGoal, status: 'not measured', detail: 'dashboard section did not run' }
      : {
          goal: listGoal,
          status: d.sizes.turns < 10_000 ? 'not measured' : status(d.firstOpenMs < 1000 && d.warmOpenP95Ms < 1000),
          detail: `first open ${d.firstOpenMs} ms, warm p95 ${d.warmOpenP95Ms} ms over ${d.sizes.turns} turns${d.sizes.turns < 10_000 ? ' (fewer than 10,000 in this run)' : ''}`,
        },
  );
  const indexGoal = 'Dashboard: the index of 10,000 turns holds ≤ 50 MB of heap, first open ≤ 300 ms';
  goals.push(
    !d
      ? { goal: indexGoal, status: 'not measured', detail: 'dashboard section did not run' }
      : {
          goal: indexGoal,
          status: d.sizes.turns < 10_000 ? 'not measured' : status(d.indexHeapMb <= 50 && d.firstOpenMs <= 300),
          detail: `index heap ${d.indexHeapMb} MB, cold first open ${d.firstOpenMs} ms (${d.firstOpenCpuMs} ms of CPU) over ${d.sizes.turns} turns${d.sizes.turns < 10_000 ? ' (fewer than 10,000 in this run)' : ''}`,
        },
  );
  goals.push(soakGoal(r.soak));
  const st = r.streaming;
  const firstTextGoal = 'Streaming: first visible text under 50 ms of our own (model’s first token → Slack call)';
  goals.push(
    st
      ? { goal: firstTextGoal, status: status(st.firstVisibleP50Ms < 50), detail: `p50 ${st.firstVisibleP50Ms} ms, p95 ${st.firstVisibleP95Ms} ms, max ${st.firstVisibleMaxMs} ms over ${st.sizes.turns} answers; ${st.extraCallsPerAnswer} extra Slack calls per answer (${st.callsPerAnswerStreamed} streamed vs ${st.callsPerAnswerPosted} posted whole)` }
      : { goal: firstTextGoal, status: 'not measured', detail: 'streaming section did not run' },
  );
  return goals;
}

/**
 * Goal 4: no growth over a 20,000-turn soak. "No growth" = the second half's slope is at most
 * 0.1 MB per 1,000 turns for the JS heap after a full GC and 0.25 MB for RSS (5 MB over 20,000
 * turns: allocator noise, not a leak).
 */
function soakGoal(s: BenchResult['soak']): Goal {
  const goal = 'Memory: no growth over a 20,000-turn soak';
  const h = s?.rows.find((x) => x.name === 'hermes-agent (gateway)');
  if (!s || !h) return { goal, status: 'not measured', detail: 'soak section did not run' };
  const peers = s.rows.filter((x) => x !== h).map((x) => `${x.name} ${x.rssMbPer1kTurns} / ${x.heapMbPer1kTurns}`).join('; ');
  return {
    goal,
    status: h.turns < 20_000 ? 'not measured' : status(h.heapMbPer1kTurns <= 0.1 && h.rssMbPer1kTurns <= 0.25),
    detail: `hermes over ${h.turns} turns: RSS ${h.rssStartMb} → ${h.rssEndMb} MB, ${h.rssMbPer1kTurns} MB RSS / ${h.heapMbPer1kTurns} MB heap per 1,000 turns${peers ? `; peers (RSS / heap per 1,000 turns, ${s.sizes.peerTurns} turns): ${peers}` : ''}`,
  };
}

/** Goal 3: idle RSS of what `npm start` runs (npm aside) and cold start to the ready line. */
function footprintGoals(s: BenchResult['store']): Goal[] {
  const start = s?.coldStart;
  const rssGoal = 'Idle RSS of what `npm start` runs ≤ 150 MB';
  const readyGoal = 'Cold start to "msg":"ready" ≤ 1 s';
  if (!start) return [rssGoal, readyGoal].map((goal) => ({ goal, status: 'not measured' as const, detail: 'store section did not run' }));
  const rss = [start.idleRssMbMedian, s.terminalChat?.idleRssMb].filter((x): x is number => x !== undefined);
  return [
    rss.length
      ? { goal: rssGoal, status: status(Math.max(...rss) <= 150), detail: `Slack HTTP mode ${start.idleRssMbMedian ?? '—'} MB (median of ${start.idleRssMb.length}), terminal chat ${s.terminalChat?.idleRssMb ?? '—'} MB` }
      : { goal: rssGoal, status: 'not measured', detail: 'no /proc on this system' },
    { goal: readyGoal, status: status(start.readyMsMedian <= 1000), detail: `${start.readyMsMedian} ms (median of ${start.runs}, Slack HTTP mode)` },
  ];
}

function round(n: number): number {
  return Math.round(n * 1000) / 1000;
}
