// npm run bench: performance figures from a throw-away stack, each with its baseline
// measured in the same run. Targets live in the issues; this prints, it does not judge.
//   BENCH_ONLY=profile|feed   one part only
//   BENCH_SECONDS, BENCH_CONCURRENCY   the profile load;  BENCH_FEED_RUNS   feed repetitions
//   BENCH_KEEP=1   leave the stack running afterwards, to explain plans by hand
import { benchJournalFeed } from './bench/journal_feed.ts'
import { benchProfile } from './bench/profile.ts'
import { run, StackError } from './lib/proc.ts'
import { startStack } from './lib/stack.ts'

const env = (k: string, d: number) => Number(Deno.env.get(k) ?? d)
const base = env('BENCH_PORT_BASE', 26321)
const only = Deno.env.get('BENCH_ONLY')
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
  if (only !== 'feed') await benchProfile(stack, { seconds: env('BENCH_SECONDS', 5), concurrency: env('BENCH_CONCURRENCY', 16) })
  if (only !== 'profile') await benchJournalFeed(stack, env('BENCH_FEED_RUNS', 200))
} finally {
  if (Deno.env.get('BENCH_KEEP') === '1') {
    console.log(`BENCH_KEEP=1: the bench stack stays up (${stack.dbUrl}); stop it with: npm run stop -- ${dataDir}`)
    Deno.exit(0)
  }
  await stack.stop()
  await run('rm', ['-rf', dataDir]).catch(() => {})
}
