// Chain generation for 10,000 and 100,000 active windows in 500 cities (target:
// 100,000 under 3 s, growing no worse than linearly), a repeat run, the five-minute job over
// every active window, 1,000 concurrent
// check-ins with ordinary photos (p50/p99, no duplicate per user-day) and the mosaic for 200
// participants.
// Baselines from the same run: a scan of the participants (what any plan must read) and a
// plain authenticated GET through the same gateway.
import postgres from 'postgres'
import { ImageMagick, MagickFormat, MagickReadSettings } from '@imagemagick/magick-wasm'
import { loadImageMagick } from '../../functions/_shared/magick.ts'
import type { Stack } from '../lib/stack.ts'
import { mintUserToken, signClaims } from '../lib/tokens.ts'
import { type BenchModule, checkpoint, figure, knob, SCALE, setScale } from './_module.ts'

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]
const ms = (n: number) => `${n.toFixed(0)} ms`

async function timed<T>(f: () => Promise<T>): Promise<[T, number]> {
  const t0 = performance.now()
  const r = await f()
  return [r, performance.now() - t0]
}

async function activate(sql: postgres.Sql, dbUrl: string, n: number) {
  await sql`update public.workout_windows set is_active = false where is_active`
  await sql`update public.workout_windows set is_active = true
             where user_id in (select md5('wbench-' || g)::uuid from generate_series(1, ${n}::int) g)`
  // The table as autovacuum would leave it (the update left a dead version of every changed
  // row, and statistics made with every window inactive would plan for "no active windows"),
  // and checkpointed, so that the timed run does not also write out this setup's pages.
  await sql`vacuum analyze public.workout_windows`
  await checkpoint(dbUrl)
}

/** A date `days` after today (UTC): chain generation takes dates within a year of today. */
const daysAhead = (days: number) => new Date(Date.now() + days * 86400_000).toISOString().slice(0, 10)

async function chainGeneration(sql: postgres.Sql, dbUrl: string) {
  const [small, large] = [10_000 * SCALE, 100_000 * SCALE]
  console.log(
    `Chain generation (public.generate_workout_chains), ${500 * SCALE} cities, 4 time zones, 60 start times`,
  )
  const rows: [string, number][] = []
  for (const [n, date] of [[small, daysAhead(100)], [large, daysAhead(101)]] as const) {
    await activate(sql, dbUrl, n)
    const [, scan] = await timed(() => sql`select count(*) from private.workout_participants(${date}::date)`)
    const [[{ r }], t] = await timed(() => sql`select public.generate_workout_chains(${date}::date) as r`)
    if (r.created !== n) throw new Error(`expected ${n} rows, got ${JSON.stringify(r)}`)
    rows.push([`${n.toLocaleString('en')} windows`, t])
    console.log(
      `  ${n.toLocaleString('en').padStart(9)} windows: ${
        ms(t)
      } (${r.squadsCreated} squads; baseline participant scan ${ms(scan)})`,
    )
  }
  const [[{ r }], again] = await timed(() =>
    sql`select public.generate_workout_chains(${daysAhead(101)}::date) as r`
  )
  console.log(
    `  repeat run, ${large.toLocaleString('en')} windows: ${
      ms(again)
    } (created ${r.created}, relinked ${r.relinked})`,
  )
  // The same date again in BENCH_CHAIN_PARTS parts side by side (one connection and transaction
  // each, as the daily pg_cron jobs run them): the same chains as the one call, in less time.
  const parts = knob('BENCH_CHAIN_PARTS', 2)
  const digest = async () =>
    (await sql`select md5(string_agg(concat_ws(':', c.user_id, c.before_user_id, c.after_user_id, c.team_color, c.squad_id,
                 s.user_1_id, s.user_2_id, s.user_3_id), ',' order by c.user_id)) as d
               from public.workout_chains c left join public.workout_squads s on s.id = c.squad_id
              where c.date = ${daysAhead(101)}::date`)[0].d as string
  const oneCall = await digest()
  await sql`delete from public.workout_chains where date = ${daysAhead(101)}::date`
  await sql`delete from public.workout_squads where date = ${daysAhead(101)}::date`
  await sql`vacuum analyze public.workout_chains, public.workout_squads`
  await checkpoint(dbUrl)
  const conns = Array.from({ length: parts }, () => postgres(dbUrl, { max: 1, onnotice: () => {} }))
  const [results, side] = await timed(() =>
    Promise.all(
      conns.map(async (c, part) =>
        (await c`select public.generate_workout_chains_part(${
          daysAhead(101)
        }::date, ${part}, ${parts}) as r`)[0].r
      ),
    )
  )
  await Promise.all(conns.map((c) => c.end()))
  const created = results.reduce((n: number, x: { created: number }) => n + x.created, 0)
  const same = (await digest()) === oneCall
  console.log(
    `  ${large.toLocaleString('en')} windows in ${parts} parts side by side: ${ms(side)} ` +
      `(created ${created}; the same chains as one call: ${same ? 'yes' : 'NO'})`,
  )
  if (!same || created !== large) throw new Error('parts side by side differ from one call')
  figure(
    `chain generation, 100,000 x scale windows, ${parts} parts side by side`,
    side,
    'ms',
    '1M: < 30,000 ms',
  )
  const perUser = rows.map(([, t], i) => t / (i === 0 ? small : large))
  console.log(
    `  growth ${small.toLocaleString('en')} → ${large.toLocaleString('en')}: ${
      (rows[1][1] / rows[0][1]).toFixed(1)
    }x for 10x the windows ` +
      `(per window ${(perUser[0] * 1000).toFixed(1)} → ${
        (perUser[1] * 1000).toFixed(1)
      } µs; linear or better when ≤ 10x)`,
  )
  figure('chain generation, 100,000 x scale windows', rows[1][1], 'ms', '100k: < 3,000 ms; 1M: < 30,000 ms')
  console.log(
    `  target: 100,000 under 3,000 ms, 1,000,000 under 30,000 ms: ${
      rows[1][1] < 3000 * SCALE ? 'met' : 'NOT met'
    } at this scale`,
  )
}

/**
 * An ordinary photo: a 640x480 JPEG (quality 85, about 40 KB) of overlapping gradient
 * rectangles with grain, different for each seed (so no two bench users send one picture).
 */
function benchPhoto(seed: number): Uint8Array {
  let state = seed * 2654435761 + 1
  const rand = () => ((state = (Math.imul(state, 1103515245) + 12345) >>> 0) / 2 ** 32)
  const [w, h] = [640, 480]
  const data = new Uint8Array(w * h * 3)
  for (let r = 0; r < 12; r++) {
    const [x0, y0] = [Math.floor(rand() * w), Math.floor(rand() * h)]
    const [x1, y1] = [
      Math.min(w, x0 + 40 + Math.floor(rand() * 300)),
      Math.min(h, y0 + 40 + Math.floor(rand() * 240)),
    ]
    const colour = [rand() * 255, rand() * 255, rand() * 255]
    for (let y = y0; y < y1; y++) {
      for (let x = x0; x < x1; x++) {
        const shade = 0.6 + 0.4 * (x - x0) / (x1 - x0)
        for (let c = 0; c < 3; c++) data[(y * w + x) * 3 + c] = colour[c] * shade
      }
    }
  }
  for (let i = 0; i < data.length; i++) data[i] = Math.max(0, Math.min(255, data[i] + (rand() - 0.5) * 24))
  return ImageMagick.read(
    data,
    new MagickReadSettings({ format: MagickFormat.Rgb, width: w, height: h }),
    (image) => {
      image.quality = 85
      return image.write(MagickFormat.Jpeg, (bytes) => new Uint8Array(bytes))
    },
  )
}

async function checkins(stack: Stack, sql: postgres.Sql) {
  const count = knob('BENCH_CHECKINS', 1000)
  const concurrency = knob('BENCH_CHECKIN_CONCURRENCY', 50)
  // Users 1..count: a window that started 10 minutes ago in UTC.
  const start = new Date(Date.now() - 10 * 60_000)
  const hh = (d: Date) =>
    `${String(d.getUTCHours()).padStart(2, '0')}:${String(d.getUTCMinutes()).padStart(2, '0')}`
  await sql`update public.workout_windows set is_active = true, timezone = 'UTC', window_start_time = ${
    hh(start)
  }::time,
             window_end_time = ${hh(new Date(start.getTime() + 2 * 3600_000))}::time
             where user_id in (select md5('wbench-' || g)::uuid from generate_series(1, ${count}::int) g)`
  const users =
    await sql`select md5('wbench-' || g)::uuid::text as id from generate_series(1, ${count}::int) g`
  const signed = await Promise.all(
    users.map((u) =>
      signClaims({ sub: u.id, role: 'authenticated', aud: 'authenticated', email: null }, stack.jwtSecret)
    ),
  )
  await loadImageMagick()
  const photos = signed.map((_, i) => benchPhoto(i + 1))
  const url = `${stack.apiUrl}/functions/v1/api/workout-window/checkin`
  const send = (user: number) => {
    const form = new FormData()
    form.append('photo', new File([photos[user] as Uint8Array<ArrayBuffer>], 'p.jpg', { type: 'image/jpeg' }))
    form.append('activityType', 'cardio')
    return fetch(url, { method: 'POST', headers: { authorization: `Bearer ${signed[user]}` }, body: form })
  }
  // Every user once, plus a second attempt by every tenth user, all in flight together
  // (bounded by the worker count).
  const jobs = [...signed.keys(), ...[...signed.keys()].filter((i) => i % 10 === 0)]
  const latencies: number[] = []
  const statuses: Record<number, number> = {}
  let next = 0
  const t0 = performance.now()
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < jobs.length) {
      const user = jobs[next++]
      const s = performance.now()
      const res = await send(user)
      await res.arrayBuffer()
      latencies.push(performance.now() - s)
      statuses[res.status] = (statuses[res.status] ?? 0) + 1
    }
  }))
  const wall = performance.now() - t0
  latencies.sort((a, b) => a - b)
  const [{ rows, distinct_days }] = await sql`
    select count(*)::int as rows, count(distinct (user_id, date))::int as distinct_days from public.workout_checkins
     where user_id in (select md5('wbench-' || g)::uuid from generate_series(1, ${count}::int) g)`
  // Baseline: the same number of authenticated reads through the same gateway.
  const base: number[] = []
  next = 0
  const reads = signed.slice()
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < reads.length) {
      const token = reads[next++]
      const s = performance.now()
      const res = await fetch(`${stack.apiUrl}/functions/v1/api/workout-window/my-window`, {
        headers: { authorization: `Bearer ${token}` },
      })
      await res.arrayBuffer()
      base.push(performance.now() - s)
    }
  }))
  base.sort((a, b) => a - b)
  const kb = photos.reduce((n, p) => n + p.length, 0) / photos.length / 1024
  console.log(
    `\nCheck-ins: ${count} users with a photo each (+${
      jobs.length - count
    } repeats), ${concurrency} in flight; ` +
      `each a different 640x480 JPEG (mean ${kb.toFixed(0)} KB)`,
  )
  console.log(
    `  POST /checkin        p50 ${ms(percentile(latencies, 50))}  p99 ${ms(percentile(latencies, 99))}  ` +
      `${(jobs.length / (wall / 1000)).toFixed(0)} req/s  statuses ${JSON.stringify(statuses)}`,
  )
  console.log(`  GET /my-window (baseline) p50 ${ms(percentile(base, 50))}  p99 ${ms(percentile(base, 99))}`)
  console.log(
    `  rows ${rows}, distinct user-days ${distinct_days}: ${
      rows === count && distinct_days === count ? 'no duplicates' : 'DUPLICATES OR MISSING'
    }`,
  )
}

async function mosaic(stack: Stack, sql: postgres.Sql) {
  const date = daysAhead(102)
  await activate(sql, stack.dbUrl, 200)
  await sql`select public.generate_workout_chains(${date}::date)`
  await sql`select private.new_auth_user('{"email": "wbench-admin@bench.local"}')
             where not exists (select 1 from auth.users where email = 'wbench-admin@bench.local')`
  await sql`update public.profiles set role = 'super_admin' where id = (select id from auth.users where email = 'wbench-admin@bench.local')`
  const { token } = await mintUserToken(sql, 'wbench-admin@bench.local', { secret: stack.jwtSecret })
  const headers = { authorization: `Bearer ${token}` }
  const runs = knob('BENCH_MOSAIC_RUNS', 10)
  const gen: number[] = []
  const read: number[] = []
  for (let i = 0; i < runs; i++) {
    const [res, t] = await timed(() =>
      fetch(`${stack.apiUrl}/functions/v1/api/workout-window/mosaic/generate/${date}`, {
        method: 'POST',
        headers,
      })
    )
    if (res.status !== 200) throw new Error(`mosaic: ${res.status} ${await res.text()}`)
    await res.arrayBuffer()
    gen.push(t)
    const [r2, t2] = await timed(() =>
      fetch(`${stack.apiUrl}/functions/v1/api/workout-window/mosaic/${date}`, { headers })
    )
    await r2.arrayBuffer()
    read.push(t2)
  }
  gen.sort((a, b) => a - b)
  read.sort((a, b) => a - b)
  console.log(
    `\nMosaic for 200 participants (${runs} regenerations): generate p50 ${ms(percentile(gen, 50))} ` +
      `p99 ${ms(percentile(gen, 99))}; GET mosaic (baseline) p50 ${ms(percentile(read, 50))}`,
  )
}

/**
 * The five-minute job (`private.run_workout_jobs`: reminders 30 minutes before each window,
 * chain-broken notices after each window) over every active window: yesterday's and today's
 * chains made, nobody checked in. The first run writes the backlog of the last day (every
 * chain of yesterday broken); the runs after it are the steady state, five minutes apart, each
 * writing only what came due in those five minutes. Its cost is the scan of windows and chains.
 */
async function fiveMinuteJobs(sql: postgres.Sql) {
  const today = new Date().toISOString().slice(0, 10)
  const yesterday = new Date(Date.now() - 86400_000).toISOString().slice(0, 10)
  for (const date of [yesterday, today]) await sql`select public.generate_workout_chains(${date}::date)`
  await sql`vacuum analyze public.workout_chains`
  const at = Date.now()
  const run = async (offsetMinutes: number) => {
    const moment = new Date(at + offsetMinutes * 60_000).toISOString()
    const [[{ r }], t] = await timed(() => sql`select private.run_workout_jobs(${moment}::timestamptz) as r`)
    return { r, t }
  }
  const backlog = await run(0)
  const steady = [await run(5), await run(10), await run(15)]
  const worst = Math.max(...steady.map((x) => x.t))
  console.log(
    `\nFive-minute job (private.run_workout_jobs) over ${
      (100_000 * SCALE).toLocaleString('en')
    } active windows:`,
  )
  console.log(
    `  first run (a day's backlog): ${
      ms(backlog.t)
    } (${backlog.r.reminders} reminders, ${backlog.r.chainBroken} chain-broken)`,
  )
  console.log(
    `  steady runs 5 minutes apart: ${
      steady.map((x) => `${ms(x.t)} (${x.r.reminders} + ${x.r.chainBroken})`).join(', ')
    }`,
  )
  figure('five-minute workout job, steady run', worst, 'ms', 'well inside its 5 minutes')
  await sql`delete from public.notifications where type in ('workout.checkin_reminder', 'workout.chain_broken')
             and user_id in (select user_id from public.workout_windows where is_active)`
  for (const date of [yesterday, today]) {
    await sql`delete from public.workout_chains where date = ${date}::date`
    await sql`delete from public.workout_squads where date = ${date}::date`
  }
}

export const bench: BenchModule = {
  name: 'workout',
  async run(stack) {
    const sql = postgres(stack.dbUrl, { max: 4, onnotice: () => {} })
    try {
      console.log(
        `Loading sql/bench/workout_fixture.sql (${
          (100_000 * SCALE).toLocaleString('en')
        } users, windows and locations)...`,
      )
      const loader = postgres(stack.dbUrl, { max: 1, onnotice: () => {} }) // the file has its own transaction
      await setScale(loader)
      await loader.file(new URL('../../sql/bench/workout_fixture.sql', import.meta.url).pathname)
      await loader.end()
      await chainGeneration(sql, stack.dbUrl)
      await fiveMinuteJobs(sql)
      await checkins(stack, sql)
      await mosaic(stack, sql)
      await sql`update public.workout_windows set is_active = false where user_id in
                 (select md5('wbench-' || g)::uuid from generate_series(1, ${100_000 * SCALE}::int) g)`
    } finally {
      await sql.end()
    }
  },
}
