// The security review of delivery: Web Push endpoints held to known push services (registration,
// the database, the sender), no redirects followed, fixed retirement reasons and bounded answers;
// time-sensitive types past the daily cap; nothing pushed or mailed to deactivated accounts or
// accounts being deleted; digests only to confirmed, unsuppressed addresses; devices forgotten
// when the last session ends.
import { strict as assert } from 'node:assert'
import { api, assertError, clientAs, createUser, env, sql, type TestUser } from './_helpers.ts'
import { appClient, followLink, freshEmail, lastMailTo, linkIn, resetAuthRateLimits } from './_auth.ts'
import {
  deliver,
  expoDevice,
  expoMessages,
  quietOff,
  senderTest,
  statuses,
  webDevice,
  webFake,
  webMessages,
  webSubscription,
} from './_notifications.ts'
import { DEFAULT_WEB_PUSH_HOSTS, webPushEndpointProblem } from '../functions/_shared/web_push.ts'

const failNext = (endpoint: string, how: Record<string, unknown>) =>
  fetch(`${webFake}/__control/fail`, { method: 'POST', body: JSON.stringify({ endpoint, times: 1, ...how }) })
    .then((r) => r.json())
const device = async (id: string) =>
  (await sql`select retired_at, retired_reason from public.notification_devices where id = ${id}`)[0]
const keys = { p256dh: 'B'.repeat(87), auth: 'A'.repeat(22) }

senderTest('a Web Push endpoint must be a known push service: /api names the field, the database refuses what it can know', async () => {
  const user = await createUser()
  for (
    const endpoint of [
      'https://push.example.net/send/abc', // https, but no push service of the list
      'https://fcm.googleapis.com.evil.example/fcm/send/abc',
      'https://notify.windows.com/w/?token=abc', // `*.` wants a subdomain
      'http://fcm.googleapis.com/fcm/send/abc',
      'https://fcm.googleapis.com:8443/fcm/send/abc',
      'https://169.254.169.254/latest/meta-data',
      'https://me@fcm.googleapis.com/fcm/send/abc',
    ]
  ) {
    assertError(
      await api('/api/notifications/devices', {
        token: user.token,
        body: { web_push_subscription: { endpoint, keys } },
      }),
      400,
      'web_push_subscription.endpoint',
    )
  }
  const [{ n }] =
    await sql`select count(*)::int as n from public.notification_devices where user_id = ${user.id}`
  assert.equal(n, 0, 'nothing written')
  for (
    const endpoint of [
      'https://fcm.googleapis.com/fcm/send/abc',
      'https://updates.push.services.mozilla.com/wpush/v2/gAAAA',
      'https://web.push.apple.com/QGx0',
      'https://wns2-par02p.notify.windows.com/w/?token=BQYAAAD',
    ]
  ) {
    const ok = await api('/api/notifications/devices', {
      token: user.token,
      body: { web_push_subscription: { endpoint, keys } },
    })
    assert.equal(ok.status, 201, `${endpoint}: ${JSON.stringify(ok.body)}`)
  }

  // PostgREST: the database's rule (https, a host name, no port or credentials) for the table
  // and the RPC alike; which push services is the api's configuration.
  const rest = clientAs(user.token)
  for (
    const address of [
      'https://10.0.0.1/push',
      'https://metadata/computeMetadata/v1',
      'http://push.example.net/x',
      'https://me@fcm.googleapis.com/x',
    ]
  ) {
    const viaRpc = await rest.rpc('register_notification_device', {
      kind: 'web_push',
      address,
      key_p256dh: keys.p256dh,
      key_auth: keys.auth,
    })
    assert.equal(viaRpc.error?.code, '23514', address)
    assert.match(viaRpc.error!.message, /^address: /)
    const viaTable = await rest.from('notification_devices').insert({
      kind: 'web_push',
      address,
      key_p256dh: keys.p256dh,
      key_auth: keys.auth,
    })
    assert.equal(viaTable.error?.code, '23514', address)
  }
})

senderTest('WEB_PUSH_ALLOWED_HOSTS replaces or extends the default list; loopback only with WEB_PUSH_ALLOW_LOOPBACK', () => {
  const saved = ['WEB_PUSH_ALLOWED_HOSTS', 'WEB_PUSH_ALLOW_LOOPBACK'].map((k) =>
    [k, Deno.env.get(k)] as const
  )
  try {
    Deno.env.delete('WEB_PUSH_ALLOWED_HOSTS')
    Deno.env.delete('WEB_PUSH_ALLOW_LOOPBACK')
    assert.deepEqual(DEFAULT_WEB_PUSH_HOSTS, [
      'fcm.googleapis.com',
      'updates.push.services.mozilla.com',
      '*.push.apple.com',
      '*.notify.windows.com',
    ])
    assert.equal(webPushEndpointProblem('https://fcm.googleapis.com/fcm/send/x'), null)
    for (
      const refused of [
        'http://127.0.0.1:4000/push/x',
        'https://localhost/push/x',
        'https://[::1]/x',
        'https://0x7f.1/x', // 127.0.0.1 in another notation
        'https://push.example.net/x',
      ]
    ) {
      assert.ok(webPushEndpointProblem(refused), refused)
    }
    Deno.env.set('WEB_PUSH_ALLOWED_HOSTS', 'push.example.net')
    assert.equal(webPushEndpointProblem('https://push.example.net/x'), null)
    assert.ok(
      webPushEndpointProblem('https://fcm.googleapis.com/fcm/send/x'),
      'the list replaced the default',
    )
    Deno.env.set('WEB_PUSH_ALLOWED_HOSTS', 'default, *.example.net')
    assert.equal(webPushEndpointProblem('https://fcm.googleapis.com/fcm/send/x'), null)
    assert.equal(webPushEndpointProblem('https://eu.push.example.net/x'), null)
    assert.ok(webPushEndpointProblem('https://example.net/x'), '`*.` wants a subdomain')
    Deno.env.set('WEB_PUSH_ALLOWED_HOSTS', 'default,10.0.0.1')
    assert.ok(webPushEndpointProblem('https://10.0.0.1/x'), 'an IP literal is never a push service')
    Deno.env.set('WEB_PUSH_ALLOW_LOOPBACK', 'true')
    assert.equal(webPushEndpointProblem('http://127.0.0.1:4000/push/x'), null)
    assert.ok(webPushEndpointProblem('http://10.0.0.1/x'), 'loopback only, not any address')
  } finally {
    for (const [k, v] of saved) v === undefined ? Deno.env.delete(k) : Deno.env.set(k, v)
  }
})

senderTest('a subscription written around the api to a host not allowed is retired at send time, not called', async () => {
  const user = await createUser()
  await quietOff(user)
  const written = await clientAs(user.token).rpc('register_notification_device', {
    kind: 'web_push',
    address: 'https://push.example.net/send/abc',
    key_p256dh: keys.p256dh,
    key_auth: keys.auth,
  })
  assert.equal(written.error, null, 'the database accepts an https host name')
  const [n] = await sql`select private.notify(${user.id}, 'labs.step_prompt', ${
    sql.json({ title: crypto.randomUUID() })
  }) as id`
  await deliver()
  assert.deepEqual(await statuses(n.id), ['web_push:retired'])
  const d = await device((written.data as any).id)
  assert.ok(d.retired_at)
  assert.equal(d.retired_reason, 'endpoint not allowed')
})

senderTest('a redirect from a push service is not followed: the delivery fails', async () => {
  const user = await createUser()
  await quietOff(user)
  const browser = await webDevice(user)
  // Another subscription on the same service: a sender that follows the 307 delivers there.
  const elsewhere = await webSubscription()
  await failNext(browser.endpoint, { status: 307, location: elsewhere.endpoint })
  const [n] = await sql`select private.notify(${user.id}, 'labs.step_prompt', ${
    sql.json({ title: crypto.randomUUID() })
  }) as id`
  await deliver()
  assert.deepEqual(await webMessages(elsewhere.endpoint), [])
  assert.deepEqual(await statuses(n.id), ['web_push:failed'])
  const [row] = await sql`select error from private.notification_deliveries where notification_id = ${n.id}`
  assert.match(row.error, /307/)
  assert.equal((await device(browser.id)).retired_at, null)
})

senderTest('a gone subscription is retired with fixed words, never the answer; at most 1 KB of an answer is read', async () => {
  const user = await createUser()
  await quietOff(user)
  const [told, long] = [await webDevice(user), await webDevice(user)]
  await failNext(told.endpoint, { status: 410, body: 'ami-id: i-0secret; role: admin-credentials' })
  const size = 64 * 1024 * 1024
  await failNext(long.endpoint, { status: 404, body_bytes: size })
  const [n] = await sql`select private.notify(${user.id}, 'labs.step_prompt', ${
    sql.json({ title: crypto.randomUUID() })
  }) as id`
  await deliver()
  assert.deepEqual(await statuses(n.id), ['web_push:retired', 'web_push:retired'])
  assert.equal((await device(told.id)).retired_reason, 'gone (410)')
  assert.equal((await device(long.id)).retired_reason, 'not found (404)')
  // What the client pulled of the 64 MB answer: the first KB (plus what the sockets buffer).
  const { bytes } = await (await fetch(
    `${webFake}/__control/streamed?endpoint=${encodeURIComponent(long.endpoint)}`,
  )).json()
  assert.ok(bytes < size / 4, `pulled ${bytes} of ${size} bytes`)
})

senderTest('the baton pass and the check-in reminder are exempt from the daily cap; quiet hours still hold them', async () => {
  const [sam, kim] = await Promise.all([createUser(), createUser()])
  await quietOff(kim)
  await sql`update public.notification_preferences set daily_cap = 1 where user_id = ${kim.id}`
  const phone = await expoDevice(kim)
  await sql`select private.notify(${kim.id}, 'labs.step_prompt', jsonb_build_object('title', 'first'))`
  await deliver()
  assert.equal((await expoMessages(phone.token)).length, 1, 'the cap of 1 is used')
  const [baton] = await sql`select private.notify(${kim.id}, 'workout.baton_pass',
    jsonb_build_object('date', '2026-11-26', 'fromUserId', ${sam.id}::text, 'checkinId', gen_random_uuid())) as id`
  const [reminder] = await sql`select private.notify(${kim.id}, 'workout.checkin_reminder',
    jsonb_build_object('date', '2026-11-26', 'windowStartsAt', now() + interval '20 minutes')) as id`
  const [step] =
    await sql`select private.notify(${kim.id}, 'labs.step_prompt', jsonb_build_object('title', 'second')) as id`
  await deliver()
  assert.deepEqual(await statuses(baton.id), ['expo:sent'])
  assert.deepEqual(await statuses(reminder.id), ['expo:sent'])
  assert.deepEqual(await statuses(step.id), ['expo:capped'])
  assert.deepEqual(
    (await expoMessages(phone.token)).map((m: any) => m.data.type).sort(),
    ['labs.step_prompt', 'workout.baton_pass', 'workout.checkin_reminder'],
  )

  // Quiet hours around now (UTC): the baton pass waits for their end.
  const night = await createUser()
  await sql`update public.notification_preferences
               set timezone = 'UTC', daily_cap = 1,
                   quiet_hours_start = (now() at time zone 'UTC' - interval '1 hour')::time,
                   quiet_hours_end = (now() at time zone 'UTC' + interval '1 hour')::time
             where user_id = ${night.id}`
  await expoDevice(night)
  const [held] = await sql`select private.notify(${night.id}, 'workout.baton_pass',
    jsonb_build_object('date', '2026-11-26', 'fromUserId', ${sam.id}::text, 'checkinId', gen_random_uuid())) as id`
  await deliver()
  const [row] = await sql`select status, deliver_after > now() + interval '50 minutes' as later
                            from private.notification_deliveries where notification_id = ${held.id}`
  assert.deepEqual({ ...row }, { status: 'pending', later: true })
})

senderTest('nothing is pushed to a deactivated account or one being deleted: queued rows are skipped, none are written', async () => {
  const [off, leaving] = await Promise.all([createUser(), createUser()])
  const phones = new Map<string, string>()
  for (const u of [off, leaving]) {
    await quietOff(u)
    phones.set(u.id, (await expoDevice(u)).token)
  }
  const notify = async (u: TestUser) =>
    (await sql`select private.notify(${u.id}, 'labs.step_prompt', ${
      sql.json({ title: crypto.randomUUID() })
    }) as id`)[0]
      .id as string
  const queued = [await notify(off), await notify(leaving)]
  assert.deepEqual(await statuses(queued[0]), ['expo:pending'])
  await sql`update public.profiles set is_active = false where id = ${off.id}`
  await sql`insert into private.account_deletions (user_id, requested_via) values (${leaving.id}, 'support')`
  try {
    await deliver()
    for (const id of queued) assert.deepEqual(await statuses(id), ['expo:skipped'])
    for (const u of [off, leaving]) {
      assert.deepEqual(await statuses(await notify(u)), [], 'a new notification queues nothing')
      assert.deepEqual(await expoMessages(phones.get(u.id)!), [])
    }
  } finally {
    await sql`delete from private.account_deletions where user_id = ${leaving.id}`
  }
})

senderTest('the digest goes only to confirmed, unsuppressed addresses of live accounts', async () => {
  const users = Object.fromEntries(
    await Promise.all(
      ['ok', 'unconfirmed', 'suppressed', 'inactive', 'leaving'].map(async (k) =>
        [k, await createUser()] as const
      ),
    ),
  )
  for (const [kind, u] of Object.entries(users)) {
    await sql`update public.notification_preferences set email_digest = true, timezone = 'UTC', digest_hour = 8
               where user_id = ${u.id}`
    if (kind !== 'unconfirmed') await sql`update auth.users set email_confirmed_at = now() where id = ${u.id}`
    await sql`insert into public.notifications (user_id, type, payload, created_at)
              values (${u.id}, 'labs.step_prompt', '{"title": "Coil"}', '2031-05-01T06:00:00Z')`
  }
  await sql`insert into private.email_suppressions (address, reason, svix_id)
            values (${users.suppressed.email.toLowerCase()}, 'bounced', ${`msg_test_${crypto.randomUUID()}`})`
  await sql`update public.profiles set is_active = false where id = ${users.inactive.id}`
  await sql`insert into private.account_deletions (user_id, requested_via) values (${users.leaving.id}, 'support')`
  try {
    const res = await api('/api/notifications/cron/digest', {
      headers: { 'x-cron-secret': env('NOTIFICATIONS_CRON_SECRET') },
      body: { at: '2031-05-01T09:00:00Z' },
    })
    assert.equal(res.status, 200, JSON.stringify(res.body))
    const inbox = async (to: string) =>
      await (await fetch(`${env('RESEND_BASE_URL')}/__control/sent?to=${encodeURIComponent(to)}`)).json()
    assert.equal((await inbox(users.ok.email)).length, 1)
    for (const kind of ['unconfirmed', 'suppressed', 'inactive', 'leaving']) {
      const u = users[kind]
      assert.equal((await inbox(u.email)).length, 0, kind)
      // Not claimed at all (a claimed send refused at Resend would show as an error, again every hour).
      assert.ok(!res.body.results.errors.some((e: any) => e.user_id === u.id), kind)
      const [g] =
        await sql`select claimed_until, last_sent_on from private.notification_digests where user_id = ${u.id}`
      assert.ok(!g || (g.claimed_until === null && g.last_sent_on === null), kind)
    }
  } finally {
    await sql`delete from private.account_deletions where user_id = ${users.leaving.id}`
  }
})

senderTest("signing out everywhere forgets the user's devices; signing out one of two sessions keeps them", async () => {
  await resetAuthRateLimits()
  const email = freshEmail('push-devices')
  const password = 'correct horse'
  const first = appClient()
  await first.auth.signUp({ email, password })
  await followLink(linkIn(await lastMailTo(email)))
  const [a, b] = [appClient(), appClient()]
  for (const c of [a, b]) assert.equal((await c.auth.signInWithPassword({ email, password })).error, null)
  const session = (await a.auth.getSession()).data.session!
  const token = `ExponentPushToken[out-${crypto.randomUUID().slice(0, 12)}]`
  const reg = await api('/api/notifications/devices', {
    token: session.access_token,
    body: { expo_push_token: token },
  })
  assert.equal(reg.status, 201, JSON.stringify(reg.body))
  const devices = async () =>
    (await sql`select count(*)::int as n from public.notification_devices where user_id = ${session.user.id}`)[
      0
    ].n

  assert.equal((await b.auth.signOut({ scope: 'local' })).error, null)
  assert.equal(await devices(), 1, 'another session is still signed in')
  assert.equal((await a.auth.signOut()).error, null) // scope global, the default
  assert.equal(await devices(), 0)
})
