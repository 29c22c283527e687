// npm run bench: performance figures from a throw-away stack, each with its baseline
// measured in the same run. Targets live in the issues; this prints, it does not judge.
// Every module in scripts/bench/ that exports `bench` (see scripts/bench/_module.ts) runs,
// in file-name order:
//   BENCH_ONLY=feed,profile   only the modules so named (`BENCH_ONLY=list` prints the names)
//   BENCH_KEEP=1              leave the stack running afterwards, to explain plans by hand
//   BENCH_SCALE=10            fixtures at 10x (1,000,000 users, ...); the summary shows 1x beside
//   other knobs (BENCH_SECONDS, BENCH_FEED_RUNS, ...) are read by the modules themselves
import type { BenchModule } from './bench/_module.ts'
import { printSummary } from './bench/_summary.ts'
import { ROOT, run, StackError } from './lib/proc.ts'
import { startStack } from './lib/stack.ts'
import { raiseWriteLimitsForLoad } from './lib/write_limits.ts'

const modules: BenchModule[] = []
const files = [...Deno.readDirSync(`${ROOT}/scripts/bench`)].map((f) => f.name)
  .filter((n) => n.endsWith('.ts') && !n.startsWith('_')).sort()
for (const file of files) {
  const mod = await import(`./bench/${file}`)
  if (mod.bench) modules.push(mod.bench as BenchModule)
}

const only = Deno.env.get('BENCH_ONLY')?.split(',').map((s) => s.trim()).filter(Boolean)
if (only?.includes('list')) {
  console.log(modules.map((m) => m.name).join('\n'))
  Deno.exit(0)
}
const unknown = only?.filter((n) => !modules.some((m) => m.name === n)) ?? []
if (unknown.length) {
  console.error(`BENCH_ONLY: no bench module named ${unknown.join(', ')} (have: ${modules.map((m) => m.name).join(', ')})`)
  Deno.exit(2)
}
const chosen = only ? modules.filter((m) => only.includes(m.name)) : modules

// The fake model (tests/fakes/ai.ts): the tone queue's figures need a model that answers in a
// known time; without steering it answers fast and never sets a mood.
const { start: startFakeAi } = await import('../tests/fakes/ai.ts')
const fakeAi = await startFakeAi()

const base = Number(Deno.env.get('BENCH_PORT_BASE') ?? 26321)
const dataDir = await Deno.makeTempDir({ prefix: 'journal-bench-' })
await Deno.chmod(dataDir, 0o755)

let stack
try {
  stack = await startStack({ dataDir, apiPort: base, dbPort: base + 1, restPort: base + 9, throwaway: true, env: fakeAi.env, log: () => {} })
  await raiseWriteLimitsForLoad(stack.dbUrl)
} catch (e) {
  console.error(e instanceof StackError ? e.message : e)
  Deno.exit(1)
}

let failed = false
const startedAt = performance.now()
try {
  for (const m of chosen) {
    console.log(`\n=== ${m.name} ===`)
    try {
      await m.run(stack)
    } catch (e) {
      failed = true
      console.error(`bench module ${m.name} failed:`, e)
    }
  }
  await printSummary(stack, (performance.now() - startedAt) / 1000)
} finally {
  if (Deno.env.get('BENCH_KEEP') === '1') {
    console.log(`BENCH_KEEP=1: the bench stack stays up (${stack.dbUrl}); stop it with: npm run stop -- ${dataDir}`)
    Deno.exit(failed ? 1 : 0)
  }
  await stack.stop()
  await fakeAi.stop()
  await run('rm', ['-rf', dataDir]).catch(() => {})
}
if (failed) Deno.exit(1)
