// E-mail: sending through the local Resend server (who may send to whom, the daily cap,
// idempotency, provider failures, every send logged) and without Resend configured. The webhook:
// email_webhook_test.ts.
import { strict as assert } from 'node:assert'
import { withApi } from './_api_process.ts'
import { api, assertError, clientAs, createUser, env, sql, test } from './_helpers.ts'
import { logged, mailTo, resendControl, send, sentTo, verifiedUser } from './_email.ts'

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
