// When pushes go out: the check-in reminder 30 minutes before the window in its own zone (a
// daylight-saving night included), quiet hours, the daily cap, types switched off, read ones.
// Each case lives at a future moment (`at`), so the every-minute job of the test stack leaves it alone.
import { strict as assert } from 'node:assert'
import { createUser, sql } from './_helpers.ts'
import { deliver, expoDevice, expoMessages, senderTest, statuses } from './_notifications.ts'

senderTest('the reminder goes out 30 minutes before the window in its zone, across the night Paris moves to summer time', async () => {
  const user = await createUser()
  await sql`insert into public.workout_windows (user_id, activity_type, window_start_time, window_end_time, timezone)
    values (${user.id}, 'cardio', '08:00', '10:00', 'Europe/Paris')`
  const phone = await expoDevice(user)
  // Saturday 2027-03-27, 08:00 CET = 07:00 UTC; Sunday 2027-03-28 (clocks go forward at 02:00), 08:00 CEST = 06:00 UTC.
  for (
    const [jobAt, starts, early, due] of [
      ['2027-03-27T06:26:00Z', '2027-03-27T07:00:00Z', '2027-03-27T06:29:00Z', '2027-03-27T06:30:20Z'],
      ['2027-03-28T05:26:00Z', '2027-03-28T06:00:00Z', '2027-03-28T05:29:00Z', '2027-03-28T05:30:20Z'],
    ]
  ) {
    await sql`select private.run_workout_jobs(${jobAt}::timestamptz)`
    const [n] =
      await sql`select id, payload from public.notifications where user_id = ${user.id} and type = 'workout.checkin_reminder'
                            and (payload ->> 'windowStartsAt')::timestamptz = ${starts}::timestamptz`
    assert.ok(n, `a reminder for the window at ${starts}`)
    const before = (await expoMessages(phone.token)).length
    await deliver({ at: early })
    assert.equal((await expoMessages(phone.token)).length, before, `not yet at ${early}`)
    await deliver({ at: due })
    const ms = await expoMessages(phone.token)
    assert.equal(ms.length, before + 1, `sent by ${due}`)
    assert.equal(ms.at(-1).data.notification_id, n.id)
    assert.equal(
      ms.at(-1).body,
      'Your window starts at 08:00. Check in with a photo to keep the chain going.',
    )
    assert.equal(ms.at(-1).data.path, '/workout/checkin')
  }
})

senderTest('quiet hours hold a push until they end; a reminder whose moment passes in them is dropped', async () => {
  const user = await createUser()
  await sql`update public.notification_preferences set timezone = 'UTC' where user_id = ${user.id}` // 22:00-07:00 by default
  const phone = await expoDevice(user)
  const [n] = await sql`insert into public.notifications (user_id, type, payload, created_at)
    values (${user.id}, 'tone_pack.shared', '{"pack_name": "Calm"}', '2027-01-10T23:00:00Z') returning id`
  await deliver({ at: '2027-01-10T23:00:30Z' })
  const [held] =
    await sql`select status, deliver_after from private.notification_deliveries where notification_id = ${n.id}`
  assert.equal(held.status, 'pending')
  assert.equal(new Date(held.deliver_after).toISOString(), '2027-01-11T07:00:00.000Z')
  assert.equal((await expoMessages(phone.token)).length, 0)
  await deliver({ at: '2027-01-11T07:00:30Z' })
  const ms = await expoMessages(phone.token)
  assert.equal(ms.length, 1)
  assert.equal(ms[0].body, 'Someone shared "Calm" with you.')

  // A reminder for a 06:00 window, due at 05:30, inside quiet hours that end after the window started.
  const [r] = await sql`insert into public.notifications (user_id, type, payload, created_at)
    values (${user.id}, 'workout.checkin_reminder', '{"date": "2027-01-12", "windowStartsAt": "2027-01-12T06:00:00+00:00"}',
            '2027-01-12T05:25:00Z') returning id`
  await deliver({ at: '2027-01-12T05:30:30Z' })
  assert.deepEqual(await statuses(r.id), ['expo:expired'])
  assert.equal((await expoMessages(phone.token)).length, 1)
})

senderTest('the daily cap counts notifications, not devices; switched-off types and read ones are not pushed', async () => {
  const user = await createUser()
  await sql`update public.notification_preferences set quiet_hours_start = null, quiet_hours_end = null, daily_cap = 2,
              types = '{"workout.battle_update": {"push": false}}' where user_id = ${user.id}`
  const phones = [await expoDevice(user), await expoDevice(user)]
  const at = '2027-02-01T12:00:00Z'
  const ids = (await sql`insert into public.notifications (user_id, type, payload, created_at)
    select ${user.id}, 'labs.step_prompt', jsonb_build_object('title', 'Step ' || i), ${at}::timestamptz + make_interval(secs => i)
      from generate_series(1, 4) i returning id`).map((r) => r.id)
  const [off] =
    await sql`insert into public.notifications (user_id, type, created_at) values (${user.id}, 'workout.battle_update', ${at}) returning id`
  const [read] =
    await sql`insert into public.notifications (user_id, type, created_at, read_at) values (${user.id}, 'team.member_added', ${at}, now()) returning id`
  await deliver({ at: '2027-02-01T12:00:30Z' })
  for (const p of phones) assert.equal((await expoMessages(p.token)).length, 2)
  const sent = new Set((await expoMessages(phones[0].token)).map((m: any) => m.data.notification_id))
  assert.deepEqual(
    new Set((await expoMessages(phones[1].token)).map((m: any) => m.data.notification_id)),
    sent,
  )
  const capped =
    (await sql`select count(*)::int as n from private.notification_deliveries where notification_id = any (${ids}::uuid[]) and status = 'capped'`)[
      0
    ].n
  assert.equal(capped, 4) // two notifications on two devices
  assert.deepEqual(await statuses(off.id), ['expo:skipped', 'expo:skipped'])
  assert.deepEqual(await statuses(read.id), ['expo:skipped', 'expo:skipped'])
  // The next local day the cap starts again.
  const [tomorrow] =
    await sql`insert into public.notifications (user_id, type, created_at) values (${user.id}, 'team.member_added', '2027-02-02T09:00:00Z') returning id`
  await deliver({ at: '2027-02-02T09:00:30Z' })
  assert.deepEqual(await statuses(tomorrow.id), ['expo:sent', 'expo:sent'])
})

senderTest('a chain-broken notice goes to the next in the chain once, after a window that ended without a check-in', async () => {
  const [before, after, kept] = [await createUser(), await createUser(), await createUser()]
  // 2027-05-04: before's window 07:00-09:00 UTC; kept checked in, so the one after kept hears nothing.
  const date = '2027-05-04'
  for (const user of [before, kept]) {
    await sql`insert into public.workout_windows (user_id, activity_type, window_start_time, window_end_time, timezone)
      values (${user.id}, 'cardio', '07:00', '09:00', 'UTC')`
  }
  await sql`insert into public.workout_chains (date, user_id, after_user_id, team_color) values
    (${date}, ${before.id}, ${after.id}, 'red'), (${date}, ${kept.id}, ${after.id}, 'blue')`
  await sql`insert into public.workout_checkins (user_id, date, activity_type, status, photo_url, photo_timestamp)
    values (${kept.id}, ${date}, 'cardio', 'verified', 'https://example.test/p.jpg', '2027-05-04T07:30:00Z')`
  const notices = () =>
    sql`select payload from public.notifications where user_id = ${after.id} and type = 'workout.chain_broken'`
  await sql`select private.run_workout_jobs('2027-05-04T08:55:00Z')` // the window is still open
  assert.equal((await notices()).length, 0)
  await sql`select private.run_workout_jobs('2027-05-04T09:05:00Z')`
  await sql`select private.run_workout_jobs('2027-05-04T09:10:00Z')`
  const sent = await notices()
  assert.deepEqual(
    sent.map((n) => n.payload),
    [{ date, beforeUserId: before.id }],
    'once, for the unchecked window only',
  )
})
