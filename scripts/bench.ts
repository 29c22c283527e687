// npm run bench: performance figures from a throw-away stack, each with its baseline
// measured in the same run. Targets live in the issues; this prints, it does not judge.
import postgres from 'postgres'
import { benchJournalFeed } from './bench/journal_feed.ts'
import { load, printTable } from './bench/load.ts'
import { StackError } from './lib/proc.ts'
import { startStack } from './lib/stack.ts'
import { mintUserToken } from './lib/tokens.ts'

const base = Number(Deno.env.get('BENCH_PORT_BASE') ?? 26321)
const seconds = Number(Deno.env.get('BENCH_SECONDS') ?? 5)
const concurrency = Number(Deno.env.get('BENCH_CONCURRENCY') ?? 16)
const dataDir = await Deno.makeTempDir({ prefix: 'journal-bench-' })
await Deno.chmod(dataDir, 0o755)

let stack
try {
  stack = await startStack({ dataDir, apiPort: base, dbPort: base + 1, restPort: base + 9, throwaway: true, log: () => {} })
} catch (e) {
  console.error(e instanceof StackError ? e.message : e)
  Deno.exit(1)
}

try {
  const sql = postgres(stack.dbUrl, { max: 2, onnotice: () => {} })
  await sql`insert into auth.users (email) select 'bench-' || g || '@bench.local' from generate_series(1, 1000) g`
  const { userId, token } = await mintUserToken(sql, 'bench-500@bench.local', { secret: stack.jwtSecret })
  await sql.end()

  console.log(`Profile read: ${concurrency} concurrent clients, ${seconds}s each, 1,000 users in the database\n`)
  const auth = { authorization: `Bearer ${token}`, apikey: stack.anonKey }
  const direct = await load('direct  GET /rest/v1/profiles?id=eq.<me>', () =>
    fetch(`${stack.apiUrl}/rest/v1/profiles?id=eq.${userId}&select=*`, {
      headers: { ...auth, accept: 'application/vnd.pgrst.object+json' },
    }), { seconds, concurrency })
  const endpoint = await load('endpoint GET /api/user/profile', () =>
    fetch(`${stack.apiUrl}/functions/v1/api/user/profile`, { headers: auth }), { seconds, concurrency })
  printTable([direct, endpoint])
  console.log(`\nratio endpoint/direct throughput: ${(endpoint.rps / direct.rps).toFixed(2)} (target >= 0.50)`)

  if (Deno.env.get('BENCH_SKIP_FEED') !== '1') await benchJournalFeed(stack, Number(Deno.env.get('BENCH_FEED_RUNS') ?? 200))
} finally {
  await stack.stop()
  await new Deno.Command('rm', { args: ['-rf', dataDir] }).output()
}
