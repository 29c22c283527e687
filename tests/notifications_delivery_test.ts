// The push sender against local fakes of Expo's API and a Web Push service: texts and deep
// links, tickets and receipts, DeviceNotRegistered and 410 retiring devices, 429 with backoff,
// at most once per device with runs side by side, leases that run out.
import { strict as assert } from 'node:assert'
import { api, createUser, sql } from './_helpers.ts'
import {
  deliver,
  expoDevice,
  expoFake,
  expoMessages,
  quietOff,
  senderTest,
  statuses,
  webDevice,
  webFake,
  webMessages,
} from './_notifications.ts'

senderTest('a notification reaches the Expo and Web Push devices once, with its text and deep link', async () => {
  const [sam, kim] = await Promise.all([createUser(), createUser()])
  await sql`update public.profiles set full_name = 'Sam' where id = ${sam.id}`
  await sql`insert into public.workout_windows (user_id, activity_type, window_start_time, window_end_time, timezone)
    values (${kim.id}, 'cardio', '18:00', '20:00', 'UTC')`
  await quietOff(kim)
  const phone = await expoDevice(kim)
  const browser = await webDevice(kim)
  const [n] = await sql`select private.notify(${kim.id}, 'workout.baton_pass',
    jsonb_build_object('date', '2026-11-26', 'fromUserId', ${sam.id}::text, 'checkinId', gen_random_uuid())) as id`
  assert.deepEqual(await statuses(n.id), ['expo:pending', 'web_push:pending'])

  await deliver()
  await deliver()
  const [m] = await expoMessages(phone.token)
  assert.equal((await expoMessages(phone.token)).length, 1)
  assert.equal(m.title, 'Your turn!')
  assert.equal(m.body, 'Sam checked in — your turn! Your window starts at 18:00.')
  assert.deepEqual(m.data, {
    path: '/workout/chain/2026-11-26',
    notification_id: n.id,
    type: 'workout.baton_pass',
  })
  assert.equal(m.priority, 'high')
  const web = await webMessages(browser.endpoint)
  assert.equal(web.length, 1)
  assert.equal(web[0].payload.body, 'Sam checked in — your turn! Your window starts at 18:00.')
  assert.equal(web[0].payload.path, '/workout/chain/2026-11-26')
  assert.equal(web[0].urgency, 'high')
  assert.equal(web[0].topic, n.id.replace(/-/g, ''))
  assert.deepEqual(await statuses(n.id), ['expo:sent', 'web_push:sent'])
  // The Expo ticket was kept and its receipt read.
  const [row] =
    await sql`select ticket_id, receipt_status from private.notification_deliveries where notification_id = ${n.id} and channel = 'expo'`
  assert.ok(row.ticket_id)
  assert.equal(row.receipt_status, 'ok')
})

senderTest('DeviceNotRegistered (ticket or receipt) and Web Push 410 retire the device; re-registering revives it', async () => {
  const user = await createUser()
  await quietOff(user)
  const gone = await expoDevice(user, 'gone')
  const receiptGone = await expoDevice(user, 'receiptgone')
  const expired = await webDevice(user, { gone: 410 })
  const [n] = await sql`select private.notify(${user.id}, 'team.member_added', ${
    sql.json({ n: crypto.randomUUID() })
  }) as id`
  await deliver()
  await deliver()
  const devices =
    await sql`select id, retired_at, retired_reason from public.notification_devices where user_id = ${user.id}`
  const byId = new Map(devices.map((d) => [d.id, d]))
  for (const d of [gone, receiptGone, expired]) {
    assert.ok(byId.get(d.id)!.retired_at, `${JSON.stringify(d)} retired`)
  }
  assert.match(byId.get(gone.id)!.retired_reason, /DeviceNotRegistered/)
  assert.match(byId.get(expired.id)!.retired_reason, /410/)
  const rows =
    await sql`select device_id, status, receipt_status from private.notification_deliveries where notification_id = ${n.id}`
  const rowOf = (id: string) => rows.find((r) => r.device_id === id)
  assert.equal(rowOf(gone.id)!.status, 'retired')
  assert.equal(rowOf(expired.id)!.status, 'retired')
  assert.equal(rowOf(receiptGone.id)!.receipt_status, 'error')
  // A retired device gets nothing new...
  const [later] = await sql`select private.notify(${user.id}, 'team.member_added', ${
    sql.json({ n: crypto.randomUUID() })
  }) as id`
  assert.deepEqual(await statuses(later.id), [])
  // ...until the app registers it again.
  const again = await api('/api/notifications/devices', {
    token: user.token,
    body: { expo_push_token: receiptGone.token },
  })
  assert.equal(again.body.device.retired_at, null)
  const [third] = await sql`select private.notify(${user.id}, 'team.member_added', ${
    sql.json({ n: crypto.randomUUID() })
  }) as id`
  assert.deepEqual(await statuses(third.id), ['expo:pending'])
})

senderTest('429 and 5xx are retried with backoff; Retry-After is honoured', async () => {
  const user = await createUser()
  await quietOff(user)
  const phone = await expoDevice(user)
  const browser = await webDevice(user)
  // More 429s than the SDK's own retries (3 attempts), and a 429 with Retry-After from the push service.
  await fetch(`${expoFake}/__control/fail`, {
    method: 'POST',
    body: JSON.stringify({ token: phone.token, status: 429, times: 3 }),
  })
  await fetch(`${webFake}/__control/fail`, {
    method: 'POST',
    body: JSON.stringify({ endpoint: browser.endpoint, status: 429, times: 1, retry_after: 600 }),
  })
  const [n] = await sql`select private.notify(${user.id}, 'team.member_added', ${
    sql.json({ n: crypto.randomUUID() })
  }) as id`
  const t0 = Date.now()
  await deliver()
  const rows =
    await sql`select channel, status, attempts, error, extract(epoch from deliver_after) * 1000 as after
                           from private.notification_deliveries where notification_id = ${n.id} order by channel`
  assert.deepEqual(rows.map((r) => `${r.channel}:${r.status}:${r.attempts}`), [
    'expo:pending:1',
    'web_push:pending:1',
  ])
  assert.match(rows[0].error, /429/)
  assert.ok(Number(rows[0].after) >= t0 + 25_000, 'expo backs off about 30 s')
  assert.ok(Number(rows[1].after) >= t0 + 590_000, 'web push waits the Retry-After')
  assert.equal((await expoMessages(phone.token)).length, 0)
  // Once the backoff has passed, the next run delivers.
  await deliver({ at: new Date(Date.now() + 11 * 60_000).toISOString() })
  assert.equal((await expoMessages(phone.token)).length, 1)
  assert.equal((await webMessages(browser.endpoint)).length, 1)
  assert.deepEqual(await statuses(n.id), ['expo:sent', 'web_push:sent'])
})

senderTest('runs side by side deliver each notification once per device', async () => {
  const users = await Promise.all(Array.from({ length: 4 }, () => createUser()))
  const phones: string[] = []
  const browsers: string[] = []
  for (const u of users) {
    await quietOff(u)
    phones.push((await expoDevice(u)).token)
    browsers.push((await webDevice(u)).endpoint)
  }
  const ids = users.map((u) => u.id)
  await sql`select private.notify(u, 'labs.step_prompt', jsonb_build_object('title', 'Step ' || i))
              from unnest(${ids}::uuid[]) u, generate_series(1, 10) i`
  await Promise.all([
    deliver({ limit: 7 }),
    deliver({ limit: 5 }),
    deliver({ limit: 11 }),
    deliver({ limit: 3 }),
  ])
  for (const token of phones) {
    const ms = await expoMessages(token)
    assert.equal(ms.length, 10)
    assert.equal(new Set(ms.map((m: any) => m.data.notification_id)).size, 10)
  }
  for (const endpoint of browsers) {
    const ms = await webMessages(endpoint)
    assert.equal(ms.length, 10)
    assert.equal(new Set(ms.map((m: any) => m.topic)).size, 10)
  }
})

senderTest('a lease that runs out: claimed rows go back to pending, rows being sent are never sent again', async () => {
  const user = await createUser()
  await quietOff(user)
  await expoDevice(user)
  await expoDevice(user)
  const at = '2027-05-01T12:00:00Z'
  const [n] =
    await sql`insert into public.notifications (user_id, type, created_at) values (${user.id}, 'team.member_added', ${at}) returning id`
  const claimed =
    await sql`select * from private.claim_notification_deliveries(10, 60, array['expo'], ${at}::timestamptz)
                             where notification_id = ${n.id}`
  assert.equal(claimed.length, 2)
  // The run marks one row as being sent, then dies.
  await sql`select private.start_notification_deliveries(array[${claimed[0].id}]::bigint[], ${
    claimed[0].claim_id
  })`
  // Another run after the lease: the attempted row is unknown, the other is claimed again.
  const again =
    await sql`select * from private.claim_notification_deliveries(10, 60, array['expo'], '2027-05-01T12:02:00Z'::timestamptz)
                           where notification_id = ${n.id}`
  assert.deepEqual(again.map((r) => r.id), [claimed[1].id])
  const [first] = await sql`select status from private.notification_deliveries where id = ${claimed[0].id}`
  assert.equal(first.status, 'unknown')
  // The dead run's claim no longer starts anything.
  const late = await sql`select private.start_notification_deliveries(array[${claimed[1].id}]::bigint[], ${
    claimed[1].claim_id
  }) as id`
  assert.deepEqual(late.filter((r) => r.id !== null), [])
})

senderTest('receipts a dead run was asking for are asked for again after its hold', async () => {
  const user = await createUser()
  await expoDevice(user)
  const [n] =
    await sql`insert into public.notifications (user_id, type, created_at) values (${user.id}, 'team.member_added', '2027-06-01T12:00:00Z') returning id`
  const [row] =
    await sql`update private.notification_deliveries set status = 'sent', ticket_id = 'ticket-of-a-dead-run',
                            sent_at = now() - interval '1 hour', receipt_status = 'checking', claimed_until = now() + interval '5 minutes'
                          where notification_id = ${n.id} returning id`
  const held = await sql`select id from private.claim_expo_receipts(5000, 0) where id = ${row.id}`
  assert.equal(held.length, 0)
  await sql`update private.notification_deliveries set claimed_until = now() - interval '1 second' where id = ${row.id}`
  const again = await sql`select id, ticket_id from private.claim_expo_receipts(5000, 0) where id = ${row.id}`
  assert.deepEqual(again.map((r) => r.ticket_id), ['ticket-of-a-dead-run'])
  await sql`delete from public.notifications where id = ${n.id}`
})

senderTest('a chunk costs one claim, one mark per provider batch and one record of all its outcomes', async () => {
  const users = await Promise.all(Array.from({ length: 3 }, () => createUser()))
  const phones: string[] = []
  const browsers: string[] = []
  for (const u of users) {
    await quietOff(u)
    await sql`update public.notification_preferences set daily_cap = 500 where user_id = ${u.id}`
    phones.push((await expoDevice(u)).token)
    browsers.push((await webDevice(u)).endpoint)
  }
  const ids = users.map((u) => u.id)
  // 30 notifications each: 90 Expo rows (one request of up to 100, one mark) and 90 Web Push
  // rows (batches of 50: 2 marks). Rows claimed by other tests' runs are theirs; this run is alone
  // with these only when it takes a chunk larger than everything due.
  await sql`select private.notify(u, 'labs.step_prompt', jsonb_build_object('title', 'Step ' || i))
              from unnest(${ids}::uuid[]) u, generate_series(1, 30) i`
  // Receipts are left for later: they are recorded in calls of their own.
  const results = await deliver({ limit: 5000, receipt_delay_seconds: 86_400 })
  assert.ok(results.claimed >= 180, JSON.stringify(results))
  // Every outcome of a chunk in one call, not one per request or per row: 1 Expo request and 2
  // Web Push batches marked, 1 record (a second chunk only if other tests' rows came due).
  assert.ok(results.calls.start >= 3, JSON.stringify(results))
  assert.ok(results.calls.record <= results.calls.claim, JSON.stringify(results))
  assert.ok(results.calls.record <= results.calls.start - 2, JSON.stringify(results))
  for (const token of phones) assert.equal((await expoMessages(token)).length, 30)
  for (const endpoint of browsers) {
    const ms = await webMessages(endpoint)
    assert.equal(ms.length, 30)
    assert.equal(new Set(ms.map((m: any) => m.payload.notification_id)).size, 30)
  }
})

senderTest('a claim does not wait for expired rows a late run is recording; it takes them back later', async () => {
  const user = await createUser()
  await quietOff(user)
  await expoDevice(user)
  const at = '2027-08-01T12:00:00Z'
  const [n] =
    await sql`insert into public.notifications (user_id, type, created_at) values (${user.id}, 'team.member_added', ${at}) returning id`
  const [row] =
    await sql`select * from private.claim_notification_deliveries(10, 60, array['expo'], ${at}::timestamptz)
                          where notification_id = ${n.id}`
  assert.ok(row)
  // A late run is recording this row (its lease ran out meanwhile): it holds the row's lock.
  const late = await sql.reserve()
  try {
    await late`begin`
    await late`select 1 from private.notification_deliveries where id = ${row.id} for update`
    // Another run's claim recovers expired leases: it must skip the row, not wait (which, in the
    // other order, deadlocked two runs).
    const other = await sql.reserve()
    try {
      await other`set lock_timeout = '3s'`
      await other`select * from private.claim_notification_deliveries(10, 60, array['expo'], '2027-08-01T12:05:00Z'::timestamptz)`
    } finally {
      await other`reset lock_timeout`
      other.release()
    }
    const [held] = await sql`select status from private.notification_deliveries where id = ${row.id}`
    assert.equal(held.status, 'claimed')
  } finally {
    await late`rollback`
    late.release()
  }
  // Once the lock is gone, the next claim takes the expired row back.
  const again =
    await sql`select * from private.claim_notification_deliveries(10, 60, array['expo'], '2027-08-01T12:06:00Z'::timestamptz)
                          where notification_id = ${n.id}`
  assert.deepEqual(again.map((r) => r.id), [row.id])
})

senderTest('a released row is pending again at once, its claim not counted; a row marked attempting is never released', async () => {
  const user = await createUser()
  await quietOff(user)
  await expoDevice(user)
  const [n] =
    await sql`insert into public.notifications (user_id, type) values (${user.id}, 'team.member_added') returning id`
  const [row] = await sql`select id from private.notification_deliveries where notification_id = ${n.id}`
  // As a run's claim leaves it (set here, so no other test's rows are claimed on the way).
  const claim = crypto.randomUUID()
  const leaseAs = (status: string) =>
    sql`update private.notification_deliveries set status = ${status}, claim_id = ${claim}, attempts = 1,
          claimed_at = now(), claimed_until = now() + interval '2 minutes' where id = ${row.id}`
  await leaseAs('claimed')
  const release = (claimId: string) =>
    sql`select private.record_notification_deliveries(${
      sql.json([{ id: Number(row.id), outcome: 'released', claim_id: claimId }])
    }) as n`
  // Another claim's release (a run whose lease ran out, the row since taken by another) is ignored.
  assert.equal((await release(crypto.randomUUID()))[0].n, 0)
  const released = await release(claim)
  assert.equal(released[0].n, 1)
  const [after] = await sql`select status, claim_id, claimed_until, claimed_at, attempts
                              from private.notification_deliveries where id = ${row.id}`
  assert.deepEqual(
    { ...after },
    { status: 'pending', claim_id: null, claimed_until: null, claimed_at: null, attempts: 0 },
  )
  // Marked: it may have reached Expo, so a release leaves it for the lease to make it unknown.
  await leaseAs('attempting')
  const kept = await release(claim)
  assert.equal(kept[0].n, 0)
  const [still] = await sql`select status, claim_id from private.notification_deliveries where id = ${row.id}`
  assert.deepEqual({ ...still }, { status: 'attempting', claim_id: claim })
  await sql`delete from public.notifications where id = ${n.id}`
})

senderTest('a row whose device was retired after it was queued is retired by the claim, not sent', async () => {
  const user = await createUser()
  await quietOff(user)
  const { token } = await expoDevice(user)
  const [n] =
    await sql`insert into public.notifications (user_id, type) values (${user.id}, 'team.member_added') returning id`
  // Retired elsewhere (another row's answer) after this row was queued.
  await sql`update public.notification_devices set retired_at = now(), retired_reason = 'DeviceNotRegistered'
             where address = ${token}`
  await deliver()
  assert.deepEqual(await statuses(n.id), ['expo:retired'])
  assert.equal((await expoMessages(token)).length, 0)
})
