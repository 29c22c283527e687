// Labs: the optimizer at 50,000 combinations per calculator (target: under 50 ms p50
// each, in-process and through /api), and the competition recompute for 10,000 participants.
//
//   optimizer in-process: the sweep (functions/_shared/optimizer) against a same-run baseline,
//     the straightforward sweep that builds an object per grid point and sorts them all;
//   optimizer through /api: POST /api/labs/optimize (top 10) against the same route with a
//     one-point range (HTTP, validation and JSON with no sweep);
//   recompute: private.labs_recompute_competitions over 10,000 participants and ~45,000 events
//     on curated templates (sql/bench/labs_fixture.sql), first run (scores change) and steady
//     state (none change), against the bare aggregate it is built on (the same scores, selected,
//     not written).
import postgres from 'postgres'
import { CALCULATORS } from '../../functions/_shared/optimizer/calculators.ts'
import { optimize, resolveRanges } from '../../functions/_shared/optimizer/sweep.ts'
import { ROOT } from '../lib/proc.ts'
import type { Stack } from '../lib/stack.ts'
import { type BenchModule, knob, timed } from './_module.ts'

const fmt = (t: { p50: number; p99: number }) => `p50 ${t.p50.toFixed(2)} p99 ${t.p99.toFixed(2)}`

/** The baseline: every grid point as an object, all sorted, the top N sliced off. */
function naiveSweep(calculator: string, topN: number) {
  const calc = CALCULATORS[calculator]
  const ranges = resolveRanges(calc)
  const names = Object.keys(ranges)
  const axes = names.map((k) => {
    const r = ranges[k]
    return Array.from({ length: r.steps }, (_, i) => {
      if (r.steps === 1) return r.min
      if (r.scale === 'log') return 10 ** (Math.log10(r.min) + (Math.log10(r.max) - Math.log10(r.min)) * i / (r.steps - 1))
      return r.min + (r.max - r.min) * i / (r.steps - 1)
    })
  })
  let points: number[][] = [[]]
  for (const axis of axes) points = points.flatMap((p) => axis.map((v) => [...p, v]))
  const scored = points.map((p) => ({ inputs: p, value: calc.evaluate(Float64Array.from(p)) })).filter((s) => !isNaN(s.value))
  scored.sort((a, b) => (calc.goal === 'maximize' ? b.value - a.value : a.value - b.value))
  return scored.slice(0, topN)
}

async function benchOptimizer(stack: Stack, runs: number) {
  console.log(`\nLabs optimizer: 50,000 combinations per calculator, top 10 (${runs} runs each; ms)`)
  console.log('  calculator     in-process            naive baseline          ratio   /api                  /api 1-point baseline')
  for (const name of Object.keys(CALCULATORS)) {
    const fast = await timed(runs, async () => optimize({ calculator: name, top_n: 10 }))
    const naive = await timed(Math.max(3, Math.floor(runs / 10)), async () => naiveSweep(name, 10))
    const sameBest = Math.abs(naive.last[0].value - (fast.last.results[0][fast.last.objective] as number)) <= 1e-9 * Math.abs(naive.last[0].value)
    const http = await timed(runs, async () => {
      const res = await fetch(`${stack.apiUrl}/functions/v1/api/labs/optimize`, {
        method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ calculator: name, top_n: 10 }),
      })
      return await res.json()
    })
    const one = Object.fromEntries(Object.entries(CALCULATORS[name].parameters).map(([k, r]) => [k, { min: r.max, max: r.max, steps: 1 }]))
    const baseline = await timed(runs, async () => {
      const res = await fetch(`${stack.apiUrl}/functions/v1/api/labs/optimize`, {
        method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ calculator: name, top_n: 10, ranges: one }),
      })
      return await res.json()
    })
    if (http.last.combinations !== 50_000 || fast.last.combinations !== 50_000) throw new Error(`${name}: not 50,000 combinations`)
    console.log(`  ${name.padEnd(14)} ${fmt(fast).padEnd(21)} ${fmt(naive).padEnd(23)} ${(naive.p50 / fast.p50).toFixed(1).padStart(5)}x ` +
      `${fmt(http).padEnd(21)} ${fmt(baseline)}${sameBest ? '' : '  (BEST DIFFERS FROM BASELINE)'}`)
  }
}

async function benchRecompute(stack: Stack, runs: number) {
  const db = postgres(stack.dbUrl, { max: 1, onnotice: () => {} })
  try {
    const t0 = performance.now()
    await db.file(`${ROOT}/sql/bench/labs_fixture.sql`)
    const [{ participants, events }] = await db`
      select (select count(*) from public.labs_competition_participants where competition_id = 'b1300000-0000-4000-8000-00000000c0de')::int as participants,
             (select count(*) from public.labs_activity_events)::int as events`
    console.log(`\nLabs competition recompute: ${participants.toLocaleString()} participants, ${events.toLocaleString()} activity events ` +
      `(loaded in ${((performance.now() - t0) / 1000).toFixed(1)}s; ${runs} runs; ms)`)
    await db`update public.labs_competition_participants set score = 0 where competition_id = 'b1300000-0000-4000-8000-00000000c0de'`
    const first = await timed(1, async () => await db`select * from public.labs_recompute_competitions()`)
    const steady = await timed(runs, async () => await db`select * from public.labs_recompute_competitions()`)
    const aggregate = await timed(runs, async () => await db`
      select p.user_id, coalesce(sum(coalesce((c.scoring_config ->> e.kind)::integer, 0)), 0)::integer as score
        from public.labs_competition_participants p
        join public.labs_competitions c on c.id = p.competition_id and c.is_active and c.entry_open
        left join public.labs_activity_events e
          on e.user_id = p.user_id and e.created_at >= c.starts_at and (c.ends_at is null or e.created_at < c.ends_at)
       group by p.competition_id, p.user_id`)
    const [{ total, retired, scoring, best, uncurated }] = await db`
      select (select sum(score) from public.labs_competition_participants where competition_id = 'b1300000-0000-4000-8000-00000000c0de')::bigint as total,
             (select sum(score) from public.labs_competition_participants where competition_id = 'b1300000-0000-4000-8000-00000000dead')::bigint as retired,
             (select count(*) from public.labs_competition_participants where competition_id = 'b1300000-0000-4000-8000-00000000c0de' and score > 0)::int as scoring,
             (select max(score) from public.labs_competition_participants where competition_id = 'b1300000-0000-4000-8000-00000000c0de')::int as best,
             (select count(*) from public.labs_activity_events e
               where not exists (select 1 from public.labs_experiments t where t.id = e.template_id and t.predicted_values is not null))::int as uncurated`
    const expected = aggregate.last.reduce((s, r) => s + r.score, 0)
    console.log(`  first run (every score changes)  ${first.p50.toFixed(2)}`)
    console.log(`  steady state (no score changes)  ${fmt(steady)}`)
    console.log(`  baseline: the scores selected    ${fmt(aggregate)}  ratio steady/baseline ${(steady.p50 / aggregate.p50).toFixed(2)}`)
    console.log(`  check: scores total ${total} = aggregate ${expected}: ${Number(total) === expected}; retired competition untouched: ${Number(retired) === 0}`)
    console.log(`  scores: ${scoring.toLocaleString()} participants above 0, best ${best}; events not on a curated template: ${uncurated}`)
  } finally {
    await db.end()
  }
}

export const bench: BenchModule = {
  name: 'labs',
  run: async (stack) => {
    await benchOptimizer(stack, knob('BENCH_LABS_RUNS', 50))
    await benchRecompute(stack, knob('BENCH_LABS_RECOMPUTE_RUNS', 10))
  },
}
