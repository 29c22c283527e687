// The contract between scripts/bench.ts and each area's bench module: every file in
// scripts/bench/ (not starting with "_") that exports `bench` is run, in file-name order,
// against one throw-away stack. A module loads its own fixture, prints its figures with a
// baseline measured in the same run, and leaves the database usable for the next module.
import postgres from 'postgres'
import { ADMIN_ROLE } from '../lib/db.ts'
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

/**
 * BENCH_SCALE=k (default 1) multiplies the fixtures that grow with the users (users, entries,
 * drops, usage rows, plays, windows). Fixtures read it as the setting `bench.scale`
 * (`current_setting('bench.scale')`), which `setScale` sets on a connection before loading.
 */
export const SCALE = Math.max(1, Math.round(knob('BENCH_SCALE', 1)))

export async function setScale(sql: { unsafe: (q: string) => Promise<unknown> }) {
  await sql.unsafe(`select set_config('bench.scale', '${SCALE}', false)`)
}

/** A headline figure: printed again at the end beside its 1x value (from the last 1x run). */
export interface Figure {
  name: string
  value: number
  unit: string
  target?: string
}

export const figures: Figure[] = []

/** Records a headline figure for the summary (bench.ts prints it with the 1x value and ratio). */
export function figure(name: string, value: number, unit: string, target?: string) {
  figures.push({ name, value, unit, target })
}

/**
 * A CHECKPOINT between loading a fixture and timing it, so the timings do not also write out the
 * load's pages. Only the bootstrap superuser may run it: postgres has a hosted project's rights.
 */
export async function checkpoint(dbUrl: string) {
  const url = new URL(dbUrl)
  url.username = ADMIN_ROLE
  const admin = postgres(url.toString(), { max: 1, onnotice: () => {} })
  try {
    await admin`checkpoint`
  } finally {
    await admin.end()
  }
}
