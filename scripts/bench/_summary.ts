// The end of a bench run: each headline figure beside its 1x value (the last BENCH_SCALE=1 run's
// figures, kept in .local/bench/scale-1.json) with the growth ratio, then the size of each table
// and its indexes. A BENCH_SCALE=1 run writes that file; runs at other scales write theirs too.
import postgres from 'postgres'
import { ROOT } from '../lib/proc.ts'
import type { Stack } from '../lib/stack.ts'
import { type Figure, figures, SCALE } from './_module.ts'

const DIR = `${ROOT}/.local/bench`

/** A sized table as the summary records it. */
interface TableSize {
  name: string
  rows: number
  table_bytes: number
  index_bytes: number
  partition_bytes: number
}

/** The figures and table sizes a run at `scale` recorded (empty when it never ran). */
async function readRun(scale: number): Promise<{ figures: Figure[]; sizes: TableSize[] }> {
  try {
    const run = JSON.parse(await Deno.readTextFile(`${DIR}/scale-${scale}.json`))
    return { figures: run.figures ?? [], sizes: run.sizes ?? [] }
  } catch {
    return { figures: [], sizes: [] }
  }
}

const num = (v: number | undefined, unit = '') =>
  v === undefined
    ? '-'
    : `${v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2)}${unit ? ' ' + unit : ''}`

export async function printSummary(stack: Stack, elapsedSeconds: number) {
  const baseRun = SCALE === 1 ? { figures: [], sizes: [] } : await readRun(1)
  const base = baseRun.figures
  console.log(`\n=== summary (BENCH_SCALE=${SCALE}, ${(elapsedSeconds / 60).toFixed(1)} min) ===`)
  const w = Math.max(20, ...figures.map((f) => f.name.length)) + 2
  console.log(
    `${'figure'.padEnd(w)}${'1x'.padEnd(14)}${(SCALE === 1 ? '' : `${SCALE}x`).padEnd(14)}${
      'growth'.padEnd(9)
    }target`,
  )
  for (const f of figures) {
    const one = SCALE === 1 ? f : base.find((b) => b.name === f.name)
    const growth = one && SCALE !== 1 && one.value > 0 ? `${(f.value / one.value).toFixed(2)}x` : '-'
    console.log(
      `${f.name.padEnd(w)}${num(one?.value, f.unit).padEnd(14)}${
        (SCALE === 1 ? '' : num(f.value, f.unit)).padEnd(14)
      }` +
        `${growth.padEnd(9)}${f.target ?? ''}`,
    )
  }
  if (SCALE !== 1 && !base.length) {
    console.log('(no 1x figures yet: run `npm run bench` once at BENCH_SCALE=1 to have them beside these)')
  }

  const sql = postgres(stack.dbUrl, { max: 1, onnotice: () => {} })
  const sizes = await sql<TableSize[]>`
    select c.relname as name, c.reltuples::bigint as rows,
           pg_table_size(c.oid) as table_bytes, pg_indexes_size(c.oid) as index_bytes,
           coalesce((select sum(pg_total_relation_size(i.inhrelid)) from pg_inherits i where i.inhparent = c.oid), 0) as partition_bytes
      from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where n.nspname in ('public', 'private', 'auth') and c.relkind in ('r', 'p') and not c.relispartition
     order by pg_total_relation_size(c.oid) + coalesce((select sum(pg_total_relation_size(i.inhrelid)) from pg_inherits i
                                                        where i.inhparent = c.oid), 0) desc
     limit 25`
  await sql.end()
  const mb = (b: number) => `${(Number(b) / 1048576).toFixed(0)} MB`
  const baseSizes = baseRun.sizes
  const size = (s: TableSize | undefined) =>
    !s
      ? '-'
      : Number(s.partition_bytes) > 0
      ? `${mb(s.partition_bytes)} (parts)`
      : `${mb(s.table_bytes)} + ${mb(s.index_bytes)}`
  console.log(
    `\ntables (largest 25; rows estimated; table + indexes; partitioned tables: their partitions' total):`,
  )
  console.log(
    `${'table'.padEnd(34)}${'rows'.padEnd(14)}${'size'.padEnd(22)}${
      SCALE === 1 ? '' : '1x rows'.padEnd(14) + '1x size'
    }`,
  )
  for (const s of sizes) {
    const one = baseSizes.find((b) => b.name === s.name)
    const rows = (r: unknown) => Number(Number(r) < 0 ? 0 : r).toLocaleString('en')
    console.log(
      `${String(s.name).padEnd(34)}${rows(s.rows).padEnd(14)}${size(s).padEnd(22)}${
        SCALE === 1 ? '' : (one ? rows(one.rows) : '-').padEnd(14) + size(one)
      }`,
    )
  }
  // Figures this run did not measure (BENCH_ONLY) keep their last value.
  const kept = (await readRun(SCALE)).figures.filter((old) => !figures.some((f) => f.name === old.name))
  await Deno.mkdir(DIR, { recursive: true })
  await Deno.writeTextFile(
    `${DIR}/scale-${SCALE}.json`,
    JSON.stringify(
      { scale: SCALE, at: new Date().toISOString(), figures: [...figures, ...kept], sizes },
      null,
      1,
    ),
  )
}
