// The write rate limit's cost on a PostgREST write (docs/rate_limits.md): p50 of the same PATCH
// of a user's profile straight to PostgREST, with the limit (the pre-request counts it) and with
// it switched off (private.limit_writes replaced by an empty body, so only the call remains), in
// alternating blocks of the same run; the difference is the limit's cost (target < 200 µs).
import postgres from 'postgres'
import { type BenchModule, figure, knob } from './_module.ts'
import type { Stack } from '../lib/stack.ts'
import { mintUserToken } from '../lib/tokens.ts'

const SWITCHED_OFF = `create or replace function private.limit_writes() returns void
  language plpgsql security definer set search_path = '' as $$ begin return; end $$`

export async function benchRateLimits(stack: Stack, o: { rounds: number; writes: number }) {
  const sql = postgres(stack.dbUrl, { max: 1, onnotice: () => {} })
  const rest = stack.functionEnv.SUPABASE_REST_URL
  const email = `bench-limit-${crypto.randomUUID().slice(0, 8)}@bench.local`
  const probeEmail = `bench-probe-${crypto.randomUUID().slice(0, 8)}@bench.local`
  await sql`select private.new_auth_user(jsonb_build_object('email', e)) from unnest(${[email, probeEmail]}::text[]) e`
  const writer = await mintUserToken(sql, email, { secret: stack.jwtSecret })
  const probe = await mintUserToken(sql, probeEmail, { secret: stack.jwtSecret })
  // The probe has no budget: its write says whether the limit is on (429) or off (204).
  await sql`insert into private.write_rate_limits (subject_kind, subject, max_writes, window_seconds)
            values ('user', ${probe.userId}, 0, 300)`
  const [{ def }] = await sql`select pg_get_functiondef('private.limit_writes()'::regprocedure) as def`

  const write = async (who: { userId: string; token: string }, i: number) => {
    const res = await fetch(`${rest}/profiles?id=eq.${who.userId}`, {
      method: 'PATCH',
      headers: {
        apikey: stack.anonKey,
        authorization: `Bearer ${who.token}`,
        'content-type': 'application/json',
        prefer: 'return=minimal',
      },
      body: JSON.stringify({ full_name: `Bench ${i}` }),
    })
    await res.arrayBuffer()
    return res.status
  }
  const setMode = async (on: boolean) => {
    await sql.unsafe(on ? def : SWITCHED_OFF)
    const status = await write(probe, 0)
    if (status !== (on ? 429 : 204)) throw new Error(`the limit should be ${on ? 'on' : 'off'}: the probe got ${status}`)
  }

  const latencies: Record<'on' | 'off', number[]> = { on: [], off: [] }
  try {
    for (let round = 0; round < o.rounds; round++) {
      for (const mode of round % 2 ? ['off', 'on'] as const : ['on', 'off'] as const) {
        await setMode(mode === 'on')
        for (let i = 0; i < 30; i++) await write(writer, i) // warm the connections' plans
        for (let i = 0; i < o.writes; i++) {
          const t0 = performance.now()
          const status = await write(writer, i)
          latencies[mode].push(performance.now() - t0)
          if (status !== 204) throw new Error(`write ${mode}: ${status}`)
        }
      }
    }
  } finally {
    await sql.unsafe(def)
    await sql.end()
  }
  const p50 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
  const on = p50(latencies.on)
  const off = p50(latencies.off)
  const costMicros = (on - off) * 1000
  console.log(`PATCH /profiles straight to PostgREST, one client, ${o.rounds} alternating blocks of ${o.writes} writes each way`)
  console.log(`  p50 with the write limit:     ${on.toFixed(3)} ms`)
  console.log(`  p50 with the limit switched off: ${off.toFixed(3)} ms`)
  console.log(`  the limit's cost per write:   ${costMicros.toFixed(0)} µs (target < 200 µs)`)
  figure('write rate limit: cost per PostgREST write (p50)', Math.round(costMicros), 'µs', '< 200')
}

export const bench: BenchModule = {
  name: 'rate_limits',
  run: (stack) => benchRateLimits(stack, { rounds: knob('BENCH_RATE_ROUNDS', 6), writes: knob('BENCH_RATE_WRITES', 400) }),
}
