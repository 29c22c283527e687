// Token usage and the admin user list at scale, with 100,000 users and 2,000,000
// usage rows (sql/bench/ai_usage_fixture.sql):
//   monthly_token_usage as the user (SQL, RLS claims) against a same-run baseline that sums
//   the month's usage rows by hand, with the rows its plan reads (it must not read ai_usage);
//   the admin users page (50) as SQL, directly through PostgREST and through /api/admin/users,
//   checked to return the same users; and a search by e-mail for scale.
import postgres from 'postgres'
import { ROOT } from '../lib/proc.ts'
import type { Stack } from '../lib/stack.ts'
import { signClaims } from '../lib/tokens.ts'
import { type BenchModule, figure, knob, setScale, timed } from './_module.ts'

const ADMIN = 'a1000000-0000-4000-8000-000000000001'
const TYPICAL = 'a1000000-0000-4000-8000-00000000c350' // user 50,000: about 2 rows this month
const HEAVY = 'a1000000-0000-4000-8000-000000000002' // user 2: 10,000 more this month
const PAGE = 50

type PlanNode = {
  'Node Type': string
  'Relation Name'?: string
  'Actual Rows': number
  'Actual Loops': number
  Plans?: PlanNode[]
}

/** Rows each relation's scan nodes returned (actual rows x loops), over the whole plan. */
function rowsByRelation(node: PlanNode, into: Record<string, number> = {}) {
  if (node['Relation Name']) {
    into[node['Relation Name']] = (into[node['Relation Name']] ?? 0) +
      node['Actual Rows'] * node['Actual Loops']
  }
  for (const child of node.Plans ?? []) rowsByRelation(child, into)
  return into
}

const fmt = (t: { p50: number; p99: number }) => `p50 ${t.p50.toFixed(2)} p99 ${t.p99.toFixed(2)}`

export async function benchAiUsage(stack: Stack, runs: number) {
  const admin = postgres(stack.dbUrl, { max: 1, onnotice: () => {} })
  const t0 = performance.now()
  await setScale(admin)
  await admin.file(`${ROOT}/sql/bench/ai_usage_fixture.sql`)
  const [{ users, rows }] = await admin`select (select count(*) from public.profiles)::int as users,
                                               (select count(*) from public.ai_usage)::int as rows`
  console.log(
    `\nToken usage and admin users: ${users.toLocaleString()} users, ${rows.toLocaleString()} usage rows ` +
      `(loaded in ${((performance.now() - t0) / 1000).toFixed(0)}s)`,
  )

  const now = new Date()
  const [year, month] = [now.getUTCFullYear(), now.getUTCMonth() + 1]
  const monthStart = `${year}-${String(month).padStart(2, '0')}-01`

  // monthly_token_usage as the user, as PostgREST runs it; baseline: the same month summed
  // from the usage rows by hand (index on user, created_at).
  console.log(`monthly_token_usage (this month; ${runs} runs each; ms):`)
  for (const [label, user] of [['typical user', TYPICAL], ['heavy user', HEAVY]]) {
    const asUser = postgres(stack.dbUrl, { max: 1, onnotice: () => {} })
    await asUser`select set_config('request.jwt.claims', ${
      JSON.stringify({ sub: user, role: 'authenticated' })
    }, false)`
    await asUser`set role authenticated`
    const aggregate = await timed(
      runs,
      async () => (await asUser`select public.monthly_token_usage(${user}, ${year}, ${month}) as s`)[0].s,
    )
    await asUser.end()
    const byHand = await timed(
      runs,
      async () =>
        (await admin`select coalesce(sum(cost_usd), 0) as cost, count(*)::int as calls
                     from public.ai_usage
                    where user_id = ${user} and created_at >= ${monthStart}::date::timestamp at time zone 'UTC'
                      and created_at < (${monthStart}::date + interval '1 month')::timestamp at time zone 'UTC'`)[
          0
        ],
    )
    const same = Number(aggregate.last.total_cost) === Number(byHand.last.cost) &&
      aggregate.last.calls === byHand.last.calls

    // The plan of the summary's query (private.usage_summary's body): which rows it reads.
    const [{ 'QUERY PLAN': plan }] = await admin.unsafe(
      `explain (analyze, format json)
       with per_category as (
         select t.category, coalesce(sum(m.calls), 0) as calls,
                coalesce(sum(m.input_tokens + m.output_tokens), 0) as tokens,
                coalesce(sum(m.image_count), 0) as images, coalesce(sum(m.cost_usd), 0) as cost
           from private.ai_usage_types t
           left join public.ai_usage_monthly m on m.user_id = $1 and m.month = $2 and m.usage_type = t.usage_type
          group by t.category)
       select jsonb_build_object('total_tokens', sum(tokens), 'total_cost', trim_scale(sum(cost)), 'calls', sum(calls),
                'breakdown', jsonb_object_agg(category, jsonb_build_object('calls', calls, 'tokens', tokens,
                'images', images, 'cost', trim_scale(cost)))) from per_category`,
      [user, monthStart],
    )
    const read = rowsByRelation(plan[0].Plan)
    const planRows = Object.values(read).reduce((a, b) => a + b, 0)
    console.log(
      `  ${label} (${byHand.last.calls.toLocaleString()} calls): aggregate as the user ${fmt(aggregate)} | ` +
        `by hand from usage rows ${fmt(byHand)} (${
          (byHand.p50 / aggregate.p50).toFixed(2)
        }x) | same totals: ${same ? 'yes' : 'NO'}`,
    )
    console.log(
      `    plan reads ${planRows} rows (${Object.entries(read).map(([r, n]) => `${r}: ${n}`).join(', ')}); ` +
        `ai_usage scanned: ${'ai_usage' in read ? 'YES' : 'no'}`,
    )
  }

  // The admin users page: SQL as the super admin, PostgREST directly, and /api/admin/users.
  const asAdmin = postgres(stack.dbUrl, { max: 1, onnotice: () => {} })
  await asAdmin`select set_config('request.jwt.claims', ${
    JSON.stringify({ sub: ADMIN, role: 'authenticated' })
  }, false)`
  await asAdmin`set role authenticated`
  const token = await signClaims({ sub: ADMIN, role: 'authenticated', aud: 'authenticated' }, stack.jwtSecret)
  const sqlPage = await timed(
    runs,
    async () =>
      (await asAdmin`select id from public.admin_list_users(null, null, null, ${PAGE + 1})`).map((r) =>
        r.id as string
      ),
  )
  const rest = await timed(runs, async () => {
    const res = await fetch(`${stack.apiUrl}/rest/v1/rpc/admin_list_users`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        apikey: stack.anonKey,
        'content-type': 'application/json',
      },
      body: JSON.stringify({ page_size: PAGE + 1 }),
    })
    if (res.status !== 200) throw new Error(`rest ${res.status}: ${await res.text()}`)
    return ((await res.json()) as { id: string }[]).map((r) => r.id)
  })
  const apiPage = await timed(runs, async () => {
    const res = await fetch(`${stack.apiUrl}/functions/v1/api/admin/users?limit=${PAGE}`, {
      headers: { authorization: `Bearer ${token}` },
    })
    if (res.status !== 200) throw new Error(`api ${res.status}: ${await res.text()}`)
    return ((await res.json()).users as { id: string }[]).map((r) => r.id)
  })
  const samePage = apiPage.last.length === PAGE && apiPage.last.join() === rest.last.slice(0, PAGE).join() &&
    rest.last.join() === sqlPage.last.join()
  const search = await timed(Math.max(5, Math.floor(runs / 4)), async () => {
    const res = await fetch(`${stack.apiUrl}/functions/v1/api/admin/users?limit=${PAGE}&q=bench-ai-4242@`, {
      headers: { authorization: `Bearer ${token}` },
    })
    return ((await res.json()).users as unknown[]).length
  })
  console.log(`admin users, first page of ${PAGE} with this month's usage (${runs} runs; ms):`)
  console.log(
    `  SQL ${fmt(sqlPage)} | PostgREST rpc ${fmt(rest)} | /api/admin/users ${fmt(apiPage)} ` +
      `(${(apiPage.p50 / rest.p50).toFixed(2)}x PostgREST) | identical users: ${samePage ? 'yes' : 'NO'}`,
  )
  // A part of an address (no @): the trigram indexes, whose cost grows with the users that share
  // the part's trigrams (every bench address starts bench-ai-: a worst case).
  const partSearch = await timed(Math.max(5, Math.floor(runs / 4)), async () => {
    const res = await fetch(`${stack.apiUrl}/functions/v1/api/admin/users?limit=${PAGE}&q=ai-4242`, {
      headers: { authorization: `Bearer ${token}` },
    })
    return ((await res.json()).users as unknown[]).length
  })
  console.log(
    `  search by e-mail (q=bench-ai-4242@, the start of an address, ${search.last} match) through /api: ${
      fmt(search)
    }`,
  )
  console.log(
    `  search by a part of an address (q=ai-4242, ${partSearch.last} matches) through /api: ${
      fmt(partSearch)
    }`,
  )
  const sqlSearch = await timed(
    Math.max(5, Math.floor(runs / 4)),
    async () =>
      (await asAdmin`select id from public.admin_list_users('bench-ai-4242@', null, null, ${PAGE})`).length,
  )
  console.log(`  the same search in SQL as the super admin: ${fmt(sqlSearch)}`)
  figure('admin search by e-mail, /api p50', search.p50, 'ms', '< 50 ms')
  figure('admin search by a part of an address, /api p50', partSearch.p50, 'ms')
  figure('admin users first page, /api p50', apiPage.p50, 'ms', '< 50 ms')
  console.log('targets: /api/admin/users p50 < 50 ms; the monthly read never scans ai_usage')
  await Promise.all([admin.end(), asAdmin.end()])
}

export const bench: BenchModule = {
  name: 'ai',
  run: (stack) => benchAiUsage(stack, knob('BENCH_AI_RUNS', 200)),
}
