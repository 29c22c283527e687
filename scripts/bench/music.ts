// Listening history at scale, with 1,000,000 plays (sql/bench/music_fixture.sql):
//   linking a new entry: p50 of POST /api/journal with the linking trigger, against the same
//   create with the trigger disabled (alternating blocks); and the trigger's lookup alone, against a
//   primary-key lookup of a profile (one index probe) as its baseline, with its plan;
//   one sync-all chunk for 1,000 users against the local provider (tests/fakes/music.ts run
//   as its own process): the production sync code (functions/_shared/music.ts syncAll) runs
//   in this process against the stack's PostgREST with the service key, as the edge function
//   does; baseline: the same provider reads alone (no database). Prints throughput and how
//   many users one 150-second edge-function run syncs.
// A second round gives the provider a network's latency (150 ms per answer), which is what
// bounds a real run. Knobs: BENCH_MUSIC_RUNS (API creates per side, default 40),
// BENCH_MUSIC_USERS (chunk, default 1000), BENCH_MUSIC_LATENCY_USERS (200),
// BENCH_MUSIC_LATENCY_MS (150), MUSIC_SYNC_CONCURRENCY (8).
import postgres from 'postgres'
import { ROOT } from '../lib/proc.ts'
import type { Stack } from '../lib/stack.ts'
import { signClaims } from '../lib/tokens.ts'
import { type BenchModule, knob, setScale, timed } from './_module.ts'

const userId = (n: number) => `b12a0000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`

async function timedSamples(n: number, fn: () => Promise<unknown>) {
  const ms: number[] = []
  for (let i = 0; i < n; i++) {
    const t0 = performance.now()
    await fn()
    ms.push(performance.now() - t0)
  }
  return ms
}
function percentiles(ms: number[]) {
  const sorted = [...ms].sort((a, b) => a - b)
  return { p50: sorted[Math.floor(sorted.length * 0.5)], p99: sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))] }
}
const fmt = (t: { p50: number; p99: number }) => `p50 ${t.p50.toFixed(2)} ms, p99 ${t.p99.toFixed(2)} ms`

async function startFakeProvider(): Promise<{ env: Record<string, string>; stop(): Promise<void> }> {
  const child = new Deno.Command(`${ROOT}/node_modules/.bin/deno`, {
    args: ['run', '-A', `${ROOT}/tests/fakes/music.ts`],
    stdout: 'piped',
    stderr: 'inherit',
  }).spawn()
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader()
  let text = ''
  while (!text.includes('\n')) {
    const { value, done } = await reader.read()
    if (done) throw new Error('the fake music provider exited before printing its env')
    text += value
  }
  reader.releaseLock()
  child.stdout.cancel().catch(() => {})
  return {
    env: JSON.parse(text.split('\n')[0]),
    async stop() {
      child.kill('SIGTERM')
      await child.status
    },
  }
}

async function benchLinking(stack: Stack, db: postgres.Sql, runs: number) {
  // Entries as real users through /api (mood given, so no tone analysis).
  const tokens = await Promise.all(Array.from({ length: 20 }, (_, i) =>
    signClaims({ sub: userId(1 + i * 37), role: 'authenticated', aud: 'authenticated' }, stack.jwtSecret)))
  let i = 0
  const create = async () => {
    i++
    const res = await fetch(`${stack.apiUrl}/functions/v1/api/journal`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tokens[i % tokens.length]}`, 'content-type': 'application/json' },
      body: JSON.stringify({ title: `bench entry ${i}`, content: 'listening', mood: 'calm' }),
    })
    const body = await res.json()
    if (res.status !== 201) throw new Error(`POST /api/journal ${res.status}: ${JSON.stringify(body)}`)
    return body.entry
  }
  // Alternating blocks (trigger on, trigger off), each after one discarded request, so load
  // from elsewhere on the machine weighs on both sides alike.
  const samples = { linked: [] as number[], unlinked: [] as number[] }
  const toggle = (on: boolean) =>
    on ? db`alter table public.journal_entries enable trigger journal_entries_track_link`
       : db`alter table public.journal_entries disable trigger journal_entries_track_link`
  await timed(5, create) // warm-up
  const sample = await create()
  try {
    for (let block = 0; block < Math.ceil(runs / 10) * 2; block++) {
      const on = block % 2 === 0
      await toggle(on)
      await create()
      const t = await timedSamples(10, create)
      samples[on ? 'linked' : 'unlinked'].push(...t)
    }
  } finally {
    await toggle(true)
  }
  const linked = percentiles(samples.linked)
  const unlinked = percentiles(samples.unlinked)
  console.log(`linking a new entry (POST /api/journal, ${samples.linked.length} runs each, alternating blocks of 10):`)
  console.log(`  with linking ${fmt(linked)} | trigger disabled ${fmt(unlinked)} ` +
    `(${(linked.p50 / unlinked.p50).toFixed(2)}x) | linked: ${sample.music_track_id ? `yes (${sample.track?.name})` : 'NO'}`)

  // The lookup and its baseline alternate, one each per round.
  const rounds = { lookup: [] as number[], probe: [] as number[] }
  for (let k = 0; k < runs * 5; k++) {
    const u = userId(1 + ((k * 7) % 1000))
    rounds.lookup.push(...await timedSamples(1, () =>
      db`select p.track_id from public.music_plays p where p.user_id = ${u} and p.played_at <= now()
          order by p.played_at desc limit 1`))
    rounds.probe.push(...await timedSamples(1, () => db`select id from public.profiles where id = ${u}`))
  }
  const lookup = percentiles(rounds.lookup)
  const probe = percentiles(rounds.probe)
  const [{ 'QUERY PLAN': plan }] = await db.unsafe(
    `explain (analyze, buffers, format json) select p.track_id from public.music_plays p
      where p.user_id = $1 and p.played_at <= now() order by p.played_at desc limit 1`,
    [userId(500)],
  )
  const scan = plan[0].Plan.Plans?.[0] ?? plan[0].Plan
  console.log(`  the trigger's lookup alone (${runs * 5} runs): ${fmt(lookup)} | a profile by primary key ${fmt(probe)} ` +
    `(${(lookup.p50 / probe.p50).toFixed(2)}x)`)
  console.log(`    plan: ${scan['Node Type']} using ${scan['Index Name']}, ${scan['Actual Rows']} row, ` +
    `${(scan['Shared Hit Blocks'] ?? 0) + (scan['Shared Read Blocks'] ?? 0)} buffers`)
}

/** Links `users` bench users to fresh listeners at the fake (20 new plays each); returns their tokens. */
async function linkListeners(db: postgres.Sql, control: string, users: number, latencyMs: number, round: string) {
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${control}${path}`, { method: 'POST', body: JSON.stringify(body) })
    if (!res.ok) throw new Error(`${path}: ${res.status}`)
    return await res.json()
  }
  const links: { user_id: string; music_user_id: string; access: string; refresh: string }[] = []
  for (let n = 1; n <= users; n++) {
    const id = `bench-listener-${round}-${n}`
    await post('/user', {
      id,
      latency_ms: latencyMs,
      plays: Array.from({ length: 20 }, (_, g) => ({
        track_id: `bt${1 + ((n * 31 + g * 17) % 5000)}`,
        played_at: new Date(Date.now() - (g + 1) * 120_000).toISOString(),
      })),
    })
    const t = await post('/grant', { user: id })
    links.push({ user_id: userId(n), music_user_id: id, access: t.access_token, refresh: t.refresh_token })
  }
  // A fresh link (and fresh plays: the previous round's are removed) for each bench user.
  await db`delete from public.music_plays where user_id::text like 'b12a0000-%' and played_at > now() - interval '1 hour'`
  await db`select public.music_save_link(l.user_id::uuid, l.music_user_id, 'user-read-recently-played', l.access, l.refresh,
                                         now() + interval '1 hour')
             from json_to_recordset(${db.json(links as unknown as postgres.JSONValue)}::json)
                  as l(user_id text, music_user_id text, access text, refresh text)`
  // Only this round's links are due.
  const ids = links.map((l) => l.user_id)
  await db`update public.music_connections set last_synced_at = now() where user_id <> all(${ids}::uuid[])`
  await db`update public.music_connections set last_synced_at = null, sync_claimed_until = null where user_id = any(${ids}::uuid[])`
  return links.map((l) => l.access)
}

async function benchSyncAll(stack: Stack, db: postgres.Sql, rounds: { users: number; latencyMs: number }[]) {
  const fake = await startFakeProvider()
  try {
    // The production code, pointed at the stack and the fake, as the edge function would be.
    for (const [k, v] of Object.entries({ ...stack.functionEnv, ...fake.env })) Deno.env.set(k, v)
    const { musicConfig, recentlyPlayed, syncAll } = await import('../../functions/_shared/music.ts')
    const { serviceDb } = await import('../../functions/_shared/db.ts')
    const cfg = musicConfig()!
    cfg.budgetMs = 10 * 60_000 // measure the whole chunk

    for (const [i, { users, latencyMs }] of rounds.entries()) {
      const tokens = await linkListeners(db, fake.env.MUSIC_FAKE_CONTROL_URL, users, latencyMs, String(i))
      // Baseline: the same provider reads with the same concurrency, no database.
      const queue = [...tokens]
      const t0 = performance.now()
      await Promise.all(Array.from({ length: cfg.concurrency }, async () => {
        for (let a = queue.shift(); a; a = queue.shift()) await recentlyPlayed(cfg, a, Date.now() - 3 * 3600_000)
      }))
      const providerOnly = (performance.now() - t0) / 1000

      const t1 = performance.now()
      const r = await syncAll(cfg, serviceDb(), users)
      const seconds = (performance.now() - t1) / 1000
      const perSecond = r.synced / seconds
      console.log(`sync-all, one chunk of ${users.toLocaleString()} users, provider latency ${latencyMs} ms ` +
        `(20 new plays each, concurrency ${cfg.concurrency}):`)
      console.log(`  ${seconds.toFixed(1)} s: synced ${r.synced}, failed ${r.failed}, plays added ${r.plays_added.toLocaleString()}, ` +
        `remaining ${r.remaining} | ${perSecond.toFixed(1)} users/s, ${(r.plays_added / seconds).toFixed(0)} plays/s`)
      console.log(`  provider reads alone ${providerOnly.toFixed(1)} s (${(seconds / providerOnly).toFixed(2)}x) | ` +
        `one 150 s edge-function run: about ${Math.floor(perSecond * 150).toLocaleString()} users`)
      if (r.errors.length) console.log(`  first errors: ${r.errors.slice(0, 3).join(' | ')}`)
    }
  } finally {
    await fake.stop()
  }
}

export const bench: BenchModule = {
  name: 'music',
  async run(stack) {
    const db = postgres(stack.dbUrl, { max: 1, onnotice: () => {} })
    try {
      const t0 = performance.now()
      await setScale(db)
      await db.file(`${ROOT}/sql/bench/music_fixture.sql`)
      const [{ plays }] = await db`select count(*)::int as plays from public.music_plays`
      console.log(`Listening history: ${plays.toLocaleString()} plays (loaded in ${((performance.now() - t0) / 1000).toFixed(0)}s)`)
      await benchLinking(stack, db, knob('BENCH_MUSIC_RUNS', 40))
      await benchSyncAll(stack, db, [
        { users: knob('BENCH_MUSIC_USERS', 1000), latencyMs: 0 },
        { users: knob('BENCH_MUSIC_LATENCY_USERS', 200), latencyMs: knob('BENCH_MUSIC_LATENCY_MS', 150) },
      ])
    } finally {
      await db.end()
    }
  },
}
