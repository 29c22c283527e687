// The visibility feed at scale: the same page five ways, in one run:
//   SQL as the viewer (role authenticated + claims: RLS applies) via public.journal_feed,
//   by hand as postgres without RLS, POST /rest/v1/rpc/journal_feed through the gateway (a
//   client's direct PostgREST call) and on PostgREST's own port (what the route calls), and
//   GET /api/journal?scope=visible. Each step's p50 says where a request's time goes.
// Knobs: BENCH_FEED_RUNS (200 a path and page), BENCH_SCALE (1x: 1,000,200 entries, loaded in
// under a minute; 10x: 10,000,200, about 13 minutes).
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

type Row = {
  id: string
  content: string | null
  created_at: string | Date
  author_name: string | null
  effective_metadata_visibility: string
  effective_content_visibility: string
}

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

// Same entries, same text rule, same authors and levels on every path.
const key = (rows: Row[]) =>
  rows.map((r) =>
    `${r.id}:${r.content === null ? '-' : 'c'}:${r.author_name}:${r.effective_metadata_visibility}/${r.effective_content_visibility}`
  ).join(',')

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
  // The same page straight from PostgREST, as supabase-js rpc() asks for it (POST, the caller's
  // token, the route's page_size of PAGE + 1): through the gateway, the direct call a client
  // makes, which /api/journal is held to (within 1 ms); and PostgREST's own port, which is what
  // the route itself calls (functions reach PostgREST without the gateway).
  const postgrestAt = (restUrl: string) => async (before: [string, string] | null) => {
    const res = await fetch(`${restUrl}/rpc/journal_feed`, {
      method: 'POST',
      headers: {
        apikey: stack.anonKey,
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
      },
      body: JSON.stringify({
        scope: 'visible',
        page_size: PAGE + 1,
        ...(before ? { before_created_at: before[0], before_id: before[1] } : {}),
      }),
    })
    if (res.status !== 200) throw new Error(`PostgREST ${res.status}: ${await res.text()}`)
    return (await res.json() as Row[]).slice(0, PAGE)
  }
  const rest = postgrestAt(`${stack.apiUrl}/rest/v1`)
  const restBehindGateway = postgrestAt(stack.functionEnv.SUPABASE_REST_URL)

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
    // Hand and RLS one call each in turn (two SQL sessions). Then the request paths against the
    // same RLS call in runs of 25: a request that follows a request, as a server under load sees
    // them (one by one, the gateway and PostgREST would sleep between requests and each request
    // would pay for waking three processes on two cores), the RLS runs taking the same turns.
    const [handT, rlsT] = await timedInTurn<[Row[], Row[]]>(iterations, { warmUp: WARM_UP, chunk: 1 }, [
      () => hand(before ?? [FAR_FUTURE, MAX_ID]),
      () => rls(before),
    ])
    const [rlsRunT, innerT, restT, apiT] = await timedInTurn<[Row[], Row[], Row[], Row[]]>(
      iterations,
      { warmUp: WARM_UP, chunk: 25 },
      [() => rls(before), () => restBehindGateway(before), () => rest(before), () => api(cursor)],
    )
    const overRest = apiT.p50 - restT.p50
    figure(`feed ${label}, RLS p50`, rlsT.p50, 'ms', 'within 1.3x of 1x')
    figure(`feed ${label}, /api/journal p50 over PostgREST`, overRest, 'ms', 'within 1 ms')
    const same = handT.last.length === PAGE &&
      [rlsT, innerT, restT, apiT].every((t) => key(t.last) === key(handT.last))
    const p = (name: string, t: { p50: number; p99: number }) =>
      `${name} p50 ${t.p50.toFixed(2)} p99 ${t.p99.toFixed(2)}`
    rows.push(
      `${label.padEnd(11)} ${p('hand', handT)} | ${p('RLS', rlsT)} (${
        (rlsT.p50 / handT.p50).toFixed(2)
      }x hand)`,
      `${''.padEnd(11)} in runs: ${p('RLS', rlsRunT)} | ${p("PostgREST's port", innerT)} | ` +
        `${p('PostgREST', restT)} | ${p('/api/journal', apiT)}`,
      `${''.padEnd(11)} /api/journal: ${(apiT.p50 / restT.p50).toFixed(2)}x PostgREST, ${
        overRest >= 0 ? '+' : ''
      }${overRest.toFixed(2)} ms (within 1 ms: ${Math.abs(overRest) <= 1 ? 'met' : 'NOT met'}); ${
        (apiT.p50 / rlsRunT.p50).toFixed(2)
      }x RLS | identical rows: ${same ? 'yes' : 'NO'}`,
    )
  }
  console.log(
    `viewer in 5 organizations and 20 teams; ${PAGE} entries a page; ms; ${iterations} runs each after ${WARM_UP} not counted;`,
  )
  console.log(
    "PostgREST: POST /rest/v1/rpc/journal_feed through the gateway (a client's direct call); PostgREST's port: the same without the gateway (what the route calls)",
  )
  for (const r of rows) console.log(r)
  console.log(
    'targets: RLS p50 < 5 ms; RLS within 1.2x of hand; /api/journal p50 within 1 ms of PostgREST and < 3x RLS; identical rows',
  )
  await viewer.end()
  await admin.end()
}

export const bench: BenchModule = {
  name: 'feed',
  run: (stack) => benchJournalFeed(stack, knob('BENCH_FEED_RUNS', 200)),
}
