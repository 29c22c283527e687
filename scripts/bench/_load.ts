// A small closed-loop HTTP load generator: `concurrency` clients, each sending its next
// request when the previous reply has been read, for a fixed time after a warm-up.
export interface LoadResult {
  name: string
  requests: number
  errors: number
  rps: number
  p50: number
  p99: number
}

const percentile = (sorted: number[], p: number) =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] : NaN

export async function load(
  name: string,
  send: () => Promise<Response>,
  o: { concurrency?: number; seconds?: number; warmupSeconds?: number } = {},
): Promise<LoadResult> {
  const concurrency = o.concurrency ?? 16
  const run = async (ms: number, record: boolean) => {
    const latencies: number[] = []
    let errors = 0
    const end = performance.now() + ms
    await Promise.all(Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        const t0 = performance.now()
        try {
          const res = await send()
          await res.arrayBuffer()
          if (res.status !== 200) errors++
        } catch {
          errors++
        }
        if (record) latencies.push(performance.now() - t0)
      }
    }))
    return { latencies, errors }
  }
  await run((o.warmupSeconds ?? 1) * 1000, false)
  const seconds = o.seconds ?? 5
  const t0 = performance.now()
  const { latencies, errors } = await run(seconds * 1000, true)
  const elapsed = (performance.now() - t0) / 1000
  latencies.sort((a, b) => a - b)
  return {
    name,
    requests: latencies.length,
    errors,
    rps: latencies.length / elapsed,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
  }
}

export function printTable(rows: LoadResult[]) {
  const pad = (s: string, n: number) => s.padEnd(n)
  console.log(`${pad('case', 44)}${pad('req/s', 10)}${pad('p50 ms', 10)}${pad('p99 ms', 10)}errors`)
  for (const r of rows) {
    console.log(`${pad(r.name, 44)}${pad(r.rps.toFixed(0), 10)}${pad(r.p50.toFixed(2), 10)}${pad(r.p99.toFixed(2), 10)}${r.errors}`)
  }
}
