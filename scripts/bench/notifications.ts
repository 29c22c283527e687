// Notification delivery:
//   1. what writing a notification costs its writer with the outbox trigger (a user with one
//      device, a user with none), against the same insert with the trigger disabled, measured in
//      the database (a loop of private.notify calls, alternating blocks);
//   2. fan-out: N notifications to users with 1 or 2 devices (an Expo token each, a Web Push
//      subscription for every other user: 1.5 devices a user) through the production sender
//      (scripts/bench/_notification_sender.ts, its own process) against the fake Expo and Web
//      Push services (tests/fakes/, with a network's latency); the sender is killed (SIGKILL)
//      halfway and started again; then every outbox row is compared with what the fakes received:
//      duplicates and lost deliveries are counted, and the wall time to the last delivery.
// Knobs: BENCH_NOTIF_NOTIFICATIONS (100000), BENCH_NOTIF_USERS (50000), BENCH_NOTIF_LATENCY_MS (50),
// BENCH_NOTIF_WEB_EVERY (2: every second user also has a Web Push subscription; 0: a second phone instead), BENCH_NOTIF_SENDERS (4: senders side by side, as the pg_cron job starts them),
// BENCH_NOTIF_INSERTS (5000 per side), BENCH_SENDER_CHUNK (1000), BENCH_SENDER_LEASE_S (10),
// BENCH_SENDER_WEB_CONCURRENCY (100), BENCH_SENDER_WEB_BATCH (50), BENCH_SENDER_EXPO_CONCURRENCY (6),
// BENCH_SENDER_WEB_PER_RUN (uncapped: a sender here is a long process, not a 2-s request),
// BENCH_NOTIF_KILL (1; 0: no kill), BENCH_NOTIF_KILL_SIGNAL (SIGTERM: a stop; SIGKILL: a crash), BENCH_NOTIF_KILL_JITTER_MS (1000: the kill comes up to this long
// after half was received, at random), BENCH_NOTIF_SENDER_ROOT (another checkout whose sender runs),
// BENCH_SENDER_PROFILE (1: each sender prints its CPU time and database waits).
//   3. push latency: notifications written at 10 and at 1,000 a second (BENCH_NOTIF_RATES,
//      BENCH_NOTIF_RATE_SECONDS 5, BENCH_NOTIF_LATENCY_USERS 1000), delivered by the insert kick
//      alone (no sender of the bench's own): from each notification's created_at to the moment
//      the fake provider read it, p50 and p99. BENCH_NOTIF_FANOUT=0 skips the fan-out (its
//      50,000-user fixture takes minutes), BENCH_NOTIF_PUSH_LATENCY=0 this.
import postgres from 'postgres'
import { ROOT } from '../lib/proc.ts'
import type { Stack } from '../lib/stack.ts'
import { start as startExpo } from '../../tests/fakes/expo.ts'
import { start as startWebPush } from '../../tests/fakes/web_push.ts'
import { type BenchModule, figure, knob } from './_module.ts'

/** The same fan-out before this sender design (commit e2ddb7c: one claim, mark and record after
 * another, encryption after the mark), measured on the same day, to print beside today's. */
const BEFORE = '131.3 s, 0 duplicates, 200 lost (2 senders; load average 4.0-5.3 on 2026-11-26; ' +
  '173.7 s at an earlier measurement)'

/** The load averages (1, 5, 15 minutes) and the machine's busy CPU seconds so far (all cores). */
function machine() {
  const load = Deno.readTextFileSync('/proc/loadavg').split(' ').slice(0, 3).join(' ')
  const cpu = Deno.readTextFileSync('/proc/stat').split('\n')[0].trim().split(/\s+/).slice(1).map(Number)
  const busy = cpu.reduce((a, b) => a + b, 0) - cpu[3] - (cpu[4] ?? 0) // all but idle and iowait
  return { load, busySeconds: busy / 100 }
}

/** CPU-seconds of a process (`self` or a pid): its own, its reaped children's and, with
 * `live`, its running children's (a postmaster's backends); with `ownOnly`, its own alone. */
function cpuSeconds(pid: number | 'self', live = false, ownOnly = false): number {
  const fields = (p: number | string) => {
    try {
      const stat = Deno.readTextFileSync(`/proc/${p}/stat`)
      return stat.slice(stat.lastIndexOf(')') + 2).split(' ') // [0] is field 3 (state)
    } catch {
      return null // gone meanwhile
    }
  }
  const own = fields(pid)
  if (!own) return 0
  let ticks = Number(own[11]) + Number(own[12]) + (ownOnly ? 0 : Number(own[13]) + Number(own[14]))
  if (live) {
    for (const e of Deno.readDirSync('/proc')) {
      if (!/^\d+$/.test(e.name)) continue
      const f = fields(e.name)
      if (f && Number(f[1]) === pid) ticks += Number(f[11]) + Number(f[12])
    }
  }
  return ticks / 100
}

const userId = (n: number) => `b24a0000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`

async function insertCost(db: postgres.Sql) {
  const n = knob('BENCH_NOTIF_INSERTS', 5000)
  const [withDevice, without] = [userId(0xfffff0), userId(0xfffff1)]
  await db`insert into auth.users (id, email) values (${withDevice}, 'bench-notif-a@bench.local'), (${without}, 'bench-notif-b@bench.local')
           on conflict do nothing`
  await db`insert into public.notification_devices (user_id, kind, address) values (${withDevice}, 'expo', 'ExponentPushToken[bench-insert]')
           on conflict do nothing`
  const loop = (user: string, count: number) =>
    db.unsafe(
      `do $$ begin for i in 1..${count} loop perform private.notify('${user}', 'labs.step_prompt', jsonb_build_object('title', 'x', 'i', i)); end loop; end $$`,
    )
  // Alternating rounds; the median of each side's per-round time, so a busy moment of the
  // shared machine does not decide the figure.
  const rounds = 10
  const sides = { device: [] as number[], none: [] as number[], off: [] as number[] }
  for (let r = 0; r < rounds; r++) {
    for (const side of ['device', 'none', 'off'] as const) {
      if (side === 'off') {
        await db`alter table public.notifications disable trigger notifications_queue_deliveries`
      }
      const t0 = performance.now()
      await loop(side === 'none' ? without : withDevice, n / rounds)
      sides[side].push(((performance.now() - t0) * 1000) / (n / rounds))
      if (side === 'off') {
        await db`alter table public.notifications enable trigger notifications_queue_deliveries`
      }
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
  const [off, device, none] = [median(sides.off), median(sides.device), median(sides.none)]
  console.log(
    `  insert of a notification (${n} per side in ${rounds} alternating rounds, in the database, medians): ` +
      `trigger off ${off.toFixed(1)} µs; with the outbox trigger, recipient with 1 device ${
        device.toFixed(1)
      } µs ` +
      `(+${(device - off).toFixed(1)} µs), with none ${none.toFixed(1)} µs (+${
        (none - off).toFixed(1)
      } µs); target: under +200 µs`,
  )
  await db`delete from public.notifications where user_id in (${withDevice}, ${without})`
}

/**
 * How long marked rows waited to reach their provider: for each mark (rows marked attempting by
 * one call share its attempted_at), from the mark to the last of its rows read by the fake. A run
 * killed inside that window loses what the mark had not yet put on the wire, so the share of the
 * fan-out's time covered by some mark's window is the chance that a kill at a random moment loses
 * a batch (the rest of the time a kill loses nothing: claimed rows go back to pending).
 */
async function markWindows(
  db: postgres.Sql,
  rows: postgres.Row[],
  arrival: (row: postgres.Row) => number | undefined,
  startedAt: number,
  killedAt: number | null,
) {
  const attempted = new Map<number, number>()
  for (
    const r
      of await db`select id, extract(epoch from attempted_at) * 1000 as ms from private.notification_deliveries
                            where user_id::text like 'b24a0000-%' and attempted_at is not null`
  ) {
    attempted.set(Number(r.id), Number(r.ms))
  }
  // channel|attempted_at -> the mark's moment and the last arrival of its rows
  const marks = new Map<string, { channel: string; at: number; last: number }>()
  for (const row of rows) {
    const at = attempted.get(Number(row.id))
    const seen = arrival(row)
    if (at === undefined || seen === undefined) continue
    const key = `${row.channel}|${at}`
    const mark = marks.get(key) ?? { channel: row.channel, at, last: at }
    mark.last = Math.max(mark.last, seen)
    marks.set(key, mark)
  }
  const runMs = Date.now() - (performance.timeOrigin + startedAt)
  const describe = (channel: string | null) => {
    const windows = [...marks.values()].filter((m) => channel === null || m.channel === channel)
      .map((m) => [m.at, m.last] as const).sort((a, b) => a[0] - b[0])
    let covered = 0
    let until = -Infinity
    for (const [from, to] of windows) {
      if (to <= until) continue
      covered += to - Math.max(from, until)
      until = to
    }
    const lengths = windows.map(([from, to]) => to - from).sort((a, b) => a - b)
    const q = (x: number) =>
      (lengths[Math.min(lengths.length - 1, Math.floor(x * lengths.length))] ?? 0).toFixed(0)
    const span = windows.length ? Math.max(...windows.map((w) => w[1])) - windows[0][0] : 0
    const open = killedAt === null
      ? 0
      : windows.filter(([from, to]) => from <= killedAt && killedAt <= to).length
    return {
      count: windows.length,
      p50: q(0.5),
      p99: q(0.99),
      max: q(1),
      pct: (100 * covered / Math.max(span, 1)).toFixed(1),
      span,
      open,
    }
  }
  const all = describe(null)
  const channels = ['expo', 'web_push'].map((c) => ({ c, ...describe(c) })).filter((d) => d.count)
  return [
    `marks: ${all.count}, from a mark to its last row read by the fake p50 ${all.p50} ms, p99 ${all.p99} ms,`,
    `max ${all.max} ms (${
      channels.map((d) => `${d.c}: ${d.count} marks, p50 ${d.p50} / p99 ${d.p99} ms, open ${d.pct}%`).join(
        '; ',
      )
    });`,
    `some mark's window is open ${all.pct}% of the ${(all.span / 1000).toFixed(1)} s the marks span`,
    `(${(runMs / 1000).toFixed(1)} s run): at most the chance that a kill at a random moment loses a batch`,
    `(the fake reads a request after its sender put it on the wire).`,
    killedAt === null
      ? ''
      : `At the kill, ${all.open} mark(s) whose rows were received were still on their way.`,
  ].join(' ')
}

export async function fanOut(stack: Stack, db: postgres.Sql) {
  const notifications = knob('BENCH_NOTIF_NOTIFICATIONS', 100_000)
  const users = knob('BENCH_NOTIF_USERS', 50_000)
  const latencyMs = knob('BENCH_NOTIF_LATENCY_MS', 50)
  const perUser = Math.max(1, Math.round(notifications / users))
  const webEvery = knob('BENCH_NOTIF_WEB_EVERY', 2)
  const expo = await startExpo({ latencyMs, countOnly: true })
  const web = await startWebPush({ latencyMs, countOnly: true })
  try {
    const t0 = performance.now()
    // 5,000 users a statement: one statement of 50,000 took 6 minutes (their triggers' work grows
    // faster than the rows), ten of 5,000 about a tenth of that.
    for (let from = 1; from <= users; from += 5000) {
      await db`insert into auth.users (id, email)
               select ('b24a0000-0000-4000-8000-' || lpad(to_hex(i), 12, '0'))::uuid, 'bench-fan-' || i || '@bench.local'
                 from generate_series(${from}::int, ${
        Math.min(users, from + 4999)
      }::int) i on conflict do nothing`
    }
    await db`update public.notification_preferences set quiet_hours_start = null, quiet_hours_end = null, daily_cap = 500
              where user_id::text like 'b24a0000-%'`
    const sub = await (await fetch(`${web.env.WEB_PUSH_FAKE_URL}/__control/subscribe`, {
      method: 'POST',
      body: '{"shared": true}',
    })).json()
    await db`insert into public.notification_devices (user_id, kind, address)
             select ('b24a0000-0000-4000-8000-' || lpad(to_hex(i), 12, '0'))::uuid, 'expo', 'ExponentPushToken[bench-' || i || ']'
               from generate_series(1, ${users}::int) i on conflict do nothing`
    if (webEvery === 0) {
      // All mobile: every second user has a second phone instead of a browser.
      await db`insert into public.notification_devices (user_id, kind, address)
               select ('b24a0000-0000-4000-8000-' || lpad(to_hex(i), 12, '0'))::uuid, 'expo', 'ExponentPushToken[bench2-' || i || ']'
                 from generate_series(2, ${users}::int, 2) i on conflict do nothing`
    } else {
      await db`insert into public.notification_devices (user_id, kind, address, key_p256dh, key_auth)
             select ('b24a0000-0000-4000-8000-' || lpad(to_hex(i), 12, '0'))::uuid, 'web_push',
                    ${web.env.WEB_PUSH_FAKE_URL} || '/push/' || gen_random_uuid(), ${sub.keys.p256dh}, ${sub.keys.auth}
               from generate_series(${webEvery}::int, ${users}::int, ${webEvery}::int) i on conflict do nothing`
    }
    console.log(
      `  fixture: ${users} users, their devices in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
    )
    const t1 = performance.now()
    const step = 10_000
    for (let from = 1; from <= users; from += step) {
      await db`insert into public.notifications (user_id, type, payload)
               select ('b24a0000-0000-4000-8000-' || lpad(to_hex(i), 12, '0'))::uuid, 'labs.step_prompt', jsonb_build_object('title', 'Step ' || k)
                 from generate_series(${from}::int, ${
        Math.min(users, from + step - 1)
      }::int) i, generate_series(1, ${perUser}::int) k`
    }
    const expected =
      await db`select d.channel, d.notification_id, v.address, d.id from private.notification_deliveries d
                               join public.notification_devices v on v.id = d.device_id where d.user_id::text like 'b24a0000-%'`
    const written = users * perUser
    console.log(
      `  ${written} notifications written (10,000 users a statement) with ${expected.length} outbox rows in ` +
        `${((performance.now() - t1) / 1000).toFixed(1)} s`,
    )

    const env = {
      ...stack.functionEnv,
      ...expo.env,
      ...web.env,
      SUPABASE_URL: stack.apiUrl,
      SUPABASE_SERVICE_ROLE_KEY: stack.serviceRoleKey,
      SUPABASE_ANON_KEY: stack.anonKey,
    }
    // Another checkout's sender (an earlier commit) measures the design before, on this fixture.
    const senderRoot = Deno.env.get('BENCH_NOTIF_SENDER_ROOT') ?? ROOT
    const spawn = () =>
      new Deno.Command(`${ROOT}/node_modules/.bin/deno`, {
        args: ['run', '-A', `${senderRoot}/scripts/bench/_notification_sender.ts`],
        env,
        stdout: 'inherit',
        stderr: 'inherit',
      }).spawn()
    const received = () => expo.counts.size + web.counts.size
    // As many as the pg_cron job starts each minute (its invocations, 4).
    const senders = knob('BENCH_NOTIF_SENDERS', 4)
    const before = machine()
    const pids = stack.pids()
    const ours = () => ({
      // The bench's process: the fakes, and the senders once they ended (reaped children).
      bench: cpuSeconds('self'),
      fakes: cpuSeconds('self', false, true),
      postgres: pids.Postgres ? cpuSeconds(pids.Postgres, true) : 0,
      postgrest: pids.PostgREST ? cpuSeconds(pids.PostgREST) : 0,
    })
    const oursBefore = ours()
    const started = performance.now()
    const first = Array.from({ length: senders }, spawn)
    const allDone = Promise.all(first.map((p) => p.status))
    const kill = knob('BENCH_NOTIF_KILL', 1) === 1
    while (kill && received() < expected.length / 2) {
      const done = await Promise.race([
        allDone.then(() => true),
        new Promise((r) => setTimeout(() => r(false), 50)),
      ])
      if (done) break
    }
    // The kill comes at a random moment after half was received, not at once: the fakes count a
    // request when they answer it, which is the moment its sender marks its next group, so a
    // kill right at the count landed in a mark's window far more often than a crash would.
    const jitterMs = kill ? Math.random() * knob('BENCH_NOTIF_KILL_JITTER_MS', 1000) : 0
    if (jitterMs) await Promise.race([allDone, new Promise((r) => setTimeout(r, jitterMs))])
    const killEpochMs = Date.now()
    if (!kill) await allDone
    // SIGTERM: a stop (a deploy; the edge runtime's beforeunload): the senders send what they
    // marked and release the rest. SIGKILL: a crash, which can lose a batch on its way.
    const signal = (Deno.env.get('BENCH_NOTIF_KILL_SIGNAL') ?? 'SIGTERM') as Deno.Signal
    const signalAll = (sig: Deno.Signal) => {
      for (const p of first) {
        try {
          p.kill(sig)
        } catch { /* it had already finished */ }
      }
    }
    signalAll(signal)
    const killedAt = performance.now()
    // A stop that takes longer than a lease is a crash after all.
    const grace = setTimeout(() => signalAll('SIGKILL'), 10_000)
    await allDone
    clearTimeout(grace)
    console.log(
      `  ${senders} sender(s) sent ${signal} after ${((killedAt - started) / 1000).toFixed(1)} s (${
        jitterMs.toFixed(0)
      } ms after half was received) with ${received()} deliveries received; ended ${
        ((performance.now() - killedAt) / 1000).toFixed(1)
      } s later; restarting`,
    )
    let runs = 1
    while (true) {
      const [{ open }] = await db`select count(*)::int as open from private.notification_deliveries
                                  where user_id::text like 'b24a0000-%' and status in ('pending', 'claimed', 'attempting')`
      if (!open) break
      runs++
      await Promise.all(Array.from({ length: senders }, spawn).map((p) => p.status))
      await new Promise((r) => setTimeout(r, 500)) // leases of the dead run end after BENCH_SENDER_LEASE_S
    }
    const elapsed = (performance.now() - started) / 1000
    const after = machine()
    const oursAfter = ours()
    const used = (k: keyof typeof oursAfter) => oursAfter[k] - oursBefore[k]

    let lost = 0
    for (const row of expected) {
      const key = row.channel === 'expo'
        ? `${row.notification_id}|${row.address}`
        : `${row.notification_id.replace(/-/g, '')}|${row.address.split('/').pop()}`
      if (!(row.channel === 'expo' ? expo.counts : web.counts).has(key)) lost++
    }
    const duplicates = [...expo.counts.values(), ...web.counts.values()].filter((c) => c > 1).length
    const exposure = await markWindows(
      db,
      expected,
      (row) => {
        const key = row.channel === 'expo'
          ? `${row.notification_id}|${row.address}`
          : `${row.notification_id.replace(/-/g, '')}|${row.address.split('/').pop()}`
        return (row.channel === 'expo' ? expo.arrivals : web.arrivals).get(key)
      },
      started,
      kill ? killEpochMs : null,
    )
    const statuses = await db`select status, count(*)::int as n from private.notification_deliveries
                              where user_id::text like 'b24a0000-%' group by 1 order by 1`
    console.log(
      `  fan-out: ${written} notifications, ${expected.length} deliveries (${expo.counts.size} Expo, ${web.counts.size} Web Push ` +
        `received) in ${
          elapsed.toFixed(1)
        } s with ${latencyMs} ms provider latency, ${senders} sender(s) side by side, ${
          signal === 'SIGKILL' ? 'killed' : 'stopped'
        } once (${signal}, ${runs} rounds): ` +
        `${duplicates} duplicates, ${lost} lost; target: 100,000 to 150,000 devices within 60 s, 0 and 0`,
    )
    console.log(
      `    machine: load average ${before.load} at the start, ${after.load} at the end; ${
        (after.busySeconds - before.busySeconds).toFixed(0)
      } CPU-seconds busy of ${
        (navigator.hardwareConcurrency * elapsed).toFixed(0)
      } (every process on the machine, other sessions' included)`,
    )
    console.log(
      `    this fan-out's own CPU: ${
        (used('bench') + used('postgres') + used('postgrest')).toFixed(0)
      } CPU-seconds (senders ${(used('bench') - used('fakes')).toFixed(0)}, the fakes and this bench ${
        used('fakes').toFixed(0)
      }, Postgres ${used('postgres').toFixed(0)}, ` +
        `PostgREST ${
          used('postgrest').toFixed(0)
        }); the rest of the machine's busy time was other processes'`,
    )
    console.log(`    ${exposure}`)
    console.log(`    before this design: ${BEFORE}`)
    console.log(
      `    outbox: ${statuses.map((s) => `${s.status} ${s.n}`).join(', ')}` +
        (statuses.some((s) => s.status === 'unknown')
          ? ' (unknown: attempted by the killed run; delivered at most once, so not sent again)'
          : ''),
    )
    await db`delete from public.notifications where user_id::text like 'b24a0000-%'`
    await db`delete from public.notification_devices where user_id::text like 'b24a0000-%'`
  } finally {
    await expo.stop()
    await web.stop()
  }
}

/** The api's edge functions in a process of their own, configured with the fakes' addresses. */
function edgeFunctions(stack: Stack, env: Record<string, string>, port: number) {
  return new Deno.Command(`${ROOT}/node_modules/.bin/deno`, {
    args: ['run', '-A', `${ROOT}/scripts/bench/_notification_sender.ts`],
    env: {
      ...stack.functionEnv,
      ...env,
      SUPABASE_URL: stack.apiUrl,
      SUPABASE_SERVICE_ROLE_KEY: stack.serviceRoleKey,
      SUPABASE_ANON_KEY: stack.anonKey,
      BENCH_SENDER_SERVE_PORT: String(port),
    },
    stdout: 'inherit',
    stderr: 'inherit',
  }).spawn()
}

/**
 * Push latency: notifications written at a steady rate (a statement every 10 ms, or one
 * notification per statement below 100 a second), each to a user with an Expo token (every
 * BENCH_NOTIF_WEB_EVERY-th also a Web Push subscription), delivered by what the outbox's insert
 * kick starts through pg_net. The stack's gateway has no provider configuration, so Vault's
 * project_url points, for this measure, at the api run with the fakes' (edgeFunctions above):
 * the path is the deployed one (trigger, pg_net's queue, the deliver endpoint, the providers).
 */
async function pushLatency(stack: Stack, db: postgres.Sql) {
  const rates = (Deno.env.get('BENCH_NOTIF_RATES') ?? '10,1000').split(',').map(Number).filter((r) => r > 0)
  const seconds = knob('BENCH_NOTIF_RATE_SECONDS', 5)
  const users = knob('BENCH_NOTIF_LATENCY_USERS', 1000)
  const webEvery = knob('BENCH_NOTIF_WEB_EVERY', 2)
  const latencyMs = knob('BENCH_NOTIF_LATENCY_MS', 50)
  const expo = await startExpo({ latencyMs, countOnly: true })
  const web = await startWebPush({ latencyMs, countOnly: true })
  // Beside the stack's ports (the gateway's + 70), so benches of other checkouts do not collide.
  const port = knob('BENCH_NOTIF_FUNCTIONS_PORT', Number(new URL(stack.apiUrl).port) + 70)
  const functions = edgeFunctions(stack, { ...expo.env, ...web.env }, port)
  const [{ url: projectUrl }] = await db`select decrypted_secret as url from vault.decrypted_secrets where name = 'project_url'`
  try {
    await db`insert into auth.users (id, email)
             select ('b24b0000-0000-4000-8000-' || lpad(to_hex(i), 12, '0'))::uuid, 'bench-push-' || i || '@bench.local'
               from generate_series(1, ${users}::int) i on conflict do nothing`
    await db`update public.notification_preferences set quiet_hours_start = null, quiet_hours_end = null, daily_cap = 500
              where user_id::text like 'b24b0000-%'`
    const sub = await (await fetch(`${web.env.WEB_PUSH_FAKE_URL}/__control/subscribe`, {
      method: 'POST',
      body: '{"shared": true}',
    })).json()
    await db`insert into public.notification_devices (user_id, kind, address)
             select ('b24b0000-0000-4000-8000-' || lpad(to_hex(i), 12, '0'))::uuid, 'expo', 'ExponentPushToken[latency-' || i || ']'
               from generate_series(1, ${users}::int) i on conflict do nothing`
    if (webEvery > 0) {
      await db`insert into public.notification_devices (user_id, kind, address, key_p256dh, key_auth)
               select ('b24b0000-0000-4000-8000-' || lpad(to_hex(i), 12, '0'))::uuid, 'web_push',
                      ${web.env.WEB_PUSH_FAKE_URL} || '/push/' || gen_random_uuid(), ${sub.keys.p256dh}, ${sub.keys.auth}
                 from generate_series(${webEvery}::int, ${users}::int, ${webEvery}::int) i on conflict do nothing`
    }
    for (let i = 0; i < 100; i++) {
      if (await fetch(`http://127.0.0.1:${port}/functions/v1/api/health`).then((r) => r.body?.cancel(), () => null) !== null) break
      await new Promise((r) => setTimeout(r, 200))
    }
    await db`update vault.secrets set secret = ${`http://127.0.0.1:${port}`} where name = 'project_url'`
    const writers = postgres(stack.dbUrl, { max: 8, onnotice: () => {} })
    try {
      for (const rate of rates) {
        const [{ kicks: kicksBefore }] = await db`select kicks from private.notification_push_kick`
        const tickMs = Math.max(10, 1000 / rate)
        const perTick = Math.max(1, Math.round((rate * tickMs) / 1000))
        const ticks = Math.round((seconds * 1000) / tickMs)
        const tag = `latency-${rate}-${crypto.randomUUID().slice(0, 8)}`
        const started = performance.now()
        const writes: Promise<unknown>[] = []
        for (let t = 0; t < ticks; t++) {
          const wait = started + t * tickMs - performance.now()
          if (wait > 0) await new Promise((r) => setTimeout(r, wait))
          // Users in turn, so no user reaches the daily cap.
          const first = (t * perTick) % users
          writes.push(writers`insert into public.notifications (user_id, type, payload)
            select ('b24b0000-0000-4000-8000-' || lpad(to_hex(1 + (${first}::int + k) % ${users}::int), 12, '0'))::uuid,
                   'labs.step_prompt', jsonb_build_object('title', ${tag}::text, 'k', ${t}::int * 1000 + k)
              from generate_series(0, ${perTick - 1}::int) k`.execute()) // now: a query of postgres.js waits for its await
        }
        await Promise.all(writes)
        const writtenIn = (performance.now() - started) / 1000
        const expected = await db`
          select d.channel, d.notification_id, v.address, extract(epoch from n.created_at) * 1000 as written
            from public.notifications n
            join private.notification_deliveries d on d.notification_id = n.id
            join public.notification_devices v on v.id = d.device_id
           where n.user_id::text like 'b24b0000-%' and n.payload ->> 'title' = ${tag}`
        const keyOf = (row: postgres.Row) =>
          row.channel === 'expo'
            ? `${row.notification_id}|${row.address}`
            : `${row.notification_id.replace(/-/g, '')}|${row.address.split('/').pop()}`
        const arrival = (row: postgres.Row) => (row.channel === 'expo' ? expo.arrivals : web.arrivals).get(keyOf(row))
        const deadline = performance.now() + 60_000
        while (expected.some((r) => arrival(r) === undefined) && performance.now() < deadline) {
          await new Promise((r) => setTimeout(r, 100))
        }
        const latencies = expected.flatMap((r) => {
          const at = arrival(r)
          return at === undefined ? [] : [at - Number(r.written)]
        }).sort((a, b) => a - b)
        const q = (x: number) => latencies[Math.min(latencies.length - 1, Math.floor(x * latencies.length))] ?? NaN
        const duplicates = expected.filter((r) => ((r.channel === 'expo' ? expo.counts : web.counts).get(keyOf(r)) ?? 0) > 1).length
        const [{ kicks }] = await db`select kicks from private.notification_push_kick`
        const notifications = ticks * perTick
        console.log(
          `  push latency at ${rate}/s: ${notifications} notifications in ${writtenIn.toFixed(1)} s, ${expected.length} ` +
            `deliveries, ${latencies.length} received, from the write to the fake provider p50 ${q(0.5).toFixed(0)} ms, ` +
            `p99 ${q(0.99).toFixed(0)} ms, max ${q(1).toFixed(0)} ms; ${duplicates} duplicates, ` +
            `${Number(kicks) - Number(kicksBefore)} kicks (pg_net requests); target: p50 2,000 ms, p99 5,000 ms`,
        )
        figure(`push latency p50 at ${rate}/s`, q(0.5), 'ms', '< 2000')
        figure(`push latency p99 at ${rate}/s`, q(0.99), 'ms', '< 5000')
      }
    } finally {
      await writers.end()
    }
  } finally {
    await db`update vault.secrets set secret = ${projectUrl} where name = 'project_url'`
    try {
      functions.kill('SIGKILL')
    } catch { /* already gone */ }
    await functions.status
    await db`delete from public.notifications where user_id::text like 'b24b0000-%'`
    await db`delete from public.notification_devices where user_id::text like 'b24b0000-%'`
    await expo.stop()
    await web.stop()
  }
}

export const bench: BenchModule = {
  name: 'notifications',
  async run(stack: Stack) {
    const db = postgres(stack.dbUrl, { max: 2, onnotice: () => {} })
    try {
      console.log('\n== notifications: outbox insert cost, push latency, fan-out with a stopped sender')
      await insertCost(db)
      if (knob('BENCH_NOTIF_PUSH_LATENCY', 1) === 1) await pushLatency(stack, db)
      if (knob('BENCH_NOTIF_FANOUT', 1) === 1) await fanOut(stack, db)
    } finally {
      await db.end()
    }
  },
}
