// The push sender's schedule: pg_cron starts several runs side by side each minute (each its own
// edge-function run), and they share the outbox without sending anything twice.
import { strict as assert } from 'node:assert'
import { createUser, sql } from './_helpers.ts'
import type { Db } from '../functions/_shared/db.ts'
import { runDeliveries } from '../functions/api/routes/notifications/push_delivery.ts'
import { expoDevice, expoMessages, senderTest, webDevice, webMessages, webSubscription } from './_notifications.ts'

senderTest('the deliver job starts 4 runs side by side each minute; together they send each notification once', async () => {
  const users = await Promise.all(Array.from({ length: 4 }, () => createUser()))
  const phones: string[] = []
  const browsers: string[] = []
  for (const u of users) {
    await sql`update public.notification_preferences set quiet_hours_start = null, quiet_hours_end = null, daily_cap = 500 where user_id = ${u.id}`
    phones.push((await expoDevice(u)).token)
    browsers.push((await webDevice(u)).endpoint)
  }
  await sql`select private.notify(u, 'labs.step_prompt', jsonb_build_object('title', 'Step ' || i))
              from unnest(${users.map((u) => u.id)}::uuid[]) u, generate_series(1, 25) i`
  const [job] = await sql`select schedule, command from cron.job where jobname = 'notification-deliveries'`
  assert.equal(job.schedule, '* * * * *')
  // Run the job's command as pg_cron does: four requests, numbered, each answered by its own run.
  const queued = await sql.unsafe(job.command)
  assert.equal(queued.length, 4)
  const ids = queued.map((r) => Number(Object.values(r)[0]))
  let responses: { id: number; status_code: number; content: string }[] = []
  for (let i = 0; i < 300 && responses.length < 4; i++) {
    responses =
      await sql`select id, status_code, content from net._http_response where id = any (${ids}::bigint[])`
    if (responses.length < 4) await new Promise((r) => setTimeout(r, 100))
  }
  assert.equal(responses.length, 4, 'every request reached the function')
  for (const r of responses) {
    assert.equal(r.status_code, 200, r.content)
    assert.equal(JSON.parse(r.content).success, true)
  }
  for (const token of phones) {
    const ms = await expoMessages(token)
    assert.equal(ms.length, 25)
    assert.equal(new Set(ms.map((m: any) => m.data.notification_id)).size, 25)
  }
  for (const endpoint of browsers) {
    const ms = await webMessages(endpoint)
    assert.equal(ms.length, 25)
    assert.equal(new Set(ms.map((m: any) => m.topic)).size, 25)
  }
})

senderTest('schedule_edge_function_job numbers its invocations and refuses a count out of 1-20', async () => {
  const jobName = `test-parallel-${crypto.randomUUID().slice(0, 8)}`
  await sql`select private.schedule_edge_function_job(${jobName}, '0 0 1 1 *', '/api/notifications/cron/deliver',
                                                     'NOTIFICATIONS_CRON_SECRET', 3)`
  try {
    const [job] = await sql`select command from cron.job where jobname = ${jobName}`
    // The queued requests' bodies, rolled back unsent: one per invocation, numbered 1..3.
    const bodies: number[] = []
    await sql.begin(async (tx) => {
      const queued = await tx.unsafe(job.command)
      const ids = queued.map((r) => Number(Object.values(r)[0]))
      const rows = await tx`select convert_from(body, 'utf8')::jsonb as body from net.http_request_queue
                            where id = any (${ids}::bigint[]) order by id`
      bodies.push(...rows.map((r) => r.body.invocation))
      throw new Error('rollback')
    }).catch((e) => assert.equal(e.message, 'rollback'))
    assert.deepEqual(bodies, [1, 2, 3])
  } finally {
    await sql`select cron.unschedule(${jobName})`
  }
  for (const n of [0, 21]) {
    await assert.rejects(
      sql`select private.schedule_edge_function_job('test-bad', '* * * * *', '/api/x/y', 'NOTIFICATIONS_CRON_SECRET', ${n}::int)`,
      /invocations must be 1 to 20/,
    )
  }
})

/** A claimed outbox row as the claim returns it (for the runs below, whose database is a stand-in). */
let rowId = 9_000_000_000
function claimedRow(
  channel: 'expo' | 'web_push',
  sub: { endpoint: string; keys: { p256dh: string; auth: string } },
  remaining: number,
) {
  return {
    id: ++rowId,
    claim_id: crypto.randomUUID(),
    channel,
    address: channel === 'expo' ? `ExponentPushToken[ok-${crypto.randomUUID().slice(0, 12)}]` : sub.endpoint,
    key_p256dh: channel === 'expo' ? null : sub.keys.p256dh,
    key_auth: channel === 'expo' ? null : sub.keys.auth,
    notification_id: crypto.randomUUID(),
    type: 'labs.step_prompt',
    payload: { title: 'Share' },
    expires_at: new Date(Date.now() + 3_600_000).toISOString(),
    context: null,
    remaining,
  }
}

senderTest('a run claims Web Push rows up to its CPU share, then Expo rows only', async () => {
  // The run against a stand-in for its four database calls (claims made up here), sending for
  // real to the fake push service: it asks for Web Push rows until it holds its share.
  const sub = await webSubscription()
  const asked: string[][] = []
  const webRow = () => claimedRow('web_push', sub, 10)
  const db = {
    rpc: (fn: string, args: Record<string, any>) => {
      const reply = (data: unknown) => Promise.resolve({ data, error: null })
      if (fn === 'claim_notification_deliveries') {
        asked.push(args.channels)
        return reply(asked.length <= 3 && args.channels.includes('web_push') ? [webRow(), webRow()] : [])
      }
      if (fn === 'start_notification_deliveries') return reply(args.ids)
      if (fn === 'record_notification_deliveries') return reply(args.results.length)
      return reply([])
    },
  }
  const report = await runDeliveries(db as unknown as Db, { webPushPerRun: 3 })
  assert.deepEqual(asked, [['expo', 'web_push'], ['expo', 'web_push'], ['expo']])
  assert.equal(report.sent, 4)
  // The empty claim of Expo rows only says nothing of what Web Push has left.
  assert.equal(report.remaining, 10)
  assert.equal((await webMessages(sub.endpoint)).length, 4)
})

/**
 * A stand-in database for a run that is asked to stop while its first mark is on its way: it
 * answers claims with `claim` (told whether the stop came already), keeps what was marked and
 * what was recorded.
 */
function stoppingDb(claim: (aborted: boolean) => unknown[]) {
  const stop = new AbortController()
  const marked = new Set<number>()
  const recorded: { id: number; outcome: string; claim_id?: string }[] = []
  const rpc = (fn: string, args: Record<string, any>) => {
    const reply = (data: unknown) => Promise.resolve({ data, error: null })
    if (fn === 'claim_notification_deliveries') return reply(claim(stop.signal.aborted))
    if (fn === 'start_notification_deliveries') {
      for (const i of args.ids) marked.add(i)
      // The mark is sent all the same: once asked for, it may be committed.
      stop.abort()
      return reply(args.ids)
    }
    if (fn === 'record_notification_deliveries') {
      recorded.push(...args.results)
      return reply(args.results.length)
    }
    return reply([])
  }
  return { db: { rpc } as unknown as Db, stop, marked, recorded }
}

senderTest('a run asked to stop sends what it marked, releases the rest of its claim and claims nothing more', async () => {
  const sub = await webSubscription()
  const row = (channel: 'expo' | 'web_push') => claimedRow(channel, sub, 500)
  const rows = [
    ...Array.from({ length: 150 }, () => row('expo')),
    ...Array.from({ length: 30 }, () => row('web_push')),
  ]
  let claims = 0
  let claimsAfterStop = 0
  const prefetched = row('expo')
  const { db, stop, marked, recorded } = stoppingDb((aborted) => {
    if (aborted) claimsAfterStop++
    // The second is the run's prefetch, asked for before the stop.
    return claims++ === 0 ? rows : claims === 2 ? [prefetched] : []
  })
  const report = await runDeliveries(db, {
    signal: stop.signal,
    expoConcurrency: 1,
    webPushBatch: 10,
  })
  assert.equal(claimsAfterStop, 0, 'nothing claimed after the stop')
  assert.equal(claims, 2)
  // Only the mark that was on its way: the first Expo request (one request a group here).
  assert.deepEqual([...marked].sort(), rows.slice(0, 100).map((r) => r.id).sort())
  assert.equal(recorded.length, rows.length + 1, 'every claimed row has an outcome, the prefetched one too')
  for (const r of recorded) assert.equal(r.outcome, marked.has(r.id) ? 'sent' : 'released', String(r.id))
  assert.equal(report.sent, marked.size)
  assert.equal(report.released, rows.length + 1 - marked.size)
  // The providers got exactly the marked rows.
  const byId = new Map(rows.map((r) => [r.id, r]))
  for (const r of rows.filter((r) => r.channel === 'expo').slice(0, 120)) {
    assert.equal((await expoMessages(r.address)).length, marked.has(r.id) ? 1 : 0, r.address)
  }
  const webMarked = [...marked].filter((i) => byId.get(i)!.channel === 'web_push').length
  assert.equal((await webMessages(sub.endpoint)).length, webMarked)
})

senderTest('a run stopped while a Web Push batch is being marked posts that batch and releases the others', async () => {
  const sub = await webSubscription()
  const rows = Array.from({ length: 30 }, () => claimedRow('web_push', sub, 0))
  let claimsAfterStop = 0
  const { db, stop, marked, recorded } = stoppingDb((aborted) => {
    if (aborted) claimsAfterStop++
    return marked.size ? [] : rows
  })
  const report = await runDeliveries(db, { signal: stop.signal, webPushBatch: 10 })
  assert.equal(marked.size, 10, 'one batch marked')
  assert.equal(report.sent, 10)
  assert.equal(report.released, 20)
  for (const r of recorded.filter((r) => r.outcome === 'released')) {
    assert.ok(!marked.has(r.id))
    // A release names its claim: the database hands back only what that claim still holds.
    assert.equal(r.claim_id, rows.find((x) => x.id === r.id)!.claim_id)
  }
  assert.equal((await webMessages(sub.endpoint)).length, 10)
  // A run that starts after the stop claims nothing.
  const after = await runDeliveries(db, { signal: stop.signal })
  assert.equal(claimsAfterStop, 0)
  assert.equal(after.claimed, 0)
})
