// The contract between scripts/bench.ts and each area's bench module: every file in
// scripts/bench/ (not starting with "_") that exports `bench` is run, in file-name order,
// against one throw-away stack. A module loads its own fixture, prints its figures with a
// baseline measured in the same run, and leaves the database usable for the next module.
import type { Stack } from '../lib/stack.ts'

export interface BenchModule {
  /** What BENCH_ONLY names (comma-separated) to run only some modules. */
  name: string
  run(stack: Stack): Promise<void>
}

/** A numeric knob from the environment. */
export const knob = (name: string, fallback: number) => Number(Deno.env.get(name) ?? fallback)

/** Runs fn n times; p50/p99 in ms and the last result (to check answers agree). */
export async function timed<T>(n: number, fn: () => Promise<T>) {
  const ms: number[] = []
  let last: T | undefined
  for (let i = 0; i < n; i++) {
    const t0 = performance.now()
    last = await fn()
    ms.push(performance.now() - t0)
  }
  ms.sort((a, b) => a - b)
  return { p50: ms[Math.floor(n * 0.5)], p99: ms[Math.min(n - 1, Math.floor(n * 0.99))], last: last as T }
}
