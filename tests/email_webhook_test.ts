// The Svix-signed e-mail webhook (signature, replays, delivery status, bounce/complaint
// suppression, inbound mail with its body, malformed events acknowledged as ignored with the
// reason recorded, the database down answered 503).
import { strict as assert } from 'node:assert'
import { Webhook } from 'svix'
import { withApi } from './_api_process.ts'
import { api, assertError, clientAs, createUser, env, sql, test } from './_helpers.ts'
import { refusedAsBadData } from '../functions/_shared/webhooks.ts'
import { logged, mailTo, resendControl, send, sentTo, verifiedUser } from './_email.ts'

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
