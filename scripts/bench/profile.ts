// GET /api/user/profile through the gateway versus the same read directly through
// /rest/v1/profiles, under the same closed-loop load, and their throughput ratio.
import postgres from 'postgres'
import { type BenchModule, knob } from './_module.ts'
import type { Stack } from '../lib/stack.ts'
import { mintUserToken } from '../lib/tokens.ts'
import { load, printTable } from './_load.ts'

export async function benchProfile(stack: Stack, o: { seconds: number; concurrency: number }) {
  const sql = postgres(stack.dbUrl, { max: 2, onnotice: () => {} })
  await sql`select private.new_auth_user(jsonb_build_object('email', 'bench-' || g || '@bench.local')) from generate_series(1, 1000) g`
  const { userId, token } = await mintUserToken(sql, 'bench-500@bench.local', { secret: stack.jwtSecret })
  await sql.end()

  console.log(`Profile read: ${o.concurrency} concurrent clients, ${o.seconds}s each, 1,000 users in the database\n`)
  const auth = { authorization: `Bearer ${token}`, apikey: stack.anonKey }
  const direct = await load('direct  GET /rest/v1/profiles?id=eq.<me>', () =>
    fetch(`${stack.apiUrl}/rest/v1/profiles?id=eq.${userId}&select=*`, {
      headers: { ...auth, accept: 'application/vnd.pgrst.object+json' },
    }), o)
  const endpoint = await load('endpoint GET /api/user/profile', () =>
    fetch(`${stack.apiUrl}/functions/v1/api/user/profile`, { headers: auth }), o)
  printTable([direct, endpoint])
  console.log(`\nratio endpoint/direct throughput: ${(endpoint.rps / direct.rps).toFixed(2)} (target >= 0.70)`)
}

export const bench: BenchModule = {
  name: 'profile',
  run: (stack) => benchProfile(stack, { seconds: knob('BENCH_SECONDS', 5), concurrency: knob('BENCH_CONCURRENCY', 16) }),
}
