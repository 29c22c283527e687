// Tone packs, with sql/bench/tone_packs_fixture.sql:
//   A purchase storm: 1,000 purchases at once from 100 users (half of them can afford only two
//   of the eight 20-drop packs they ask for; each asks for two packs twice), through
//   POST /api/tone-packs/:id/purchase, and the same storm straight through PostgREST
//   (rpc/purchase_tone_pack) as the same-run baseline. Then the invariants: every balance
//   equals the sum of its ledger deltas, none is negative, no pack was charged twice, and
//   exactly the affordable purchases went through.
//   The entry icon seam: a 50-entry page of journal_feed as a viewer whose active pack has an
//   icon for every entry, against a viewer without an active pack and the page by hand.
import postgres from 'postgres'
import { ROOT } from '../lib/proc.ts'
import type { Stack } from '../lib/stack.ts'
import { signClaims } from '../lib/tokens.ts'
import { type BenchModule, knob } from './_module.ts'

const id = (n: number) => `d8000000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`
const packId = (storm: 1 | 2, k: number) => `d8000000-0000-4000-8000-0000000a${(storm * 16 + k).toString(16).padStart(4, '0')}`
const USERS = 100
const PACKS = 8
const PRICE = 20

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]

function shuffle<T>(xs: T[]) {
  for (let i = xs.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1))
    ;[xs[i], xs[j]] = [xs[j], xs[i]]
  }
  return xs
}

/** Fires every request at once; returns throughput, latency percentiles and status counts. */
async function storm(requests: (() => Promise<Response>)[]) {
  const t0 = performance.now()
  const results = await Promise.all(requests.map(async (send) => {
    const start = performance.now()
    try {
      const res = await send()
      await res.arrayBuffer()
      return { status: res.status, ms: performance.now() - start }
    } catch {
      return { status: 0, ms: performance.now() - start }
    }
  }))
  const seconds = (performance.now() - t0) / 1000
  const ms = results.map((r) => r.ms).sort((a, b) => a - b)
  const statuses: Record<number, number> = {}
  for (const r of results) statuses[r.status] = (statuses[r.status] ?? 0) + 1
  return { rps: results.length / seconds, seconds, p50: percentile(ms, 50), p99: percentile(ms, 99), statuses }
}

/** Each user asks for every pack once and for the first two again: 10 requests, shuffled. */
function plan(storm: 1 | 2, firstUser: number) {
  const asks: { user: string; pack: string }[] = []
  for (let u = 0; u < USERS; u++) {
    for (const k of [1, 2, 3, 4, 5, 6, 7, 8, 1, 2]) asks.push({ user: id(firstUser + u), pack: packId(storm, k) })
  }
  return shuffle(asks)
}

async function invariants(sql: postgres.Sql) {
  const [r] = await sql`
    with users as (select p.id, p.drops_balance from public.profiles p where p.id::text like 'd8000000-%')
    select
      (select count(*)::int from users u
        where u.drops_balance <> (select coalesce(sum(t.amount), 0) from public.drops_transactions t where t.user_id = u.id)) as balance_not_ledger,
      (select count(*)::int from users u where u.drops_balance < 0) as negative,
      (select count(*)::int from (select t.user_id, t.item_id from public.drops_transactions t
                                   where t.type = 'purchase' and t.user_id in (select id from users)
                                   group by 1, 2 having count(*) > 1) x) as charged_twice,
      (select count(*)::int from public.tone_pack_purchases b where b.user_id in (select id from users)
          and not exists (select 1 from public.drops_transactions t where t.id = b.transaction_id and t.amount = -b.price_drops)) as purchase_without_charge`
  return r as { balance_not_ledger: number; negative: number; charged_twice: number; purchase_without_charge: number }
}

export async function benchTonePacks(stack: Stack, iterations: number) {
  const sql = postgres(stack.dbUrl, { max: 1, onnotice: () => {} })
  await sql.file(`${ROOT}/sql/bench/tone_packs_fixture.sql`)
  const tokens = new Map<string, string>()
  for (const n of [...Array(USERS).keys()].flatMap((i) => [0x101 + i, 0x201 + i])) {
    tokens.set(id(n), await signClaims({ sub: id(n), role: 'authenticated', aud: 'authenticated' }, stack.jwtSecret))
  }

  console.log(`\nTone pack purchase storm: ${USERS * 10} purchases at once from ${USERS} users ` +
    `(half hold 1,000 drops, half 45; ${PACKS} packs of ${PRICE}; each user asks for 2 packs twice)\n`)
  const viaApi = await storm(plan(1, 0x101).map((a) => () =>
    fetch(`${stack.apiUrl}/functions/v1/api/tone-packs/${a.pack}/purchase`, {
      method: 'POST', headers: { authorization: `Bearer ${tokens.get(a.user)}` },
    })))
  const direct = await storm(plan(2, 0x201).map((a) => () =>
    fetch(`${stack.apiUrl}/rest/v1/rpc/purchase_tone_pack`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tokens.get(a.user)}`, apikey: stack.anonKey, 'content-type': 'application/json' },
      body: JSON.stringify({ pack_id: a.pack }),
    })))
  const row = (name: string, r: Awaited<ReturnType<typeof storm>>) =>
    console.log(`${name.padEnd(44)}${r.rps.toFixed(0).padEnd(10)}${r.p50.toFixed(1).padEnd(10)}${r.p99.toFixed(1).padEnd(10)}` +
      Object.entries(r.statuses).map(([s, n]) => `${s}: ${n}`).join(', '))
  console.log(`${'case'.padEnd(44)}${'req/s'.padEnd(10)}${'p50 ms'.padEnd(10)}${'p99 ms'.padEnd(10)}statuses`)
  row('endpoint POST /api/tone-packs/:id/purchase', viaApi)
  row('direct   POST /rest/v1/rpc/purchase_tone_pack', direct)
  console.log(`ratio endpoint/direct throughput: ${(viaApi.rps / direct.rps).toFixed(2)}`)

  // Rich users buy all 8 packs, poor ones 2 (45 drops): 100 * 8 / 2 + 100 * 2 / 2 = 500 per storm.
  const expected = (USERS / 2) * PACKS + (USERS / 2) * 2
  const succeeded = (r: Awaited<ReturnType<typeof storm>>) => (r.statuses[200] ?? 0) + (r.statuses[201] ?? 0)
  const inv = await invariants(sql)
  const [{ bought }] = await sql`select count(*)::int as bought from public.tone_pack_purchases where user_id::text like 'd8000000-%'`
  const violations = inv.balance_not_ledger + inv.negative + inv.charged_twice + inv.purchase_without_charge +
    Math.abs(bought - 2 * expected) + Math.abs(succeeded(viaApi) - expected) + Math.abs(succeeded(direct) - expected)
  console.log(`invariants: balances not equal to their ledger ${inv.balance_not_ledger}, negative balances ${inv.negative}, ` +
    `packs charged twice ${inv.charged_twice}, purchases without their charge ${inv.purchase_without_charge}, ` +
    `purchases ${bought} (expected ${2 * expected}) => violations: ${violations}`)

  // The icon seam on a 50-entry page, as SQL with the viewer's role and claims. Each run times
  // the three statements alone, alternately, inside one transaction (claims set in between).
  const feed = (tx: postgres.TransactionSql) =>
    tx`select id, tone_icon_url from public.journal_feed('own', null, null, null, null, null, null, null, null, 50)`
  const as = (tx: postgres.TransactionSql, viewer: string) =>
    tx`select set_config('request.jwt.claims', ${JSON.stringify({ sub: viewer, role: 'authenticated' })}, true)`
  const ms: number[][] = [[], [], []]
  let icons = 0
  for (let i = 0; i < iterations; i++) {
    await sql.begin(async (tx) => {
      await tx`set local role authenticated`
      const steps: [string | null, () => Promise<postgres.RowList<postgres.Row[]>>][] = [
        [id(0x301), () => feed(tx)],
        [id(0x302), () => feed(tx)],
        [null, () => tx`select e.id, e.mood from public.journal_entries e
                          left join public.journal_entry_contents c on c.entry_id = e.id
                         where e.user_id = ${id(0x301)} order by e.created_at desc, e.id desc limit 50`],
      ]
      for (const [j, [viewer, run]] of steps.entries()) {
        if (viewer) await as(tx, viewer)
        else await tx`reset role`
        const t0 = performance.now()
        const rows = await run()
        ms[j].push(performance.now() - t0)
        if (j === 0) icons = rows.filter((r) => r.tone_icon_url).length
      }
    })
  }
  const [on, off, hand] = ms.map((xs) => xs.sort((x, y) => x - y)).map((xs) => ({ p50: percentile(xs, 50), p99: percentile(xs, 99) }))
  console.log(`\nEntry icons (journal_feed, 50 entries, ${icons} with an icon; SQL as the viewer, ${iterations} runs each):`)
  console.log(`  active pack       p50 ${on.p50.toFixed(2)} ms  p99 ${on.p99.toFixed(2)} ms`)
  console.log(`  no active pack    p50 ${off.p50.toFixed(2)} ms  p99 ${off.p99.toFixed(2)} ms`)
  console.log(`  by hand, no seam  p50 ${hand.p50.toFixed(2)} ms  p99 ${hand.p99.toFixed(2)} ms (postgres, no RLS)`)
  console.log(`  icon cost per entry: ${((on.p50 - off.p50) / 50 * 1000).toFixed(1)} us; ratio active/no pack ${(on.p50 / off.p50).toFixed(2)}`)
  await sql.end()
  if (violations !== 0 || icons !== 50) throw new Error(`tone packs: ${violations} invariant violations, ${icons}/50 icons`)
}

export const bench: BenchModule = {
  name: 'tone_packs',
  run: (stack) => benchTonePacks(stack, knob('BENCH_ITERATIONS', 200)),
}
