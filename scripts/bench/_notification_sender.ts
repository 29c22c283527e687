// The push sender as its own process (the bench stops or kills it halfway): the production loop
// (runDeliveries, functions/api/routes/notifications/push_delivery.ts) against the stack's PostgREST with the
// service key, as one edge-function run does, until nothing due is left. Its environment (from
// scripts/bench/notifications.ts) points the SDKs at the fake providers. With
// BENCH_SENDER_PROFILE=1 it prints, when it ends, its CPU time and the time its database calls
// took (by function), to tell the sender's own cost from its waits.
// With BENCH_SENDER_SERVE_PORT it serves the edge functions instead (/functions/v1/api/..., the
// api handler as the gateway runs it) with that environment: the push-latency bench points
// Vault's project_url at it, so the insert kick's pg_net requests reach a sender that talks to
// the fakes.
import process from 'node:process'
import { type Db, serviceDb } from '../../functions/_shared/db.ts'
import { runDeliveries } from '../../functions/api/routes/notifications/push_delivery.ts'

const num = (k: string, d: number) => Number(Deno.env.get(k) ?? d)
const profile = Deno.env.get('BENCH_SENDER_PROFILE') === '1'
const log = console.error
console.log = () => {} // the bench reads the outbox and the fakes, not the job's log lines

const servePort = Deno.env.get('BENCH_SENDER_SERVE_PORT')
if (servePort) {
  const { handler } = await import('../../functions/api/handler.ts')
  Deno.serve({ hostname: '127.0.0.1', port: Number(servePort), onListen: () => log(`    edge functions on :${servePort}`) }, (req) => {
    const url = new URL(req.url)
    if (!url.pathname.startsWith('/functions/v1/api/')) return new Response('not here', { status: 404 })
    const inner = new URL(url.pathname.slice('/functions/v1'.length) + url.search, url.origin)
    return handler(new Request(inner, req))
  })
  await new Promise(() => {}) // until the bench kills it
}

const waits: Record<string, { calls: number; ms: number }> = {}
const db = serviceDb()
const timed = new Proxy(db, {
  get(target, key, receiver) {
    if (key !== 'rpc' || !profile) return Reflect.get(target, key, receiver)
    return (fn: string, args: unknown) => {
      const t0 = performance.now()
      return (target.rpc as (f: string, a: unknown) => PromiseLike<unknown>)(fn, args).then((r) => {
        const w = (waits[fn] ??= { calls: 0, ms: 0 })
        w.calls++
        w.ms += performance.now() - t0
        return r
      })
    }
  },
}) as Db

// SIGTERM (a deploy, a stop) asks the run to stop: it sends what it marked and releases the rest.
const stop = new AbortController()
Deno.addSignalListener('SIGTERM', () => stop.abort())
const t0 = performance.now()
const report = await runDeliveries(timed, {
  signal: stop.signal,
  chunk: num('BENCH_SENDER_CHUNK', 1000),
  leaseSeconds: num('BENCH_SENDER_LEASE_S', 10),
  timeBudgetMs: 3_600_000,
  webPushConcurrency: num('BENCH_SENDER_WEB_CONCURRENCY', 100),
  webPushBatch: num('BENCH_SENDER_WEB_BATCH', 50),
  // A sender here is one long process, not a request with 2 s of CPU: no share unless asked.
  webPushPerRun: num('BENCH_SENDER_WEB_PER_RUN', 1_000_000),
  expoConcurrency: num('BENCH_SENDER_EXPO_CONCURRENCY', 6),
  receiptDelaySeconds: 86_400,
})
if (profile) {
  const cpu = process.cpuUsage()
  log(
    `    sender ${Deno.pid}: ${((performance.now() - t0) / 1000).toFixed(1)} s, CPU ${
      ((cpu.user + cpu.system) / 1e6).toFixed(1)
    } s, claimed ${report.claimed}, database calls ${
      Object.entries(waits).map(([f, w]) => `${f} ${w.calls}x ${(w.ms / 1000).toFixed(1)} s`).join(', ')
    }`,
  )
}
Deno.exit(0)
