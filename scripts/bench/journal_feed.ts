// The visibility feed at scale: the same page three ways, in one run:
//   SQL as the viewer (role authenticated + claims: RLS applies) via public.journal_feed,
//   through GET /api/journal?scope=visible, and by hand as postgres without RLS.
import postgres from 'postgres'
import { encodeCursor } from '../../functions/_shared/pagination.ts'
import { ROOT, run } from '../lib/proc.ts'
import { type BenchModule, checkpoint, figure, knob, SCALE, setScale } from './_module.ts'
import type { Stack } from '../lib/stack.ts'
import { signClaims } from '../lib/tokens.ts'

const VIEWER = 'b0000000-0000-4000-8000-00000000beef'
const PAGE = 50
const WARM_UP = 50
const FAR_FUTURE = '9999-12-31T00:00:00Z'
const MAX_ID = 'ffffffff-ffff-ffff-ffff-ffffffffffff'

type Row = { id: string; content: string | null; created_at: string | Date }

/**
 * Times calls in turn, `chunk` calls of each before the next (a×chunk, b×chunk, a×chunk, ...),
 * so load from other processes on a shared machine weighs on each alike, after a warm-up that
 * is not counted (the first calls of a connection or of the gateway's code plan and compile;
 * p50 is about the steady state).
 */
async function timedInTurn<T extends unknown[]>(
  n: number,
  o: { warmUp: number; chunk: number },
  fns: { [K in keyof T]: () => Promise<T[K]> },
) {
  const ms = fns.map(() => [] as number[])
  const last: unknown[] = fns.map(() => undefined)
  for (let done = -o.warmUp; done < n; done += o.chunk) {
    for (let j = 0; j < fns.length; j++) {
      for (let k = 0; k < o.chunk && done + k < n; k++) {
        const t0 = performance.now()
        last[j] = await fns[j]()
        if (done + k >= 0) ms[j].push(performance.now() - t0)
      }
    }
  }
  return ms.map((xs, j) => {
    xs.sort((x, y) => x - y)
    return {
      p50: xs[Math.floor(xs.length * 0.5)],
      p99: xs[Math.min(xs.length - 1, Math.floor(xs.length * 0.99))],
      last: last[j],
    }
  }) as { [K in keyof T]: { p50: number; p99: number; last: T[K] } }
}

const key = (rows: Row[]) => rows.map((r) => `${r.id}:${r.content === null ? '-' : 'c'}`).join(',')

export async function benchJournalFeed(stack: Stack, iterations: number) {
  const admin = postgres(stack.dbUrl, { max: 1, onnotice: () => {} })
  const t0 = performance.now()
  await setScale(admin)
  await admin.file(`${ROOT}/sql/bench/journal_feed_fixture.sql`)
  // Vacuumed as autovacuum would leave them (visibility map set), and so that autovacuum does
  // not start on the fresh million rows while the timings run.
  await admin`vacuum analyze public.journal_entries, public.journal_entry_contents, public.team_members,
              public.organization_members, public.profiles`
  // Checkpointed and flushed to disk now: loading wrote about 0.5 GB, and the checkpoints and
  // the kernel's writeback would otherwise go on for minutes, across the timings below.
  await checkpoint(stack.dbUrl)
  await run('sync', [])
  const [{ entries }] = await admin`select count(*)::int as entries from public.journal_entries`
  console.log(
    `\nVisibility feed: loaded ${entries.toLocaleString()} entries in ${
      ((performance.now() - t0) / 1000).toFixed(0)
    }s`,
  )

  const byHand = await Deno.readTextFile(`${ROOT}/sql/bench/journal_feed_by_hand.sql`)
  // Prepared like the RLS path's statement and with its settings (journal_feed and its helper
  // force a generic plan and jit off), so both compare plans, not planning or compiling: left
  // to choose, the plan cache re-planned the hand query on every call at 10x (its generic
  // estimate grows with the table), 2 ms of planning for a 1 ms query.
  await admin`set plan_cache_mode = force_generic_plan`
  await admin`set jit = off`
  const hand = (before: [string, string]) =>
    admin.unsafe<Row[]>(byHand, [VIEWER, before[0], before[1], PAGE], { prepare: true })

  // A session acting as the viewer, as PostgREST sets one up: the role, the claims, and the
  // role's own settings (`alter role authenticated set ...`, which PostgREST applies to each
  // request and `set role` does not).
  const viewer = postgres(stack.dbUrl, { max: 1, onnotice: () => {} })
  await viewer`select set_config('request.jwt.claims', ${
    JSON.stringify({ sub: VIEWER, role: 'authenticated' })
  }, false)`
  await viewer`set role authenticated`
  const roleSettings = await admin<{ name: string; value: string }[]>`
    select split_part(s, '=', 1) as name, substr(s, strpos(s, '=') + 1) as value
      from pg_db_role_setting r cross join unnest(r.setconfig) s
     where r.setrole = 'authenticated'::regrole
       and r.setdatabase in (0, (select oid from pg_database where datname = current_database()))
     order by r.setdatabase` // a database's own setting after the role's general one
  for (const { name, value } of roleSettings) await viewer`select set_config(${name}, ${value}, false)`
  const rls = (before: [string, string] | null) =>
    viewer<Row[]>`select * from public.journal_feed('visible', null, null, null, null, null, null,
                  ${before?.[0] ?? null}, ${before?.[1] ?? null}, ${PAGE})`

  const token = await signClaims(
    { sub: VIEWER, role: 'authenticated', aud: 'authenticated' },
    stack.jwtSecret,
  )
  const api = async (cursor: string | null) => {
    const res = await fetch(
      `${stack.apiUrl}/functions/v1/api/journal?scope=visible&limit=${PAGE}${
        cursor ? `&before=${cursor}` : ''
      }`,
      {
        headers: { authorization: `Bearer ${token}` },
      },
    )
    if (res.status !== 200) throw new Error(`api ${res.status}: ${await res.text()}`)
    return (await res.json()).entries as Row[]
  }

  // A cursor deep in the history: the newest entry of the page that starts 90 % back.
  const [deep] = await admin`select created_at, id from public.journal_entries
                             where created_at < timestamptz '2026-11-01' - make_interval(mins => ${
    900000 * SCALE
  }::int)
                             order by created_at desc, id desc limit 1`
  const deepCursor: [string, string] = [new Date(deep.created_at).toISOString(), deep.id]

  const rows: string[] = []
  for (const [label, before] of [['first page', null], ['deep page', deepCursor]] as const) {
    const cursor = before ? encodeCursor({ created_at: before[0], id: before[1] }) : null
    // Hand and RLS one call each in turn (two SQL sessions). Then the API against the same RLS
    // call in runs of 25: a request that follows a request, as a server under load sees them
    // (one by one, the gateway and PostgREST would sleep between requests and each request would
    // pay for waking three processes on two cores), the RLS runs taking the same turns.
    const [handT, rlsT] = await timedInTurn<[Row[], Row[]]>(iterations, { warmUp: WARM_UP, chunk: 1 }, [
      () => hand(before ?? [FAR_FUTURE, MAX_ID]),
      () => rls(before),
    ])
    const [rlsRunT, apiT] = await timedInTurn<[Row[], Row[]]>(iterations, { warmUp: WARM_UP, chunk: 25 }, [
      () => rls(before),
      () => api(cursor),
    ])
    figure(`feed ${label}, RLS p50`, rlsT.p50, 'ms', 'within 1.3x of 1x')
    const same = key(handT.last) === key(rlsT.last) && key(rlsT.last) === key(apiT.last) &&
      handT.last.length === PAGE
    rows.push(
      `${label.padEnd(11)} hand p50 ${handT.p50.toFixed(2)} p99 ${handT.p99.toFixed(2)} | ` +
        `RLS p50 ${rlsT.p50.toFixed(2)} p99 ${rlsT.p99.toFixed(2)} (${
          (rlsT.p50 / handT.p50).toFixed(2)
        }x hand) | ` +
        `/api/journal p50 ${apiT.p50.toFixed(2)} p99 ${apiT.p99.toFixed(2)} (${
          (apiT.p50 / rlsRunT.p50).toFixed(2)
        }x RLS in runs, p50 ${rlsRunT.p50.toFixed(2)}) | ` +
        `identical rows: ${same ? 'yes' : 'NO'}`,
    )
  }
  console.log(
    `viewer in 5 organizations and 20 teams; ${PAGE} entries a page; ms; ${iterations} runs each after ${WARM_UP} not counted`,
  )
  for (const r of rows) console.log(r)
  console.log('targets: RLS p50 < 5 ms; RLS within 1.2x of hand; /api/journal p50 < 3x RLS; identical rows')
  await viewer.end()
  await admin.end()
}

export const bench: BenchModule = {
  name: 'feed',
  run: (stack) => benchJournalFeed(stack, knob('BENCH_FEED_RUNS', 200)),
}
