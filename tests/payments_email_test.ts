// E-mail: sending through the local Resend server (who may send to whom, the daily cap,
// idempotency, provider failures, every send logged), and the Svix-signed webhook (signature,
// replays, delivery status, bounce/complaint suppression, inbound mail with its body, malformed
// events acknowledged as ignored with the reason recorded, the database down answered 503).
import { strict as assert } from 'node:assert'
import { Webhook } from 'svix'
import { withApi } from './_api_process.ts'
import { api, assertError, clientAs, createUser, env, sql, test, type TestUser } from './_helpers.ts'
import { refusedAsBadData } from '../functions/_shared/webhooks.ts'

async function verifiedUser(o: { superAdmin?: boolean } = {}): Promise<TestUser> {
  const user = await createUser(o)
  await sql`update auth.users set email_confirmed_at = now() where id = ${user.id}`
  return user
}

const send = (user: TestUser, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  api('/api/email/send', { token: user.token, body, headers })

const mailTo = (to: string, o: Record<string, unknown> = {}) => ({
  to,
  subject: 'Your weekly summary',
  text: 'Hello there',
  ...o,
})

async function resendControl<T = any>(path: string, body?: unknown): Promise<T> {
  const res = await fetch(
    `${env('RESEND_BASE_URL')}/__control/${path}`,
    body === undefined ? {} : {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    },
  )
  return await res.json()
}
const sentTo = (address: string) => resendControl<any[]>(`sent?to=${encodeURIComponent(address)}`)
const logged = async (userId: string) =>
  [...await sql`select to_address, subject, provider_id, status, error from public.email_messages where user_id = ${userId} order by created_at, id`]
    .map((r) => ({ ...r }))

// ---------------------------------------------------------------------------------------
// Sending
// ---------------------------------------------------------------------------------------

test("send: to the caller's own verified address; delivered through Resend and logged", async () => {
  const user = await verifiedUser()
  const res = await send(user, mailTo(user.email.toUpperCase(), { html: '<p>Hello</p>' }))
  assert.equal(res.status, 200, JSON.stringify(res.body))
  assert.equal(res.body.message, 'E-mail sent')
  const out = await sentTo(user.email)
  assert.equal(out.length, 1)
  assert.equal(out[0].from, env('EMAIL_FROM'))
  assert.deepEqual(out[0].to, [user.email], 'sent to the logged, normalized address')
  assert.equal(out[0].subject, 'Your weekly summary')
  assert.equal(out[0].html, '<p>Hello</p>')
  assert.equal(out[0].text, 'Hello there')
  assert.ok(out[0].idempotency_key, 'an idempotency key is always passed to Resend')
  assert.equal(res.body.email.provider_id, out[0].id)
  assert.equal(res.body.email.status, 'sent')
  assert.equal(res.body.email.to_address, user.email)
  assert.deepEqual(await logged(user.id), [{
    to_address: user.email,
    subject: 'Your weekly summary',
    provider_id: out[0].id,
    status: 'sent',
    error: null,
  }])

  const list = await api('/api/email/messages', { token: user.token })
  assert.equal(list.status, 200)
  assert.deepEqual(list.body.messages.map((m: any) => m.id), [res.body.email.id])
  assert.equal(list.body.next_cursor, null)
  // PostgREST: the sender reads their log; nobody else does; nobody writes it.
  const mine = await clientAs(user.token).from('email_messages').select('id, status')
  assert.deepEqual(mine.data, [{ id: res.body.email.id, status: 'sent' }])
  const stranger = await createUser()
  assert.deepEqual(
    (await clientAs(stranger.token).from('email_messages').select('id').eq('user_id', user.id)).data,
    [],
  )
  assert.deepEqual((await api('/api/email/messages', { token: stranger.token })).body.messages, [])
  const forged = await clientAs(user.token).from('email_messages').insert({
    user_id: user.id,
    to_address: 'a@b.c',
    subject: 's',
    idempotency_key: 'k',
    request_hash: 'h',
  })
  assert.equal(forged.error?.code, '42501')
  const finished = await clientAs(user.token).rpc('finish_email_send', {
    message_id: res.body.email.id,
    provider_id: 'fake',
    status: 'delivered',
    error: null,
  })
  assert.equal(finished.error?.code, '42501', "the log's outcome is written only by the endpoint")
})

test("send: not an open relay: others' addresses and unverified addresses are 403; super admins send anywhere", async () => {
  const user = await verifiedUser()
  const unverified = await createUser()
  const colleague = await verifiedUser()
  assertError(await send(user, mailTo(colleague.email)), 403, 'to: ')
  assertError(await send(user, mailTo('someone@example.com')), 403, 'to: ')
  assertError(await send(unverified, mailTo(unverified.email)), 403, 'verified')
  assert.deepEqual(await sentTo(colleague.email), [])
  assert.deepEqual(await sentTo(unverified.email), [])
  assert.deepEqual(await logged(user.id), [])
  assert.deepEqual(await logged(unverified.id), [])

  const admin = await verifiedUser({ superAdmin: true })
  const res = await send(admin, mailTo(colleague.email))
  assert.equal(res.status, 200, JSON.stringify(res.body))
  assert.equal((await sentTo(colleague.email)).length, 1)
  assert.equal((await logged(admin.id))[0].to_address, colleague.email)
  // The same rule for a direct PostgREST client: the SQL function decides.
  const direct = await clientAs(user.token).rpc('begin_email_send', {
    to_address: colleague.email,
    subject: 'x',
    idempotency_key: 'direct',
    request_hash: 'h',
  })
  assert.equal(direct.error?.code, '42501')
})

test("send: a key begun through PostgREST for one's own address cannot carry the mail to someone else", async () => {
  const user = await verifiedUser()
  const victim = `victim-${crypto.randomUUID().slice(0, 8)}@elsewhere.test`
  const mail = mailTo(victim)
  // The hash the api would compute for the victim's mail, attached to a row for the caller's address.
  const digest = await crypto.subtle.digest(
    'SHA-256',
    new TextEncoder().encode(JSON.stringify([victim, mail.subject, null, mail.text])),
  )
  const hash = [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, '0')).join('')
  const key = `relay-${crypto.randomUUID()}`
  const begun = await clientAs(user.token).rpc('begin_email_send', {
    to_address: user.email,
    subject: mail.subject,
    idempotency_key: key,
    request_hash: hash,
  })
  assert.equal(begun.error, null)
  assertError(await send(user, mail, { 'idempotency-key': key }), 409, 'Idempotency-Key')
  assert.deepEqual(await sentTo(victim), [], 'nothing reached the victim')
})

test('send: malformed requests are 400 naming the field, before anything is checked or logged', async () => {
  const user = await verifiedUser()
  const cases: [Record<string, unknown>, string][] = [
    [{ subject: 's', text: 't' }, 'to'],
    [mailTo('not-an-address'), 'to'],
    [mailTo(`${user.email}, other@example.com`), 'to'],
    [mailTo(`${'x'.repeat(320)}@example.com`), 'to'],
    [mailTo(user.email, { subject: '' }), 'subject'],
    [mailTo(user.email, { subject: '   ' }), 'subject'],
    [mailTo(user.email, { subject: 'Hi\r\nBcc: victim@example.com' }), 'subject'],
    [mailTo(user.email, { subject: 'x'.repeat(501) }), 'subject'],
    [{ to: user.email, subject: 'Hi' }, 'html or text'],
    [{ to: user.email, subject: 'Hi', text: '  ', html: '' }, 'html or text'],
    [mailTo(user.email, { text: 'x'.repeat(100_001) }), 'text'],
    [mailTo(user.email, { html: 'x'.repeat(200_001) }), 'html'],
    [mailTo(user.email, { bcc: 'victim@example.com' }), 'bcc'],
    [mailTo(user.email, { subject: 5 }), 'subject'],
  ]
  for (const [body, field] of cases) assertError(await send(user, body), 400, field)
  assertError(
    await send(user, mailTo(user.email), { 'idempotency-key': 'has spaces in it' }),
    400,
    'Idempotency-Key',
  )
  assertError(
    await send(user, mailTo(user.email), { 'idempotency-key': 'k'.repeat(201) }),
    400,
    'Idempotency-Key',
  )
  assertError(await api('/api/email/send', { body: mailTo(user.email) }), 401)
  assert.deepEqual(await logged(user.id), [])
  assert.deepEqual(await sentTo(user.email), [])
})

test('send: the daily cap (20 per user) is 429 and sends nothing more; other users are not affected', async () => {
  const user = await verifiedUser()
  const results = []
  for (let i = 0; i < 20; i++) {
    results.push(
      await send(user, mailTo(user.email, { subject: `Note ${i}` }), { 'idempotency-key': `cap-${i}` }),
    )
  }
  assert.deepEqual(results.map((r) => r.status), Array(20).fill(200))
  assertError(
    await send(user, mailTo(user.email, { subject: 'One too many' })),
    429,
    'daily e-mail limit of 20',
  )
  assert.equal((await sentTo(user.email)).length, 20)
  assert.equal((await logged(user.id)).length, 20)
  // A retry of an earlier request is not a new send: it answers from the log, cap or not.
  const retry = await send(user, mailTo(user.email, { subject: 'Note 3' }), { 'idempotency-key': 'cap-3' })
  assert.equal(retry.status, 200)
  assert.equal(retry.body.message, 'Already sent (same Idempotency-Key)')
  // Concurrent requests at the cap cannot slip past it.
  const other = await verifiedUser()
  await sql`insert into public.email_messages (user_id, to_address, subject, idempotency_key, request_hash, status)
            select ${other.id}, ${other.email}, 'earlier', 'seed-' || n, 'h', 'sent' from generate_series(1, 18) n`
  const burst = await Promise.all(
    Array.from({ length: 5 }, (_, i) => send(other, mailTo(other.email, { subject: `Burst ${i}` }))),
  )
  assert.deepEqual(burst.map((r) => r.status).sort(), [200, 200, 429, 429, 429])
  assert.equal((await sentTo(other.email)).length, 2)
})

test('send: the same Idempotency-Key sends once (also concurrently); reused for another e-mail it is 409', async () => {
  const user = await verifiedUser()
  const headers = { 'idempotency-key': 'weekly-2026-48' }
  const first = await send(user, mailTo(user.email), headers)
  const again = await send(user, mailTo(user.email), headers)
  assert.equal(first.status, 200)
  assert.equal(again.status, 200)
  assert.equal(again.body.email.id, first.body.email.id)
  assert.equal(again.body.email.provider_id, first.body.email.provider_id)
  assert.equal((await sentTo(user.email)).length, 1)
  assertError(
    await send(user, mailTo(user.email, { subject: 'Something else' }), headers),
    409,
    'Idempotency-Key',
  )

  const together = await Promise.all(
    Array.from(
      { length: 4 },
      () => send(user, mailTo(user.email, { subject: 'Together' }), { 'idempotency-key': 'together' }),
    ),
  )
  assert.ok(together.some((r) => r.status === 200), JSON.stringify(together.map((r) => r.body)))
  assert.equal(
    (await sentTo(user.email)).filter((m) => m.subject === 'Together').length,
    1,
    'Resend received it once',
  )
  assert.equal((await logged(user.id)).filter((m) => m.subject === 'Together').length, 1, 'logged once')
  // Two users may use the same key without colliding.
  const other = await verifiedUser()
  assert.equal((await send(other, mailTo(other.email), headers)).status, 200)
  assert.equal((await sentTo(other.email)).length, 1)
})

test('send: a provider failure is 502/503 and logged as failed; the retry with the same key sends once', async () => {
  const user = await verifiedUser()
  await resendControl('fail', {
    to: user.email,
    status: 500,
    name: 'application_error',
    message: 'Internal server error',
  })
  const headers = { 'idempotency-key': 'retry-me' }
  assertError(await send(user, mailTo(user.email), headers), 502, 'e-mail provider')
  assert.deepEqual((await logged(user.id)).map((m) => [m.status, m.error]), [[
    'failed',
    'Internal server error',
  ]])
  const retry = await send(user, mailTo(user.email), headers)
  assert.equal(retry.status, 200, JSON.stringify(retry.body))
  assert.deepEqual((await logged(user.id)).map((m) => [m.status, m.error]), [['sent', null]])
  assert.equal((await sentTo(user.email)).length, 1)

  await resendControl('fail', {
    to: user.email,
    status: 429,
    name: 'rate_limit_exceeded',
    message: 'Too many requests',
  })
  assertError(await send(user, mailTo(user.email, { subject: 'Later' })), 503, 'busy')
})

// ---------------------------------------------------------------------------------------
// The webhook
// ---------------------------------------------------------------------------------------

const svix = () => new Webhook(env('RESEND_WEBHOOK_SECRET'))

async function deliverEmailEvent(
  event: unknown,
  o: { id?: string; at?: Date; secret?: string; headers?: Record<string, string>; raw?: string } = {},
) {
  const payload = o.raw ?? JSON.stringify(event)
  const id = o.id ?? `msg_${crypto.randomUUID()}`
  const at = o.at ?? new Date()
  const signer = o.secret ? new Webhook(o.secret) : svix()
  const headers = o.headers ?? {
    'svix-id': id,
    'svix-timestamp': String(Math.floor(at.getTime() / 1000)),
    'svix-signature': signer.sign(id, at, payload),
  }
  return await api('/api/email/webhook', {
    method: 'POST',
    rawBody: payload,
    headers: { 'content-type': 'application/json', ...headers },
  })
}

const emailEvent = (type: string, data: Record<string, unknown>) => ({
  type,
  created_at: new Date().toISOString(),
  data: {
    created_at: new Date().toISOString(),
    from: 'Journal <journal@mail.journal.test>',
    subject: 'Hi',
    ...data,
  },
})

const stored = async (svixId: string) =>
  (await sql`select count(*)::int as n from private.email_events where svix_id = ${svixId}`)[0].n
const suppressed = async (address: string) =>
  (await sql`select reason from private.email_suppressions where address = ${address.toLowerCase()}`)[0]
    ?.reason ?? null

test('webhook: unsigned, wrongly signed, tampered or stale events are 400 and store nothing', async () => {
  const address = `bounce-${crypto.randomUUID().slice(0, 8)}@example.com`
  const event = emailEvent('email.bounced', {
    email_id: crypto.randomUUID(),
    to: [address],
    bounce: { type: 'Permanent', subType: 'General', message: 'no' },
  })
  const id = `msg_${crypto.randomUUID()}`
  assertError(await deliverEmailEvent(event, { id, headers: {} }), 400, 'svix')
  assertError(
    await deliverEmailEvent(event, {
      id,
      headers: { 'svix-id': id, 'svix-timestamp': String(Math.floor(Date.now() / 1000)) },
    }),
    400,
    'svix',
  )
  const otherSecret = `whsec_${btoa('another secret, not the endpoint one')}`
  assertError(await deliverEmailEvent(event, { id, secret: otherSecret }), 400, 'svix-signature')
  assertError(
    await deliverEmailEvent(event, { id, at: new Date(Date.now() - 6 * 60_000) }),
    400,
    'svix-signature',
  )
  assertError(
    await deliverEmailEvent(event, { id, at: new Date(Date.now() + 6 * 60_000) }),
    400,
    'svix-signature',
  )
  const at = new Date()
  const signature = svix().sign(id, at, JSON.stringify(event))
  const tampered = await api('/api/email/webhook', {
    method: 'POST',
    rawBody: JSON.stringify({ ...event, type: 'email.complained' }),
    headers: {
      'content-type': 'application/json',
      'svix-id': id,
      'svix-timestamp': String(Math.floor(at.getTime() / 1000)),
      'svix-signature': signature,
    },
  })
  assertError(tampered, 400, 'svix-signature')
  assert.equal(await stored(id), 0)
  assert.equal(await suppressed(address), null)
  // Within the tolerance it is accepted.
  const ok = await deliverEmailEvent(event, { id, at: new Date(Date.now() - 4 * 60_000) })
  assert.deepEqual(ok.body, { received: true, outcome: 'stored' })
})

test('webhook: delivery moves the log forward; a hard bounce or complaint suppresses the address; replays change nothing', async () => {
  const user = await verifiedUser()
  const sent = await send(user, mailTo(user.email))
  const emailId = sent.body.email.provider_id
  const delivered = await deliverEmailEvent(
    emailEvent('email.delivered', { email_id: emailId, to: [user.email] }),
    { id: 'msg_delivered_' + emailId },
  )
  assert.deepEqual(delivered.body, { received: true, outcome: 'stored' })
  assert.equal((await logged(user.id))[0].status, 'delivered')
  // A late "sent" does not move it back.
  await deliverEmailEvent(emailEvent('email.sent', { email_id: emailId, to: [user.email] }))
  assert.equal((await logged(user.id))[0].status, 'delivered')

  // A transient bounce is recorded but does not suppress.
  await deliverEmailEvent(
    emailEvent('email.bounced', {
      email_id: emailId,
      to: [user.email],
      bounce: { type: 'Transient', subType: 'MailboxFull', message: 'full' },
    }),
  )
  assert.equal(await suppressed(user.email), null)
  assert.equal((await send(user, mailTo(user.email, { subject: 'Still fine' }))).status, 200)

  const bounceId = `msg_${crypto.randomUUID()}`
  const bounce = emailEvent('email.bounced', {
    email_id: emailId,
    to: [user.email.toUpperCase()],
    bounce: { type: 'Permanent', subType: 'General', message: 'no such mailbox' },
  })
  assert.deepEqual((await deliverEmailEvent(bounce, { id: bounceId })).body, {
    received: true,
    outcome: 'stored',
  })
  assert.equal(await suppressed(user.email), 'bounced')
  assert.equal((await logged(user.id))[0].status, 'bounced')
  const refused = await send(user, mailTo(user.email, { subject: 'After the bounce' }))
  assertError(refused, 422, 'suppressed')
  assert.equal((await sentTo(user.email)).filter((m) => m.subject === 'After the bounce').length, 0)
  assert.equal((await deliverEmailEvent(bounce, { id: bounceId })).body.outcome, 'replay')
  assert.equal(await stored(bounceId), 1)

  const admin = await verifiedUser({ superAdmin: true })
  const complainer = `complainer-${crypto.randomUUID().slice(0, 8)}@example.com`
  assert.equal((await send(admin, mailTo(complainer))).status, 200)
  await deliverEmailEvent(emailEvent('email.complained', { email_id: crypto.randomUUID(), to: [complainer] }))
  assert.equal(await suppressed(complainer), 'complained')
  assertError(await send(admin, mailTo(complainer, { subject: 'Again' })), 422, 'suppressed')
})

test('webhook: inbound mail is stored with its body fetched from Resend; a failed fetch is retried', async () => {
  const emailId = crypto.randomUUID()
  const event = emailEvent('email.received', {
    email_id: emailId,
    from: 'Reader <reader@example.com>',
    to: ['inbox@mail.journal.test'],
    subject: 'Question',
    bcc: [],
    cc: [],
    received_for: ['inbox@mail.journal.test'],
    message_id: '<m1@example.com>',
    attachments: [],
  })
  const id = `msg_${crypto.randomUUID()}`
  // Resend does not have the body yet: 502, nothing stored, so the retry is not a replay.
  assertError(await deliverEmailEvent(event, { id }), 502)
  assert.equal(await stored(id), 0)
  await resendControl('inbound', {
    id: emailId,
    from: 'Reader <reader@example.com>',
    to: ['inbox@mail.journal.test'],
    subject: 'Question',
    text: 'How do I export?',
    html: '<p>How do I export?</p>',
  })
  assert.deepEqual((await deliverEmailEvent(event, { id })).body, { received: true, outcome: 'stored' })
  const rows =
    await sql`select from_address, to_addresses, subject, text_body, html_body from private.inbound_emails where email_id = ${emailId}`
  assert.deepEqual(rows.map((r) => ({ ...r })), [{
    from_address: 'Reader <reader@example.com>',
    to_addresses: ['inbox@mail.journal.test'],
    subject: 'Question',
    text_body: 'How do I export?',
    html_body: '<p>How do I export?</p>',
  }])
  assert.equal((await deliverEmailEvent(event, { id })).body.outcome, 'replay')
  // Nobody reads inbound mail or suppressions through the API.
  const user = await createUser()
  const r = await clientAs(user.token).rpc('record_email_event', {
    svix_id: 'x',
    payload: { type: 'email.bounced' },
    inbound: null,
  })
  assert.equal(r.error?.code, '42501')
})

test('webhook: malformed signed events are acknowledged (2xx) as ignored, reason and payload recorded, never 500', async () => {
  const emailId = crypto.randomUUID()
  await resendControl('inbound', {
    id: emailId,
    from: 'Reader <reader@example.com>',
    to: ['inbox@mail.journal.test'],
    subject: 'Hi',
    text: 'body',
    html: null,
  })
  const received = (o: Record<string, unknown> = {}, data: Record<string, unknown> = {}) => ({
    ...emailEvent('email.received', {
      email_id: emailId,
      from: 'Reader <reader@example.com>',
      to: ['inbox@mail.journal.test'],
      subject: 'Hi',
      ...data,
    }),
    ...o,
  })
  const address = `fuzzed-${crypto.randomUUID().slice(0, 8)}@example.com`
  const cases: [string, unknown, RegExp][] = [
    ['created_at "0000-00-00"', received({ created_at: '0000-00-00' }), /^created_at: not a valid time/],
    [
      'created_at "2026-02-30T00:00:00Z"',
      received({ created_at: '2026-02-30T00:00:00Z' }),
      /^created_at: not a valid time/,
    ],
    ['created_at "garbage"', received({ created_at: 'garbage' }), /^created_at: not a valid time/],
    [
      'data.created_at "2026-02-30T00:00:00Z"',
      received({}, { created_at: '2026-02-30T00:00:00Z' }),
      /^data\.created_at: /,
    ],
    ['data.created_at a number', received({}, { created_at: 1700000000 }), /^data\.created_at: /],
    ['created_at in year 9999', received({ created_at: '9999-01-01T00:00:00Z' }), /^created_at: /],
    [
      'to a string',
      emailEvent('email.bounced', { email_id: emailId, to: address, bounce: { type: 'Permanent' } }),
      /^data\.to: /,
    ],
    ['to [null]', emailEvent('email.complained', { email_id: emailId, to: [null] }), /^data\.to\.0: /],
    [
      'email_id a number',
      emailEvent('email.delivered', { email_id: 42, to: [address] }),
      /^data\.email_id: /,
    ],
    [
      'bounce a string',
      emailEvent('email.bounced', { email_id: emailId, to: [address], bounce: 'Permanent' }),
      /^data\.bounce: /,
    ],
    ['data a list', { type: 'email.delivered', created_at: new Date().toISOString(), data: [] }, /^data: /],
    ['type a number', { type: 7, data: {} }, /^type: /],
    ['a list, not an event', [1, 2, 3], /^event: /],
    [
      'a NUL character',
      emailEvent('email.bounced', { email_id: emailId, to: [`nul\u0000${address}`], bounce: { type: 1 } }),
      /^data\.bounce\.type: /,
    ],
  ]
  for (const [what, event, reason] of cases) {
    const id = `msg_${crypto.randomUUID()}`
    const res = await deliverEmailEvent(event, { id })
    assert.equal(res.status, 200, `${what}: ${JSON.stringify(res.body)}`)
    assert.equal(res.body.outcome, 'ignored', what)
    assert.match(res.body.reason, reason, what)
    const [row] = await sql`select outcome, reason, payload from private.email_events where svix_id = ${id}`
    assert.equal(row?.outcome, 'ignored', `${what}: recorded`)
    assert.equal(row?.reason, res.body.reason, `${what}: with its reason`)
    assert.ok(row?.payload !== null, `${what}: with its payload`)
    assert.equal(
      (await deliverEmailEvent(event, { id })).body.outcome,
      'replay',
      `${what}: a replay stays one row`,
    )
  }
  const notJson = await deliverEmailEvent('not json' as unknown, {
    id: `msg_${crypto.randomUUID()}`,
    raw: 'this is { not json',
  })
  assert.deepEqual([notJson.status, notJson.body.outcome, notJson.body.reason], [
    200,
    'ignored',
    'body: not JSON',
  ])
  assert.equal(await suppressed(address), null, 'no malformed event suppressed anything')
  assert.equal(
    (await sql`select count(*)::int as n from private.inbound_emails where email_id = ${emailId}`)[0].n,
    0,
  )

  // Resend's own time format (Postgres style) is a time; a bad time in a field the event type
  // does not use does not stop a bounce from suppressing the address.
  const ok = await deliverEmailEvent(
    received({ created_at: '2024-02-22 23:41:11.894719+00' }, {
      created_at: '2024-02-22 23:41:11.894719+00',
    }),
  )
  assert.deepEqual(ok.body, { received: true, outcome: 'stored' })
  const bounce = await deliverEmailEvent({
    ...emailEvent('email.bounced', { email_id: emailId, to: [address], bounce: { type: 'Permanent' } }),
    created_at: 'garbage',
  })
  assert.deepEqual(bounce.body, { received: true, outcome: 'stored' })
  assert.equal(await suppressed(address), 'bounced')
})

test('webhook: a type cut at 100 characters inside an emoji is recorded as ignored, never 500', async () => {
  for (const type of ['x'.repeat(99) + '\u{1F600}', 'email.' + 'x'.repeat(93) + '\u{1F600}']) {
    const id = `msg_${crypto.randomUUID()}`
    const res = await deliverEmailEvent({ type, data: {} }, { id })
    assert.equal(res.status, 200, `${type.slice(0, 8)}: ${JSON.stringify(res.body)}`)
    assert.deepEqual([res.body.outcome, res.body.reason], ['ignored', 'type: not a Resend event type'])
    const [row] = await sql`select event_type, outcome from private.email_events where svix_id = ${id}`
    assert.equal(row?.outcome, 'ignored')
    assert.equal(row.event_type, type.slice(0, 99) + '\uFFFD', 'cut at 100, the split half replaced')
  }
})

test('webhook: an inbound body with a NUL or a lone surrogate is stored (those characters replaced), not lost or 500', async () => {
  for (
    const [what, text, html, stored] of [
      ['NUL', 'Hello\u0000world', '<p>a\u0000b</p>', ['Hello\uFFFDworld', '<p>a\uFFFDb</p>']],
      ['lone surrogate', 'Hi \ud800 there', '<p>\udc00</p>', ['Hi \uFFFD there', '<p>\uFFFD</p>']],
    ] as const
  ) {
    const emailId = crypto.randomUUID()
    await resendControl('inbound', {
      id: emailId,
      from: 'x@ext.test',
      to: ['in@journal.test'],
      subject: 's',
      text,
      html,
    })
    const event = emailEvent('email.received', {
      email_id: emailId,
      from: 'x@ext.test',
      to: ['in@journal.test'],
      subject: 's',
    })
    const res = await deliverEmailEvent(event)
    assert.equal(res.status, 200, `${what}: ${JSON.stringify(res.body)}`)
    assert.deepEqual(res.body, { received: true, outcome: 'stored' }, what)
    const rows =
      await sql`select text_body, html_body from private.inbound_emails where email_id = ${emailId}`
    assert.deepEqual(rows.map((r) => [r.text_body, r.html_body]), [stored], `${what}: the mail is kept`)
  }
})

test('webhook: an event nested thousands of levels deep is ignored with its reason and its raw text kept, never 500', async () => {
  const deep = (n: number) => '['.repeat(n) + ']'.repeat(n)
  for (const n of [5_000, 100_000]) {
    const raw =
      `{"type":"email.delivered","created_at":"2026-01-01T00:00:00Z","data":{"email_id":"abc","to":["a@b.test"],"x":${
        deep(n)
      }}}`
    const id = `msg_${crypto.randomUUID()}`
    const res = await deliverEmailEvent(null, { id, raw })
    assert.equal(res.status, 200, `${n} levels: ${JSON.stringify(res.body)}`)
    assert.equal(res.body.outcome, 'ignored', `${n} levels`)
    assert.match(res.body.reason, /^event: nested deeper than \d+ levels/)
    const [row] =
      await sql`select event_type, outcome, payload from private.email_events where svix_id = ${id}`
    assert.equal(row?.outcome, 'ignored')
    assert.equal(row.event_type, 'email.delivered')
    assert.equal(typeof row.payload, 'string', 'the raw text is kept')
    assert.ok(raw.startsWith(row.payload.slice(0, 1000)))
  }
  // Nested as deep as Resend's events (and well beyond) is stored as before.
  const ok = await deliverEmailEvent(
    emailEvent('email.delivered', {
      email_id: crypto.randomUUID(),
      to: ['a@b.test'],
      x: JSON.parse(deep(30)),
    }),
  )
  assert.deepEqual(ok.body, { received: true, outcome: 'stored' })
})

test("webhook: what PostgREST refuses as the request's own data (PGRST102, class 22, 4xx) is bad data; our own faults are retried", () => {
  const cases: [{ code?: string }, number, boolean][] = [
    [{ code: 'PGRST102' }, 400, true], // the body is not JSON PostgREST can read (a lone surrogate)
    [{ code: '22P05' }, 400, true], // a NUL in a text value
    [{ code: '54001' }, 400, true], // nested too deep
    [{ code: '23514' }, 400, true],
    [{ code: 'PT422' }, 422, true],
    [{ code: 'PGRST999' }, 413, true], // any other 4xx of the data
    [{ code: 'P0001' }, 400, false], // a plain raise: a bug or a failing trigger, cured by a fix and a retry
    [{ code: '42501' }, 403, false], // grants or the service key: ours to fix
    [{ code: 'PGRST301' }, 401, false],
    [{ code: 'PGRST202' }, 404, false], // the function is not in the schema cache (a deploy in progress)
    [{ code: 'PGRST204' }, 400, false],
    [{ code: '40001' }, 500, false],
    [{ code: 'XX000' }, 500, false],
  ]
  for (const [error, status, bad] of cases) {
    assert.equal(refusedAsBadData(error, status), bad, `${error.code} ${status}`)
  }
})

test('webhook: the database unavailable is 503 (Resend retries), not 500', async () => {
  const address = `dbdown-${crypto.randomUUID().slice(0, 8)}@example.com`
  const event = emailEvent('email.bounced', {
    email_id: crypto.randomUUID(),
    to: [address],
    bounce: { type: 'Permanent' },
  })
  const id = `msg_${crypto.randomUUID()}`
  await withApi({
    RESEND_WEBHOOK_SECRET: env('RESEND_WEBHOOK_SECRET'),
    SUPABASE_REST_URL: 'http://127.0.0.1:9/rest/v1',
  }, async (base) => {
    for (const body of [event, { ...event, data: [] }]) {
      const payload = JSON.stringify(body)
      const at = new Date()
      const res = await fetch(`${base}/api/email/webhook`, {
        method: 'POST',
        body: payload,
        headers: {
          'content-type': 'application/json',
          'svix-id': id,
          'svix-timestamp': String(Math.floor(at.getTime() / 1000)),
          'svix-signature': svix().sign(id, at, payload),
        },
      })
      assert.equal(res.status, 503)
      assert.match((await res.json()).error, /database/i)
    }
  })
  assert.equal(await stored(id), 0)
  assert.deepEqual(
    (await deliverEmailEvent(event, { id })).body,
    { received: true, outcome: 'stored' },
    'the retry is stored',
  )
  assert.equal(await suppressed(address), 'bounced')
})

test('without Resend configured: input is still checked first (400), then 503', async () => {
  const user = await verifiedUser()
  await withApi({}, async (base) => {
    const post = (path: string, body: unknown, headers: Record<string, string>) =>
      fetch(`${base}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body),
      })
    const auth = { authorization: `Bearer ${user.token}` }
    let res = await post('/api/email/send', { to: 'nope', subject: 'x', text: 'y' }, auth)
    assert.equal(res.status, 400)
    assert.match((await res.json()).error, /^to: /)
    res = await post('/api/email/send', mailTo(user.email), auth)
    assert.equal(res.status, 503)
    assert.match((await res.json()).error, /RESEND_API_KEY/)
    res = await post('/api/email/webhook', { type: 'email.bounced' }, {})
    assert.equal(res.status, 400)
    await res.body?.cancel()
    res = await post('/api/email/webhook', { type: 'email.bounced' }, {
      'svix-id': 'msg_1',
      'svix-timestamp': '1',
      'svix-signature': 'v1,x',
    })
    assert.equal(res.status, 503)
    assert.match((await res.json()).error, /RESEND_WEBHOOK_SECRET/)
  })
  assert.deepEqual(await logged(user.id), [])
})
