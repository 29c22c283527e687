// The monthly drops award for every user, in chunks (private.award_monthly_drops_chunk through
// POST /api/drops/cron/award-monthly-all), over 100,000 x BENCH_SCALE users of its own (every
// tenth premium, ten ledger rows of history each) plus whatever users the run's other modules loaded:
//   a first run through SQL, killed in its third chunk (pg_terminate_backend): the longest chunk;
//   a second run from the start through the endpoint (the production path): its total time and
//   whether it completed within its budget; a third run with nothing left to award;
//   then the checks: every active user awarded exactly once this month, balances equal ledgers.
import postgres from 'postgres'
import type { Stack } from '../lib/stack.ts'
import { type BenchModule, figure, knob, SCALE } from './_module.ts'

const seconds = (t0: number) => (performance.now() - t0) / 1000

async function benchAward(stack: Stack, chunk: number) {
  const db = postgres(stack.dbUrl, { max: 1, onnotice: () => {} })
  const n = 100_000 * SCALE
  let t0 = performance.now()
  await db.begin(async (tx) => {
    await tx`set local session_replication_role = replica`
    await tx`insert into auth.users (id, email)
             select ('a3000000-0000-4000-8000-' || lpad(to_hex(g), 12, '0'))::uuid, 'bench-award-' || g || '@bench.local'
               from generate_series(1, ${n}::int) g`
    await tx`insert into public.profiles (id, full_name, is_active)
             select ('a3000000-0000-4000-8000-' || lpad(to_hex(g), 12, '0'))::uuid, 'Award ' || g, g % 50 <> 0
               from generate_series(1, ${n}::int) g`
    // Ten ledger rows of history a user (10,000,000 at 10x), the balance their sum.
    await tx`insert into public.drops_transactions (user_id, amount, type, description, created_at)
             select ('a3000000-0000-4000-8000-' || lpad(to_hex(g), 12, '0'))::uuid,
                    case when k = 1 then 30 when k % 3 = 0 then -5 else 30 end,
                    case when k = 1 then 'signup_bonus' when k % 3 = 0 then 'purchase' else 'monthly_recurring' end,
                    'bench history', now() - make_interval(months => 11 - k)
               from generate_series(1, ${n}::int) g, generate_series(1, 10) k`
    await tx`update public.profiles set drops_balance = 30 + 6 * 30 - 3 * 5
              where id >= 'a3000000-0000-4000-8000-000000000000' and id <= 'a3000000-0000-4000-8000-ffffffffffff'`
    await tx`insert into public.subscriptions (user_id, status)
             select ('a3000000-0000-4000-8000-' || lpad(to_hex(g), 12, '0'))::uuid, 'active'
               from generate_series(10, ${n}::int, 10) g`
  })
  await db`vacuum analyze public.profiles, public.subscriptions, public.monthly_drop_awards, public.drops_transactions`
  const [{ users, active }] =
    await db`select count(*)::int as users, count(*) filter (where is_active)::int as active from public.profiles`
  console.log(
    `Monthly award: ${users.toLocaleString()} users (${active.toLocaleString()} active; ${n.toLocaleString()} of them ` +
      `this module's, every tenth premium; loaded in ${
        seconds(t0).toFixed(0)
      }s), chunks of ${chunk.toLocaleString()}`,
  )

  // Run 1, through SQL, chunk by chunk; killed during its third chunk.
  const chunks: number[] = []
  let after: string | null = null
  t0 = performance.now()
  for (let i = 0; i < 2; i++) {
    const c0 = performance.now()
    const [r]: any = await db`select * from private.award_monthly_drops_chunk(${after}::uuid, ${chunk}, null)`
    chunks.push(performance.now() - c0)
    after = r.last_id
  }
  const victim = postgres(stack.dbUrl, { max: 1, onnotice: () => {} })
  const [{ pid }] = await victim`select pg_backend_pid() as pid`
  const doomed = victim`select * from private.award_monthly_drops_chunk(${after}::uuid, ${chunk}, null)`
    .catch((
      e,
    ) => e)
  await new Promise((r) => setTimeout(r, Math.min(300, Math.max(50, chunks[0] / 3))))
  await db`select pg_terminate_backend(${pid})`
  const killed = await doomed
  victim.end({ timeout: 0 }).catch(() => {}) // its connection is gone: do not wait for a goodbye
  const [{ done1 }] = await db`select count(*)::int as done1 from public.monthly_drop_awards
                                where award_month = private.current_award_month()`
  console.log(
    `  run 1 (SQL): 2 chunks in ${(chunks[0] + chunks[1]).toFixed(0)} ms (${
      chunks.map((c) => c.toFixed(0)).join(', ')
    } ms), ` +
      `killed in its third (${
        killed instanceof Error ? 'terminated' : 'finished before the kill'
      }): ${done1.toLocaleString()} users awarded`,
  )

  // Run 2: the endpoint from the start, as the scheduler calls it.
  t0 = performance.now()
  const res = await fetch(`${stack.apiUrl}/functions/v1/api/drops/cron/award-monthly-all`, {
    method: 'POST',
    headers: { 'x-cron-secret': stack.cronSecrets.DROPS_CRON_SECRET },
  })
  const body = await res.json()
  const run2 = seconds(t0)
  if (res.status !== 200) throw new Error(`award-monthly-all ${res.status}: ${JSON.stringify(body)}`)
  console.log(
    `  run 2 (POST /api/drops/cron/award-monthly-all from the start): ${run2.toFixed(1)} s, awarded ` +
      `${body.awarded.toLocaleString()}, skipped ${body.skipped.toLocaleString()}, complete: ${body.complete}`,
  )

  // Run 3: nothing left; and the longest chunk measured over one more walk through SQL.
  t0 = performance.now()
  after = null
  let longest = 0
  do {
    const c0 = performance.now()
    const [r]: any = await db`select * from private.award_monthly_drops_chunk(${after}::uuid, ${chunk}, null)`
    longest = Math.max(longest, performance.now() - c0)
    after = r.last_id
  } while (after)
  const run3 = seconds(t0)
  const [check] = await db`
    select (select count(*) from public.profiles p where p.is_active and not exists (
              select 1 from public.monthly_drop_awards a where a.user_id = p.id and a.award_month = private.current_award_month()))::int as missing,
           (select count(*) from (select user_id from public.drops_transactions where type = 'monthly_recurring'
              and created_at >= date_trunc('month', now()) group by user_id having count(*) > 1) x)::int as twice,
           (select count(*) from public.profiles p where p.id::text like 'a3000000-%' and p.drops_balance <>
              (select coalesce(sum(t.amount), 0) from public.drops_transactions t where t.user_id = p.id))::int as drift`
  console.log(
    `  run 3 (nothing left, SQL walk): ${run3.toFixed(1)} s; longest chunk (one transaction) ` +
      `${Math.max(longest, ...chunks).toFixed(0)} ms`,
  )
  console.log(
    `  checks: active users without this month's award ${check.missing}, awarded twice ${check.twice}, ` +
      `balances differing from their ledger (this module's users) ${check.drift}`,
  )
  const total = chunks[0] + chunks[1] + run2 * 1000
  figure('monthly award, all users', total / 1000, 's', '< 60 s at 1M users')
  figure('monthly award, longest transaction', Math.max(longest, ...chunks), 'ms', '< 5,000 ms')
  console.log(
    `targets (1,000,000 users): under 60 s in all (here ${(total / 1000).toFixed(1)} s: run 1 + run 2), ` +
      'no transaction over 5 s, resumable after a kill, once per user per month',
  )
  await db.end()
}

export const bench: BenchModule = {
  name: 'award',
  run: (stack) => benchAward(stack, knob('BENCH_AWARD_CHUNK', 10000)),
}
