// Encouragement drops at scale, with 100,000 users and 1,000,000 sent drops (x BENCH_SCALE)
// (sql/bench/encouragement_fixture.sql):
//   badge recalculation of every user, in chunks (each its own transaction);
//   engagement processing of 100,000 due drops by walkers side by side, in chunks, against a
//   same-run baseline: the read-only judging query alone (the same engagement checks);
//   the leaderboard (50) as SQL, through PostgREST and through /api (target p50 under 30 ms),
//   checked to return the same users, with /api/encouragement-drops/config as the /api floor.
import postgres from 'postgres'
import { ROOT } from '../lib/proc.ts'
import type { Stack } from '../lib/stack.ts'
import { signClaims } from '../lib/tokens.ts'
import { type BenchModule, figure, knob, setScale, timed } from './_module.ts'

const VIEWER = 'e2000000-0000-4000-8000-000000000001'

const fmt = (t: { p50: number; p99: number }) => `p50 ${t.p50.toFixed(2)} p99 ${t.p99.toFixed(2)}`
const seconds = (t0: number) => ((performance.now() - t0) / 1000).toFixed(2)

export async function benchEncouragement(stack: Stack, runs: number) {
  const db = postgres(stack.dbUrl, { max: 1, onnotice: () => {} })
  let t0 = performance.now()
  await setScale(db)
  // pg_cron's hourly engagement job would judge drops of the fixture if the hour turned during
  // the module (at 3x the runs once judged fewer than were due: the job had taken the rest).
  await db`update cron.job set active = false where jobname like 'process-engagement%'`
  await db.file(`${ROOT}/sql/bench/encouragement_fixture.sql`)
  await db`vacuum analyze public.encouragement_sent_drops, public.journal_entries, public.profiles` // as autovacuum would
  const [{ users, drops, due }] = await db`select
      (select count(*) from public.profiles where id::text like 'e2000000-%')::int as users,
      (select count(*) from public.encouragement_sent_drops)::int as drops,
      (select count(*) from private.encouragement_unjudged_drops)::int as due`
  console.log(
    `Encouragement: ${users.toLocaleString()} users, ${drops.toLocaleString()} sent drops, ${due.toLocaleString()} due ` +
      `(loaded in ${seconds(t0)}s)`,
  )

  // Every badge from the drops, in chunks of BENCH_BADGE_CHUNK senders and badge holders (each
  // its own call and transaction), by BENCH_BADGE_WALKERS walkers side by side over ranges of
  // ids (bounds: the senders' id quantiles, as random ids split evenly in production).
  const chunk = knob('BENCH_BADGE_CHUNK', 10000)
  const badgeWalkers = knob('BENCH_BADGE_WALKERS', 2)
  const bounds: (string | null)[] = [null]
  for (let i = 1; i < badgeWalkers; i++) {
    const [{ id }] = await db`select sender_id::text as id from public.encouragement_sent_drops
                               where sender_id is not null order by sender_id
                              offset ${Math.floor((drops * i) / badgeWalkers)} limit 1`
    bounds.push(id)
  }
  bounds.push(null)
  // A walk: every chunk of every walker's range; the time, the badges written, the longest chunk.
  const walk = async () => {
    const w0 = performance.now()
    let [written, longest, chunks] = [0, 0, 0]
    const conns = bounds.slice(1).map(() => postgres(stack.dbUrl, { max: 1, onnotice: () => {} }))
    await Promise.all(conns.map(async (c, i) => {
      let after = bounds[i]
      do {
        const c0 = performance.now()
        const [r] =
          await c`select * from private.recalculate_encouragement_badges_chunk(${after}::uuid, ${chunk}, ${
            bounds[i + 1]
          }::uuid)`
        longest = Math.max(longest, performance.now() - c0)
        written += r.recalculated
        chunks++
        after = r.last_id
      } while (after)
    }))
    await Promise.all(conns.map((c) => c.end()))
    return { seconds: (performance.now() - w0) / 1000, written, longest, chunks }
  }
  const [{ profiles }] = await db`select count(*)::int as profiles from public.profiles`
  const say = (what: string, w: Awaited<ReturnType<typeof walk>>) =>
    console.log(
      `${what} (${profiles.toLocaleString()} profiles) in chunks of ${chunk.toLocaleString()}, ${badgeWalkers} ` +
        `walker(s): ${
          w.seconds.toFixed(1)
        }s, ${w.written.toLocaleString()} badges written in ${w.chunks} chunks, ` +
        `longest chunk ${w.longest.toFixed(0)} ms`,
    )
  // First the badges are made (the fixture has none: 1,000,000 inserts and their milestones at
  // 10x), then recalculated again as after a rule change (each badge rewritten in place).
  const first = await walk()
  say('badge recalculation of every sender and badge holder, none written yet', first)
  const rewalk = await walk()
  say('badge recalculation of every sender and badge holder again, every badge written already', rewalk)
  const [recalc, longest] = [first.seconds, first.longest]
  // The same badges as a recalculation from the drops: every sender has one, and the totals
  // of all badges are those of all drops (one read of the whole table).
  const [check] = await db`
    with d as (select count(distinct sender_id)::int as senders, count(*)::bigint as sent,
                      count(*) filter (where bonus_drops_awarded > 0)::bigint as successes,
                      coalesce(sum(bonus_drops_awarded), 0)::bigint as bonus
                 from public.encouragement_sent_drops where sender_id <> private.assistant_user_id()),
         b as (select count(*)::int as badges, sum(total_sent)::bigint as sent,
                      sum(engagement_increases)::bigint as successes, sum(bonus_earned)::bigint as bonus
                 from public.encouragement_badges)
    select d.senders = b.badges and d.sent = b.sent and d.successes = b.successes and d.bonus = b.bonus as same,
           d.senders, b.badges from d, b`
  console.log(
    `  the badges' totals equal the drops' (every sender's badge, sent, successes, bonus): ${
      check.same ? 'yes' : `NO (${check.senders} senders, ${check.badges} badges)`
    }`,
  )
  figure('badge recalculation, all users', recalc, 's', '< 60 s at 1M users')
  figure('badge recalculation, longest transaction', longest, 'ms', '< 5,000 ms')
  figure('badge recalculation again, all users', rewalk.seconds, 's', '< 60 s at 1M users')

  // Baseline: the judging query alone (read-only), the same checks the run makes: an
  // established recipient (frozen when the drop was sent) whose activity in the window passes
  // their average per window over the 7 windows before it (also frozen).
  t0 = performance.now()
  const [{ judged_ro, engaged_ro }] = await db`
    with cfg as (select make_interval(hours => engagement_window_hours) as w from public.encouragement_config),
    observed as (
      select d.date_sent,
             case when b.established then (
               select t.at
                 from (select e.created_at as at from public.journal_entries e
                        where e.user_id = d.recipient_id and e.created_at > d.date_sent and e.created_at <= d.date_sent + cfg.w
                       union all
                       select g.created_at from public.goal_check_ins g
                        where g.user_id = d.recipient_id and g.created_at > d.date_sent and g.created_at <= d.date_sent + cfg.w) t
                order by t.at offset b.activity / 7 limit 1) end as engaged_at
        from private.encouragement_unjudged_drops q
        join public.encouragement_sent_drops d on d.id = q.drop_id cross join cfg
        left join private.encouragement_drop_baselines b on b.drop_id = d.id)
    select count(*) filter (where engaged_at is not null or date_sent + (select w from cfg) <= now())::int as judged_ro,
           count(engaged_at)::int as engaged_ro from observed`
  const baseline = (performance.now() - t0) / 1000
  // Walkers side by side (BENCH_ENGAGEMENT_WALKERS connections), each calling one chunk of
  // BENCH_ENGAGEMENT_CHUNK drops at a time (each chunk its own transaction) until nothing is due.
  const walkers = knob('BENCH_ENGAGEMENT_WALKERS', 2)
  const chunkDrops = knob('BENCH_ENGAGEMENT_CHUNK', 10000)
  const conns = Array.from({ length: walkers }, () => postgres(stack.dbUrl, { max: 1, onnotice: () => {} }))
  t0 = performance.now()
  const runs_: number[] = []
  const r = { judged: 0, engaged: 0, bonuses_awarded: 0, badges_recalculated: 0, remaining: 0 }
  await Promise.all(conns.map(async (c) => {
    for (let i = 0; i < 500; i++) {
      const r0 = performance.now()
      const [{ one }] = await c`select public.process_encouragement_engagement(${chunkDrops}) as one`
      runs_.push((performance.now() - r0) / 1000)
      for (const k of ['judged', 'engaged', 'bonuses_awarded', 'badges_recalculated'] as const) r[k] += one[k]
      r.remaining = one.remaining
      if (one.judged === 0 && one.remaining === 0) break
    }
  }))
  await Promise.all(conns.map((c) => c.end()))
  const run = (performance.now() - t0) / 1000
  console.log(
    `engagement processing over ${due.toLocaleString()} due drops: ${
      run.toFixed(2)
    }s, ${walkers} walker(s), ` +
      `${runs_.length} chunk(s) of at most ${chunkDrops.toLocaleString()}, the longest ${
        Math.max(...runs_).toFixed(2)
      }s ` +
      `(judged ${r.judged.toLocaleString()}, engaged ${r.engaged.toLocaleString()}, bonuses ${r.bonuses_awarded.toLocaleString()}, ` +
      `badges recalculated ${r.badges_recalculated.toLocaleString()}, remaining ${r.remaining})`,
  )
  figure('engagement, all due drops', run, 's', '< 60 s at 1M due')
  figure('engagement, longest transaction', Math.max(...runs_) * 1000, 'ms', '< 5,000 ms')
  console.log(
    `  baseline, the read-only judging query alone: ${baseline.toFixed(2)}s (${
      (run / baseline).toFixed(2)
    }x); ` +
      `same judgement: ${
        judged_ro === r.judged && engaged_ro === r.engaged
          ? 'yes'
          : `NO (read-only ${judged_ro} judged, ${engaged_ro} engaged)`
      }`,
  )
  t0 = performance.now()
  const [{ again }] = await db`select public.process_encouragement_engagement() as again`
  console.log(`  a second run right after (nothing due): ${seconds(t0)}s, judged ${again.judged}`)
  await db`update cron.job set active = true where jobname like 'process-engagement%'`

  // The leaderboard: SQL as a user, PostgREST, /api; the /api floor is a one-row read.
  const asUser = postgres(stack.dbUrl, { max: 1, onnotice: () => {} })
  await asUser`select set_config('request.jwt.claims', ${
    JSON.stringify({ sub: VIEWER, role: 'authenticated' })
  }, false)`
  await asUser`set role authenticated`
  const token = await signClaims(
    { sub: VIEWER, role: 'authenticated', aud: 'authenticated' },
    stack.jwtSecret,
  )
  const headers = { authorization: `Bearer ${token}` }
  const sqlBoard = await timed(
    runs,
    async () =>
      (await asUser`select user_id from public.encouragement_leaderboard(50)`).map((x) =>
        x.user_id as string
      ),
  )
  const rest = await timed(runs, async () => {
    const res = await fetch(`${stack.apiUrl}/rest/v1/rpc/encouragement_leaderboard`, {
      method: 'POST',
      headers: { ...headers, apikey: stack.anonKey, 'content-type': 'application/json' },
      body: JSON.stringify({ max_rows: 50 }),
    })
    if (res.status !== 200) throw new Error(`rest ${res.status}: ${await res.text()}`)
    return ((await res.json()) as { user_id: string }[]).map((x) => x.user_id)
  })
  const api = await timed(runs, async () => {
    const res = await fetch(`${stack.apiUrl}/functions/v1/api/encouragement-drops/leaderboard`, { headers })
    if (res.status !== 200) throw new Error(`api ${res.status}: ${await res.text()}`)
    return ((await res.json()).leaderboard as { user_id: string }[]).map((x) => x.user_id)
  })
  const floor = await timed(runs, async () => {
    const res = await fetch(`${stack.apiUrl}/functions/v1/api/encouragement-drops/config`, { headers })
    await res.arrayBuffer()
    return res.status
  })
  const same = api.last.length === 50 && api.last.join() === rest.last.join() &&
    rest.last.join() === sqlBoard.last.join()
  console.log(`leaderboard of 50 over ${users.toLocaleString()} badges (${runs} runs; ms):`)
  console.log(
    `  SQL ${fmt(sqlBoard)} | PostgREST rpc ${fmt(rest)} | /api ${fmt(api)} (${
      (api.p50 / rest.p50).toFixed(2)
    }x PostgREST) | ` +
      `identical: ${same ? 'yes' : 'NO'}`,
  )
  console.log(`  /api floor (GET /api/encouragement-drops/config): ${fmt(floor)}`)
  figure('leaderboard via /api, p50', api.p50, 'ms', '< 30 ms')
  console.log(
    'targets: leaderboard p50 through /api < 30 ms; engagement over 1,000,000 due drops < 60 s, no transaction over 5 s',
  )
  await Promise.all([db.end(), asUser.end()])
}

export const bench: BenchModule = {
  name: 'encouragement',
  run: (stack) => benchEncouragement(stack, knob('BENCH_ENCOURAGEMENT_RUNS', 200)),
}
