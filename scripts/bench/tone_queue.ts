// Tone analysis as a queued job (supabase/schemas/journal/tone_queue.sql), with the fake model
// (tests/fakes/ai.ts) answering every analysis after BENCH_TONE_MODEL_MS (800):
//   the write without a mood against the same write with one (target: p50 within 1.5x), through
//   POST /api/journal and through the RPC directly (PostgREST); the time from the write until
//   the mood is stored (target: the model's latency + 500 ms p50), one write every 50 ms;
//   what the queue trigger adds to one insert of an entry's text (target < 200 µs).
import postgres from 'postgres'
import type { Stack } from '../lib/stack.ts'
import { signClaims } from '../lib/tokens.ts'
import { type BenchModule, figure, knob } from './_module.ts'

const MARKER = 'benchtonequeue'
const fmt = (t: { p50: number; p99: number }) => `p50 ${t.p50.toFixed(2)} p99 ${t.p99.toFixed(2)}`

function percentiles(ms: number[]) {
  const s = [...ms].sort((a, b) => a - b)
  return { p50: s[Math.floor(s.length * 0.5)], p99: s[Math.min(s.length - 1, Math.floor(s.length * 0.99))] }
}

async function scriptModel(stack: Stack, delayMs: number) {
  const control = stack.functionEnv.AI_FAKE_CONTROL_URL
  if (!control) throw new Error('the bench stack runs without the fake model (AI_FAKE_CONTROL_URL)')
  const reply = {
    json: { primaryTone: 'joyful', tones: [{ tone: 'joyful', score: 0.9 }], confidence: 0.9 },
    usage: { prompt_tokens: 100, completion_tokens: 10 },
    delay_ms: delayMs,
  }
  const res = await fetch(`${control}/script`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ match: MARKER, replies: [reply] }),
  })
  if (!res.ok) throw new Error(`scripting the fake model: ${res.status}`)
  await res.body?.cancel()
}

async function benchToneQueue(stack: Stack, runs: number, modelMs: number) {
  const admin = postgres(stack.dbUrl, { max: 2, onnotice: () => {} })
  await scriptModel(stack, modelMs)
  const [{ id: userId }] = await admin`select private.new_auth_user(${
    admin.json({ email: `bench-tone-${crypto.randomUUID().slice(0, 8)}@bench.local` })
  }) as id`
  const [{ cap }] = await admin`select daily_cap_per_user as cap from private.ai_usage_types where usage_type = 'tone_analysis'`
  await admin`update private.ai_usage_types set daily_cap_per_user = null where usage_type = 'tone_analysis'`
  const token = await signClaims({ sub: userId, role: 'authenticated', aud: 'authenticated' }, stack.jwtSecret)
  const headers = { authorization: `Bearer ${token}`, apikey: stack.anonKey, 'content-type': 'application/json' }

  const paths = {
    '/api': async (body: Record<string, unknown>) => {
      const res = await fetch(`${stack.apiUrl}/functions/v1/api/journal`, { method: 'POST', headers, body: JSON.stringify(body) })
      const reply = await res.json()
      if (res.status !== 201) throw new Error(`POST /api/journal: ${res.status} ${JSON.stringify(reply)}`)
      return reply.entry.id as string
    },
    RPC: async (body: Record<string, unknown>) => {
      const res = await fetch(`${stack.apiUrl}/rest/v1/rpc/create_journal_entry?select=id,mood_pending`, {
        method: 'POST',
        headers: { ...headers, accept: 'application/vnd.pgrst.object+json' },
        body: JSON.stringify(body),
      })
      const reply = await res.json()
      if (res.status !== 200) throw new Error(`rpc create_journal_entry: ${res.status} ${JSON.stringify(reply)}`)
      return reply.id as string
    },
  }

  console.log(`\nTone analysis queue: the fake model answers after ${modelMs} ms; ${runs} writes each, one every 50 ms`)
  for (const [label, write] of Object.entries(paths)) {
    const time = async (body: Record<string, unknown>) => {
      const ms: number[] = []
      const ids: string[] = []
      for (let i = 0; i < runs; i++) {
        const t0 = performance.now()
        ids.push(await write({ title: `bench ${i}`, content: `A day like any other. ${MARKER} ${i}`, ...body }))
        const took = performance.now() - t0
        ms.push(took)
        await new Promise((r) => setTimeout(r, Math.max(0, 50 - took)))
      }
      return { ...percentiles(ms), ids }
    }
    for (let i = 0; i < 5; i++) await write({ title: 'warm', mood: 'calm' }) // connections, JIT
    const withMood = await time({ mood: 'calm' })
    const without = await time({})
    // Until the mood is stored: the entry's update (apply_tone_analysis) against its insert.
    const deadline = Date.now() + 30_000
    let stored: { ms: number }[] = []
    while (Date.now() < deadline) {
      stored = await admin`select extract(epoch from (updated_at - created_at)) * 1000 as ms
                             from public.journal_entries where id = any(${without.ids}::uuid[]) and mood is not null`
      if (stored.length === without.ids.length) break
      await new Promise((r) => setTimeout(r, 100))
    }
    const moodMs = percentiles(stored.map((r) => Number(r.ms)))
    console.log(
      `  ${label}: write without a mood ${fmt(without)} | with a mood ${fmt(withMood)} (${
        (without.p50 / withMood.p50).toFixed(2)
      }x) | mood stored after ${fmt(moodMs)} (${stored.length}/${without.ids.length} entries)`,
    )
    figure(`tone: ${label} write without a mood p50`, without.p50, 'ms', `<= 1.5x with a mood (${(withMood.p50 * 1.5).toFixed(2)})`)
    figure(`tone: ${label} write without a mood p99`, without.p99, 'ms')
    figure(`tone: ${label} mood stored after the write p50`, moodMs.p50, 'ms', `<= ${modelMs + 500} (model + 500)`)
  }

  // What the trigger adds to one insert of a text: one-row inserts in a loop, trigger on against
  // off (rolled back: nothing is queued or requested), as the user (auth.uid() set).
  const [{ n }] = await admin`select count(*)::int as n from public.journal_entries where user_id = ${userId}`
  await admin`update private.tone_worker set requested_at = now()` // as while a worker runs: no request
  const toggle = (on: boolean) =>
    admin.unsafe(`alter table public.journal_entry_contents ${on ? 'enable' : 'disable'} trigger journal_entry_contents_queue_tone_analysis`)
  const perInsert = async (trigger: boolean) => {
    if (!trigger) await toggle(false)
    let ms = 0
    try {
      await admin.begin(async (tx) => {
        await tx`create temp table cost_ids on commit drop as
                 with made as (insert into public.journal_entries (user_id, title)
                               select ${userId}, 'cost ' || i from generate_series(1, 2000) i returning id)
                 select id from made`
        await tx`select set_config('request.jwt.claims', ${JSON.stringify({ sub: userId, role: 'authenticated' })}, true)`
        const t0 = performance.now()
        // userId is the uuid this bench created: safe to inline (a do block takes no parameters).
        await tx.unsafe(`do $$ declare e uuid; begin
                   for e in select id from cost_ids loop
                     insert into public.journal_entry_contents (entry_id, user_id, content) values (e, '${userId}', 'a text to analyse');
                   end loop; end $$`)
        ms = performance.now() - t0
        throw new Error('rollback') // nothing queued, nothing requested
      }).catch((e) => {
        if (e.message !== 'rollback') throw e
      })
    } finally {
      if (!trigger) await toggle(true)
    }
    return (ms / 2000) * 1000 // µs per insert
  }
  const on: number[] = []
  const off: number[] = []
  await perInsert(true) // warm-up
  await perInsert(false)
  for (let i = 0; i < 7; i++) {
    off.push(await perInsert(false))
    on.push(await perInsert(true))
  }
  const added = percentiles(on).p50 - percentiles(off).p50
  console.log(
    `  one insert of a text (${n} entries of the user): with the queue trigger ${percentiles(on).p50.toFixed(1)} µs, ` +
      `without ${percentiles(off).p50.toFixed(1)} µs: +${added.toFixed(1)} µs`,
  )
  figure('tone: queue trigger cost per insert', added, 'µs', '< 200 µs')
  await admin`update private.tone_worker set requested_at = null`
  await admin`update private.ai_usage_types set daily_cap_per_user = ${cap} where usage_type = 'tone_analysis'`
  await admin.end()
}

export const bench: BenchModule = {
  name: 'tone',
  run: (stack) => benchToneQueue(stack, knob('BENCH_TONE_RUNS', 60), knob('BENCH_TONE_MODEL_MS', 800)),
}
