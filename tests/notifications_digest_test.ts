// The daily e-mail digest (through the Resend fake) with its one-click unsubscribe, and retention.
import { strict as assert } from 'node:assert'
import { api, assertError, createUser, env, sql, test } from './_helpers.ts'

const CRON = { 'x-cron-secret': env('NOTIFICATIONS_CRON_SECRET') }
const digest = async (at: string) => {
  const res = await api('/api/notifications/cron/digest', { headers: CRON, body: { at } })
  assert.equal(res.status, 200, JSON.stringify(res.body))
  return res.body.results
}
const inbox = async (to: string) =>
  await (await fetch(`${env('RESEND_BASE_URL')}/__control/sent?to=${encodeURIComponent(to)}`)).json()

test("the digest goes out at the user's hour in their zone, once a day, without what they read; one click unsubscribes", async () => {
  const user = await createUser()
  // The digest goes to confirmed addresses only (notifications_security_test.ts).
  await sql`update auth.users set email_confirmed_at = now() where id = ${user.id}`
  const opt = await api('/api/notifications/preferences', {
    method: 'PUT',
    token: user.token,
    body: { email_digest: true, timezone: 'America/New_York', digest_hour: 8 },
  })
  assert.equal(opt.status, 200)
  const ids = (await sql`insert into public.notifications (user_id, type, payload, created_at) values
      (${user.id}, 'tone_pack.shared', '{"pack_name": "Calm"}', '2027-03-01T10:00:00Z'),
      (${user.id}, 'labs.step_prompt', '{"title": "Coil"}', '2027-03-01T10:01:00Z'),
      (${user.id}, 'team.member_added', '{"team_name": "Blue"}', '2027-03-01T10:02:00Z') returning id`).map((
    r,
  ) => r.id)
  // Read in the app: left out of the digest.
  const read = await api('/api/notifications/read', { token: user.token, body: { ids: [ids[2]] } })
  assert.equal(read.body.marked, 1)

  await digest('2027-03-01T12:30:00Z') // 07:30 in New York
  assert.equal((await inbox(user.email)).length, 0)
  await digest('2027-03-01T13:05:00Z') // 08:05
  const mails = await inbox(user.email)
  assert.equal(mails.length, 1)
  assert.equal(mails[0].subject, '2 new notifications')
  assert.match(mails[0].text, /Someone shared "Calm" with you\./)
  assert.match(mails[0].text, /Time for the next step of "Coil"\./)
  assert.doesNotMatch(mails[0].text, /Blue/)
  assert.equal(mails[0].headers['List-Unsubscribe-Post'], 'List-Unsubscribe=One-Click')
  const link = /^<(https?:\/\/[^>]+)>$/.exec(mails[0].headers['List-Unsubscribe'])![1]
  await digest('2027-03-01T20:00:00Z')
  assert.equal((await inbox(user.email)).length, 1, 'one digest a day')

  // One click (RFC 8058): a POST of List-Unsubscribe=One-Click to the link.
  const path = new URL(link).pathname.replace(/^\/functions\/v1/, '') + new URL(link).search
  // A person (or a mail scanner) opening the link gets a page with a button, and nothing changes.
  const page = await fetch(link, { headers: { accept: 'text/html' } })
  assert.equal(page.status, 200)
  assert.match(page.headers.get('content-type') ?? '', /text\/html/)
  const html = await page.text()
  assert.match(html, /<form method="post" action="\?token=[0-9a-f-]{36}">/)
  assert.match(html, /name="List-Unsubscribe" value="One-Click"/)
  const [still] =
    await sql`select email_digest from public.notification_preferences where user_id = ${user.id}`
  assert.equal(still.email_digest, true, 'a GET does not unsubscribe')
  const res = await api(path, {
    method: 'POST',
    rawBody: 'List-Unsubscribe=One-Click',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  })
  assert.equal(res.status, 200, JSON.stringify(res.body))
  assert.deepEqual(res.body, { unsubscribed: true })
  // The page's button: a browser form post, answered with a page.
  const again = await fetch(link, {
    method: 'POST',
    headers: { accept: 'text/html', 'content-type': 'application/x-www-form-urlencoded' },
    body: 'List-Unsubscribe=One-Click',
  })
  assert.equal(again.status, 200)
  assert.match(await again.text(), /You will not get the daily digest any more/)
  const [prefs] =
    await sql`select email_digest from public.notification_preferences where user_id = ${user.id}`
  assert.equal(prefs.email_digest, false)
  await sql`insert into public.notifications (user_id, type, created_at) values (${user.id}, 'team.member_added', '2027-03-02T10:00:00Z')`
  await digest('2027-03-02T13:05:00Z')
  assert.equal((await inbox(user.email)).length, 1)
  assertError(
    await api(`/api/notifications/unsubscribe?token=${crypto.randomUUID()}`, { method: 'POST' }),
    404,
  )
  assertError(await api('/api/notifications/unsubscribe?token=nope', { method: 'POST' }), 400, 'token')
})

test('opting back in gives the digest a new unsubscribe link: an old one turns nothing off', async () => {
  const user = await createUser({ prefix: 'rotate' })
  await sql`update auth.users set email_confirmed_at = now() where id = ${user.id}`
  const setDigest = async (on: boolean) => {
    const res = await api('/api/notifications/preferences', {
      method: 'PUT',
      token: user.token,
      body: { email_digest: on, timezone: 'UTC', digest_hour: 9 },
    })
    assert.equal(res.status, 200, JSON.stringify(res.body))
  }
  /** The unsubscribe path of the newest digest sent to the user. */
  const newestLink = async () => {
    const mails = await inbox(user.email)
    const link = new URL(/^<(https?:\/\/[^>]+)>$/.exec(mails.at(-1).headers['List-Unsubscribe'])![1])
    return link.pathname.replace(/^\/functions\/v1/, '') + link.search
  }
  const unsubscribe = (path: string) =>
    api(path, {
      method: 'POST',
      rawBody: 'List-Unsubscribe=One-Click',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    })
  const digestOn = async () =>
    (await sql`select email_digest from public.notification_preferences where user_id = ${user.id}`)[0].email_digest

  await setDigest(true)
  await sql`insert into public.notifications (user_id, type, created_at) values (${user.id}, 'team.member_added', '2027-04-01T08:00:00Z')`
  await digest('2027-04-01T09:05:00Z')
  const oldLink = await newestLink()
  assert.equal((await unsubscribe(oldLink)).status, 200)
  assert.equal(await digestOn(), false)

  // Back in: the old e-mail's link is dead, the next digest carries a new one that works.
  await setDigest(true)
  assertError(await unsubscribe(oldLink), 404)
  assert.equal(await digestOn(), true, 'the old link did not turn the digest off again')
  await sql`insert into public.notifications (user_id, type, created_at) values (${user.id}, 'team.member_added', '2027-04-02T08:00:00Z')`
  await digest('2027-04-02T09:05:00Z')
  const newLink = await newestLink()
  assert.notEqual(newLink, oldLink)
  // Changing only the hour keeps the link of the e-mails already sent.
  await api('/api/notifications/preferences', { method: 'PUT', token: user.token, body: { digest_hour: 10 } })
  assert.deepEqual((await unsubscribe(newLink)).body, { unsubscribed: true })
  assert.equal(await digestOn(), false)
})

test('the cron endpoints want the notifications cron secret', async () => {
  assertError(await api('/api/notifications/cron/deliver', { body: {} }), 401)
  assertError(
    await api('/api/notifications/cron/digest', { headers: { 'x-cron-secret': 'wrong' }, body: {} }),
    401,
  )
  const [job] = await sql`select schedule from cron.job where jobname = 'notification-deliveries'`
  assert.equal(job.schedule, '* * * * *')
  const [digests] = await sql`select schedule from cron.job where jobname = 'notification-digests'`
  assert.equal(digests.schedule, '2-59/10 * * * *')
})

test('retention prunes read notifications after 90 days and delivery rows after 30, in chunks', async () => {
  const user = await createUser()
  await sql`insert into public.notification_devices (user_id, kind, address) values (${user.id}, 'expo', ${`ExponentPushToken[old-${crypto.randomUUID()}]`})`
  const [oldRead] = await sql`insert into public.notifications (user_id, type, created_at, read_at)
    values (${user.id}, 'team.member_added', now() - interval '91 days', now() - interval '90 days') returning id`
  const [oldUnread] = await sql`insert into public.notifications (user_id, type, created_at)
    values (${user.id}, 'team.member_added', now() - interval '200 days') returning id`
  const [recentRead] = await sql`insert into public.notifications (user_id, type, created_at, read_at)
    values (${user.id}, 'team.member_added', now() - interval '10 days', now()) returning id`
  await sql`update private.notification_deliveries set created_at = now() - interval '31 days' where notification_id = ${oldUnread.id}`
  const [first] = await sql`select private.prune_notifications(90, 30, 1) as r`
  assert.equal(first.r.more, true)
  for (let i = 0; i < 1000; i++) {
    const [{ r }] = await sql`select private.prune_notifications(90, 30, 5000) as r`
    if (!r.more) break
  }
  const left = (await sql`select id from public.notifications where user_id = ${user.id}`).map((r) => r.id)
    .sort()
  assert.deepEqual(left, [oldUnread.id, recentRead.id].sort())
  assert.equal(
    oldRead.id &&
      (await sql`select 1 from private.notification_deliveries where notification_id = ${oldUnread.id}`)
        .length,
    0,
  )
  assert.equal(
    (await sql`select 1 from private.notification_deliveries where notification_id = ${recentRead.id}`)
      .length,
    1,
  )
  const [{ n }] = await sql`select count(*)::int as n from cron.job where jobname = 'notification-retention'`
  assert.equal(n, 1)
})

// Users due for a digest at one moment, in user id order (the order claims take them).
async function dueUsers(n: number, at: string) {
  const users = []
  for (let i = 0; i < n; i++) {
    const user = await createUser()
    await sql`update auth.users set email_confirmed_at = now() where id = ${user.id}`
    const opt = await api('/api/notifications/preferences', {
      method: 'PUT',
      token: user.token,
      body: { email_digest: true, timezone: 'UTC', digest_hour: 8 },
    })
    assert.equal(opt.status, 200, JSON.stringify(opt.body))
    await sql`insert into public.notifications (user_id, type, payload, created_at)
              values (${user.id}, 'tone_pack.shared', '{"pack_name": "Calm"}', ${at}::timestamptz - interval '1 hour')`
    users.push(user)
  }
  return users.sort((a, b) => (a.id < b.id ? -1 : 1))
}
const digestRun = async (body: Record<string, unknown>) => {
  const res = await api('/api/notifications/cron/digest', { headers: CRON, body })
  assert.equal(res.status, 200, JSON.stringify(res.body))
  return res.body.results
}
const fail = (to: string, status: number, name: string, message: string) =>
  fetch(`${env('RESEND_BASE_URL')}/__control/fail`, {
    method: 'POST',
    body: JSON.stringify({ to, status, name, message, times: 1 }),
  }).then((r) => r.body?.cancel())

test('digests go out as Resend batches, chunk after chunk in one run; a refused address waits for a later run', async () => {
  // Far from the other tests' notifications (a claim looks 7 days back at most).
  const at = '2029-05-01T08:30:00Z'
  const [a, b, c] = await dueUsers(3, at)
  await fail(c.email, 422, 'validation_error', 'Invalid `to` field.')
  const run = await digestRun({ at, limit: 2 })
  assert.deepEqual([run.claimed, run.sent, run.failed, run.batches, run.more], [3, 2, 1, 2, false])
  assert.deepEqual(run.errors, [{ user_id: c.id, error: 'Invalid `to` field.' }])
  const [ma, mb] = [(await inbox(a.email))[0], (await inbox(b.email))[0]]
  assert.equal(ma.batch, mb.batch, 'the first chunk is one batch request')
  assert.notEqual(ma.batch, null)
  assert.equal(ma.headers['List-Unsubscribe-Post'], 'List-Unsubscribe=One-Click')
  assert.equal((await inbox(c.email)).length, 0)
  // The refused user is not claimed again by the next run at once, but 10 minutes later.
  assert.equal((await digestRun({ at })).claimed, 0)
  const later = await digestRun({ at: '2029-05-01T08:41:00Z' })
  assert.deepEqual([later.claimed, later.sent], [1, 1])
  assert.equal((await inbox(c.email)).length, 1)
  assert.equal((await inbox(a.email)).length, 1, 'one digest a day')
})

test('a digest run stops at its time budget and the next continues; a lost record sends nothing twice', async () => {
  const at = '2029-06-01T08:30:00Z'
  const users = await dueUsers(3, at)
  const first = await digestRun({ at, limit: 1, budget_ms: 1 })
  assert.deepEqual([first.claimed, first.sent, first.more], [1, 1, true])
  // As if the run had died after Resend took the batch and before recording it, and a
  // notification had come since: the next run claims the same user again and makes the same
  // batch key with a longer body, which Resend refuses (409): the digest went out already.
  await sql`update private.notification_digests set last_sent_on = null, last_sent_at = null, due_at = '2026-01-01'
             where user_id = ${users[0].id}`
  await sql`insert into public.notifications (user_id, type, payload, created_at)
            values (${
    users[0].id
  }, 'team.member_added', '{"team_name": "Blue"}', ${at}::timestamptz - interval '1 minute')`
  const rest = await digestRun({ at, limit: 1 })
  assert.deepEqual([rest.claimed, rest.sent, rest.more], [3, 3, false])
  for (const user of users) assert.equal((await inbox(user.email)).length, 1, user.email)
  const [{ n }] = await sql`select count(*)::int as n from private.notification_digests
                             where user_id = any(${users.map((u) => u.id)}) and last_sent_on = '2029-06-01'`
  assert.equal(n, 3, 'every digest recorded')
})

test('a digest batch refused with 429 is tried again once; a provider error leaves the chunk to a later run', async () => {
  const at = '2029-07-01T08:30:00Z'
  const [a] = await dueUsers(1, at)
  await fail(a.email, 429, 'rate_limit_exceeded', 'Too many requests.')
  const run = await digestRun({ at })
  assert.deepEqual([run.claimed, run.sent, run.failed, run.batches], [1, 1, 0, 1])
  assert.equal((await inbox(a.email)).length, 1)

  const at2 = '2029-07-02T08:30:00Z'
  const [d] = await dueUsers(1, at2)
  await fail(d.email, 500, 'application_error', 'Internal server error')
  const down = await digestRun({ at: at2 })
  assert.deepEqual([down.sent, down.failed, down.more], [0, 1, true])
  assert.equal((await inbox(d.email)).length, 0)
  const back = await digestRun({ at: '2029-07-02T08:45:00Z' })
  assert.equal(back.sent, 1)
  assert.equal((await inbox(d.email)).length, 1)
})

test("a digest is due at the user's hour: opting in schedules it, a send or an empty day moves it to tomorrow, opting out takes it off", async () => {
  const at = '2029-08-01T09:30:00Z' // 11:30 in Paris
  const [user] = await dueUsers(1, at)
  const due = async () =>
    (await sql`select due_at from private.notification_digests where user_id = ${user.id}`)[0].due_at
  const prefs = (body: Record<string, unknown>) =>
    api('/api/notifications/preferences', { method: 'PUT', token: user.token, body })
  // Opting in (UTC, 08:00) made it due at 08:00 UTC of today's date; a new zone and hour move it.
  assert.equal((await prefs({ timezone: 'Europe/Paris', digest_hour: 11 })).status, 200)
  const [{ today }] = await sql`select (now() at time zone 'Europe/Paris')::date::text as today`
  assert.equal((await due()).getTime(), new Date(await parisEleven(today)).getTime())
  assert.equal((await digestRun({ at })).sent, 1)
  assert.equal(
    (await due()).toISOString(),
    '2029-08-02T09:00:00.000Z',
    'tomorrow at 11:00 in Paris (summer time)',
  )
  // Nothing unread the next day: looked at, and moved on to the day after.
  assert.equal((await digestRun({ at: '2029-08-02T09:30:00Z' })).claimed, 0)
  assert.equal((await due()).toISOString(), '2029-08-03T09:00:00.000Z')
  assert.equal((await prefs({ email_digest: false })).status, 200)
  assert.equal(await due(), null)
})
const parisEleven = async (date: string) =>
  (await sql`select ((${date}::date + time '11:00') at time zone 'Europe/Paris')::text as t`)[0].t
