// The retention job over what the modules before it loaded (run it after ai, encouragement and
// music: `BENCH_ONLY=ai,encouragement,music,retention`): shorter keeps for the bench (AI usage
// 300 days, sent drops 20 days, plays 1 day) make part of each fixture expire; then
// private.run_retention() runs until nothing is due. Prints each run's time (one transaction),
// the rows each table lost, and checks that the monthly AI sums, the badges recalculated from
// the drops and the ledger's sums are what they were. The keeps are restored afterwards.
import postgres from 'postgres'
import type { Stack } from '../lib/stack.ts'
import { type BenchModule, figure } from './_module.ts'

const KEEPS: Record<string, string> = {
  'public.ai_usage': '300 days',
  'public.encouragement_sent_drops': '20 days',
  'public.music_plays': '1 day',
}

async function benchRetention(stack: Stack) {
  const db = postgres(stack.dbUrl, { max: 1, onnotice: () => {} })
  const saved = await db`select table_name, keep::text as keep from private.retention_policies`
  // Each table's rows as a count and a sum of 64-bit hashes (order-free): one string of every
  // row, hashed, passed Postgres' 1 GB limit at 10x ("out of memory").
  const fingerprint = async () => {
    const [f] = await db`
      select (select count(*) || ':' || sum(hashtextextended(user_id::text || month || usage_type || calls || cost_usd, 0))
                from public.ai_usage_monthly) as months,
             (select count(*) from public.profiles p where p.drops_balance <>
                (select coalesce(sum(t.amount), 0) from public.drops_transactions t where t.user_id = p.id))::int as drift,
             (select count(*) || ':' || sum(hashtextextended(user_id::text || level || total_sent || engagement_increases || bonus_earned, 0))
                from public.encouragement_badges) as badges`
    return f
  }
  const before = await fingerprint()
  const [sizes] = await db`select (select count(*) from public.ai_usage)::int as ai, (select count(*) from public.encouragement_sent_drops)::int as drops,
                                  (select count(*) from public.music_plays)::int as plays`
  try {
    for (const [table, keep] of Object.entries(KEEPS)) {
      await db`update private.retention_policies set keep = ${keep}::interval where table_name = ${table}`
    }
    const runs: number[] = []
    const deleted: Record<string, number> = {}
    let behind = 1
    const t0 = performance.now()
    while (behind > 0 && runs.length < 500) {
      const r0 = performance.now()
      const [{ r }] = await db`select private.run_retention() as r`
      runs.push(performance.now() - r0)
      for (const [t, n] of Object.entries(r.deleted as Record<string, number>)) deleted[t] = (deleted[t] ?? 0) + n
      behind = r.tables_with_more_due
    }
    const total = (performance.now() - t0) / 1000
    const rows = Object.values(deleted).reduce((a, b) => a + b, 0)
    console.log(`Retention over ${sizes.ai.toLocaleString()} AI usage rows, ${sizes.drops.toLocaleString()} sent drops, ` +
      `${sizes.plays.toLocaleString()} plays (keeps for the bench: ${Object.entries(KEEPS).map(([t, k]) => `${t} ${k}`).join(', ')})`)
    console.log(`  ${runs.length} runs in ${total.toFixed(1)} s: ${rows.toLocaleString()} rows deleted ` +
      `(${Object.entries(deleted).filter(([, n]) => n).map(([t, n]) => `${t} ${n.toLocaleString()}`).join(', ')}); ` +
      `a run (one transaction) p50 ${runs.sort((a, b) => a - b)[Math.floor(runs.length / 2)].toFixed(0)} ms, ` +
      `longest ${Math.max(...runs).toFixed(0)} ms; ${(rows / total).toFixed(0)} rows/s`)
    // The badges as a full recalculation from what is left (plus the purged totals) gives them.
    await db`select private.recalculate_encouragement_badges(array(select user_id from public.encouragement_badges))`
    const after = await fingerprint()
    console.log(`  monthly AI sums unchanged: ${after.months === before.months ? 'yes' : 'NO'}; badges recalculated from ` +
      `the drops unchanged: ${after.badges === before.badges ? 'yes' : 'NO'}; balances differing from their ledger: ` +
      `${before.drift} before, ${after.drift} after`)
    figure('retention, rows deleted a second', rows / total, 'rows/s')
    figure('retention, longest run (one transaction)', Math.max(...runs), 'ms', '< 5,000 ms')
  } finally {
    for (const s of saved) {
      await db`update private.retention_policies set keep = ${s.keep}::interval where table_name = ${s.table_name}`
    }
    await db.end()
  }
}

export const bench: BenchModule = { name: 'retention', run: benchRetention }
