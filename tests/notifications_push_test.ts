// Pushes within seconds of the write: the outbox's insert kick (private.kick_notification_deliveries)
// starts a sender run through pg_net at once, at most one request per interval however many rows
// are written, and the run takes what was written meanwhile. The every-minute pg_cron job is
// paused in these tests, so what arrives was sent by the kick alone. Speed is the bench's
// (scripts/bench/notifications.ts); the bounds here are generous and fail only a minute's cadence.
import { strict as assert } from 'node:assert'
import { createUser, sql, test, type TestUser } from './_helpers.ts'
import { expoDevice, expoMessages, quietOff, setKick, statuses, webDevice, webMessages } from './_notifications.ts'

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Runs fn with the pg_cron delivery job paused (and the kick on), then puts both back. */
function kickTest(name: string, fn: () => Promise<void>) {
  test(name, async () => {
    await setKick(true)
    await sql`update cron.job set active = false where jobname = 'notification-deliveries'`
    try {
      await fn()
    } finally {
      await sql`update cron.job set active = true where jobname = 'notification-deliveries'`
    }
  })
}

/** Waits until check() is true, up to ms; returns how long it took, or null. */
async function within(ms: number, check: () => Promise<boolean>) {
  const t0 = performance.now()
  while (performance.now() - t0 < ms) {
    if (await check()) return performance.now() - t0
    await sleep(50)
  }
  return null
}

/** Requests queued through pg_net so far (the local stand-in's id sequence). */
const netRequests = async () =>
  Number((await sql`select last_value from net.http_request_queue_id_seq`)[0].last_value)

const notify = async (user: TestUser, title: string = crypto.randomUUID()) =>
  (await sql`select private.notify(${user.id}, 'labs.step_prompt', jsonb_build_object('title', ${title}::text)) as id`)[0]
    .id as string

kickTest('a notification is at the fake Expo and Web Push within seconds of its write, without the job', async () => {
  const user = await createUser()
  await quietOff(user)
  const phone = await expoDevice(user)
  const browser = await webDevice(user)
  const id = await notify(user)
  const took = await within(5000, async () =>
    (await expoMessages(phone.token)).length === 1 && (await webMessages(browser.endpoint)).length === 1
  )
  assert.ok(took !== null, `delivered within 5 s (statuses: ${await statuses(id)})`)
  assert.deepEqual(await statuses(id), ['expo:sent', 'web_push:sent'])
})

kickTest('many written at once reach each device once, with far fewer requests than writes', async () => {
  const users = await Promise.all(Array.from({ length: 4 }, () => createUser()))
  const phones: string[] = []
  const browsers: string[] = []
  for (const u of users) {
    await sql`update public.notification_preferences set quiet_hours_start = null, quiet_hours_end = null, daily_cap = 500
               where user_id = ${u.id}`
    phones.push((await expoDevice(u)).token)
    browsers.push((await webDevice(u)).endpoint)
  }
  const perUser = 50
  // A run an earlier test kicked lingers 1.5 s and would deliver these writes without a kick of
  // their own: let it end first, so the count below is this test's.
  await sleep(2000)
  const requestsBefore = await netRequests()
  const [{ kicks: kicksBefore }] = await sql`select kicks from private.notification_push_kick`
  // 200 writes, each its own statement and transaction, 4 at a time (the test's connections).
  const t0 = performance.now()
  await Promise.all(users.flatMap((u) => Array.from({ length: perUser }, (_, i) => notify(u, `n${i}`))))
  const writingMs = performance.now() - t0
  const took = await within(10_000, async () => {
    for (const token of phones) if ((await expoMessages(token)).length < perUser) return false
    for (const endpoint of browsers) if ((await webMessages(endpoint)).length < perUser) return false
    return true
  })
  assert.ok(took !== null, 'every notification delivered within 10 s of the last write')
  await sleep(2000) // a run still lingering would show a duplicate now
  for (const token of phones) {
    const ms = await expoMessages(token)
    assert.equal(ms.length, perUser)
    assert.equal(new Set(ms.map((m: any) => m.data.notification_id)).size, perUser)
  }
  for (const endpoint of browsers) {
    const ms = await webMessages(endpoint)
    assert.equal(ms.length, perUser)
    assert.equal(new Set(ms.map((m: any) => m.topic)).size, perUser)
  }
  // One request per min_interval (500 ms) at most while writing, whatever the number of writes.
  const requests = (await netRequests()) - requestsBefore
  const [{ kicks }] = await sql`select kicks from private.notification_push_kick`
  assert.equal(requests, Number(kicks) - Number(kicksBefore), 'every request was a kick')
  assert.ok(requests >= 1 && requests <= Math.ceil(writingMs / 500) + 1, `${requests} requests in ${writingMs} ms`)
  assert.ok(requests <= users.length * perUser / 10, `${requests} requests for ${users.length * perUser} writes`)
})

kickTest('quiet hours still hold: the kicked run leaves a row due later; a row not yet due makes no request', async () => {
  const user = await createUser()
  // Quiet hours around this moment, in UTC.
  await sql`update public.notification_preferences
               set timezone = 'UTC',
                   quiet_hours_start = (now() at time zone 'UTC' - interval '1 hour')::time,
                   quiet_hours_end = (now() at time zone 'UTC' + interval '1 hour')::time
             where user_id = ${user.id}`
  const phone = await expoDevice(user)
  const [{ kicks: kicksBefore }] = await sql`select kicks from private.notification_push_kick`
  // The kick's interval must have passed since the last test's writes.
  await sleep(600)
  const id = await notify(user)
  // The kicked run claims it (so it was looked at), holds it until the quiet hours end, sends nothing.
  const held = await within(5000, async () => {
    const [row] = await sql`select status, deliver_after > now() + interval '30 minutes' as later
                              from private.notification_deliveries where notification_id = ${id}`
    return row.status === 'pending' && row.later
  })
  assert.ok(held !== null, 'held until the quiet hours end')
  const [{ kicks }] = await sql`select kicks from private.notification_push_kick`
  assert.equal(Number(kicks), Number(kicksBefore) + 1)
  await sleep(2000) // past the run's linger
  assert.deepEqual(await expoMessages(phone.token), [])

  // A check-in reminder due 30 minutes before a window two hours away: no request at all.
  await quietOff(user)
  await sleep(600)
  const requestsBefore = await netRequests()
  const [reminder] = await sql`select private.notify(${user.id}, 'workout.checkin_reminder',
    jsonb_build_object('windowStartsAt', now() + interval '2 hours', 'date', current_date)) as id`
  assert.deepEqual(await statuses(reminder.id), ['expo:pending'])
  await sleep(1000)
  assert.equal(await netRequests(), requestsBefore)
  assert.deepEqual(await statuses(reminder.id), ['expo:pending'])
})

kickTest('with the kick off, a write waits for the job: the kick is what delivers at once', async () => {
  const user = await createUser()
  await quietOff(user)
  const phone = await expoDevice(user)
  await setKick(false)
  try {
    const requestsBefore = await netRequests()
    const id = await notify(user)
    await sleep(1500)
    assert.deepEqual(await statuses(id), ['expo:pending'])
    assert.equal(await netRequests(), requestsBefore)
    assert.deepEqual(await expoMessages(phone.token), [])
  } finally {
    await setKick(true)
  }
})
