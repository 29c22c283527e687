// The push sender as its own process (the bench kills it halfway): the production loop
// (functions/_shared/push_delivery.ts runDeliveries) against the stack's PostgREST with the
// service key, as the edge function runs it, until nothing due is left. Its environment (from
// scripts/bench/notifications.ts) points the SDKs at the fake providers.
import { serviceDb } from '../../functions/_shared/db.ts'
import { runDeliveries } from '../../functions/_shared/push_delivery.ts'

const num = (k: string, d: number) => Number(Deno.env.get(k) ?? d)
console.log = () => {} // the bench reads the outbox and the fakes, not the job's log lines
await runDeliveries(serviceDb(), {
  chunk: num('BENCH_SENDER_CHUNK', 1000),
  leaseSeconds: num('BENCH_SENDER_LEASE_S', 10),
  timeBudgetMs: 3_600_000,
  webPushConcurrency: num('BENCH_SENDER_WEB_CONCURRENCY', 100),
  receiptDelaySeconds: 86_400,
})
