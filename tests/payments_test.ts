// Payments: checkout against the local Stripe server (customer created once and reused, the
// origin rule, 400s before anything else), the caller's subscription, and what works without
// Stripe's keys. The webhook: payments_webhook_test.ts.
import { strict as assert } from 'node:assert'
import { STRIPE_API_VERSION } from '../functions/_shared/payments.ts'
import { withApi } from './_api_process.ts'
import { api, assertError, clientAs, createUser, env, sql, test } from './_helpers.ts'
import { newId, stripeControl } from './_stripe.ts'
import { checkout, checkoutBody, SITE, storedCustomer } from './_payments.ts'

// ---------------------------------------------------------------------------------------
// Checkout
// ---------------------------------------------------------------------------------------

test('checkout: a subscription session for the caller; the customer is created once and reused', async () => {
  const user = await createUser()
  const first = await checkout(user)
  assert.equal(first.status, 200, JSON.stringify(first.body))
  assert.match(first.body.sessionId, /^cs_test_/)
  assert.equal(first.body.url, `https://checkout.stripe.test/c/pay/${first.body.sessionId}`)
  const second = await checkout(user, checkoutBody({ priceId: 'price_premium_yearly' }))
  assert.equal(second.status, 200, JSON.stringify(second.body))
  assert.notEqual(second.body.sessionId, first.body.sessionId)

  const customers = await stripeControl(`customers?user_id=${user.id}`)
  assert.equal(customers.length, 1, 'one Stripe customer for the user')
  assert.equal(customers[0].email, user.email)
  assert.equal(await storedCustomer(user.id), customers[0].id, 'its id is stored')

  const sessions = await stripeControl(`sessions?user_id=${user.id}`)
  assert.equal(sessions.length, 2)
  for (const s of sessions) {
    assert.equal(s.customer, customers[0].id, 'both sessions reuse the customer')
    assert.equal(s.mode, 'subscription')
    assert.equal(s.client_reference_id, user.id)
    assert.deepEqual(s.metadata, { user_id: user.id })
    assert.deepEqual(
      s.params.subscription_data,
      { metadata: { user_id: user.id } },
      'the subscription carries the user id too',
    )
    assert.equal(
      s.success_url,
      checkoutBody().successUrl,
      'the URL is passed as given (Stripe fills the placeholder)',
    )
    assert.equal(s.cancel_url, `${SITE}/billing`)
    assert.equal(s.stripe_version, STRIPE_API_VERSION, 'the pinned API version is sent')
  }
  assert.deepEqual(sessions.map((s: any) => s.params.line_items[0]), [
    { price: 'price_premium_monthly', quantity: '1' },
    { price: 'price_premium_yearly', quantity: '1' },
  ])
})

test('checkout: two concurrent first calls create one customer', async () => {
  const user = await createUser()
  const replies = await Promise.all([checkout(user), checkout(user), checkout(user)])
  for (const r of replies) assert.equal(r.status, 200, JSON.stringify(r.body))
  const customers = await stripeControl(`customers?user_id=${user.id}`)
  assert.equal(customers.length, 1, JSON.stringify(customers))
  const sessions = await stripeControl(`sessions?user_id=${user.id}`)
  assert.deepEqual([...new Set(sessions.map((s: any) => s.customer))], [customers[0].id])
  assert.equal(await storedCustomer(user.id), customers[0].id)
})

test('checkout: a stored customer Stripe no longer knows is replaced once, then reused', async () => {
  const user = await createUser()
  assert.equal((await checkout(user)).status, 200)
  const gone = (await storedCustomer(user.id))!
  await stripeControl('delete-customer', { id: gone })
  const res = await checkout(user)
  assert.equal(res.status, 200, JSON.stringify(res.body))
  const replacement = (await storedCustomer(user.id))!
  assert.notEqual(replacement, gone)
  assert.equal((await checkout(user)).status, 200)
  const sessions = await stripeControl(`sessions?user_id=${user.id}`)
  assert.deepEqual(sessions.map((s: any) => s.customer), [gone, replacement, replacement])
})

test('checkout: malformed or foreign fields are 400 naming the field; nothing reaches Stripe', async () => {
  const user = await createUser()
  const cases: [unknown, string][] = [
    [{ successUrl: checkoutBody().successUrl, cancelUrl: checkoutBody().cancelUrl }, 'priceId'],
    [checkoutBody({ priceId: '' }), 'priceId'],
    [checkoutBody({ priceId: 'prod_123' }), 'priceId'],
    [checkoutBody({ priceId: 42 }), 'priceId'],
    [checkoutBody({ successUrl: undefined }), 'successUrl'],
    [checkoutBody({ successUrl: 'not a url' }), 'successUrl'],
    [checkoutBody({ successUrl: 'javascript:alert(1)' }), 'successUrl'],
    [checkoutBody({ cancelUrl: 'ftp://127.0.0.1:3000/x' }), 'cancelUrl'],
    // The origin rule: the endpoint is not an open redirect.
    [checkoutBody({ successUrl: 'https://evil.example/phish' }), 'successUrl'],
    [checkoutBody({ cancelUrl: 'http://127.0.0.1:3001/billing' }), 'cancelUrl'],
    [checkoutBody({ cancelUrl: 'https://127.0.0.1:3000/billing' }), 'cancelUrl'],
    [checkoutBody({ successUrl: 'http://127.0.0.1:3000@evil.example/' }), 'successUrl'],
    [checkoutBody({ successUrl: 'x'.repeat(3000) }), 'successUrl'],
    [checkoutBody({ customer: 'cus_someone_else' }), 'customer'],
  ]
  for (const [body, field] of cases) assertError(await checkout(user, body), 400, field)
  assertError(
    await api('/api/payment/create-checkout-session', { token: user.token, rawBody: '{"priceId":' }),
    400,
  )
  // A second configured origin is accepted.
  const other = await checkout(
    user,
    checkoutBody({ successUrl: 'https://app.journal.test/ok', cancelUrl: 'https://app.journal.test/no' }),
  )
  assert.equal(other.status, 200, JSON.stringify(other.body))
  assert.equal(
    (await stripeControl(`sessions?user_id=${user.id}`)).length,
    1,
    'only the valid request reached Stripe',
  )
})

test('checkout: a price Stripe does not know is 400 priceId; Stripe trouble is 502/503 and stores no customer', async () => {
  const user = await createUser()
  assertError(
    await checkout(user, checkoutBody({ priceId: 'price_does_not_exist' })),
    400,
    /priceId: No such price/,
  )

  const fresh = await createUser()
  await stripeControl('fail', { user_id: fresh.id, status: 500 })
  assertError(await checkout(fresh), 502)
  assert.equal(await storedCustomer(fresh.id), null, 'no customer stored when Stripe failed')
  await stripeControl('fail', {
    user_id: fresh.id,
    status: 429,
    type: 'rate_limit_error',
    message: 'Too many requests',
    retry_after: 1,
  })
  assertError(await checkout(fresh), 503, 'busy')
  assert.equal(await storedCustomer(fresh.id), null)
  const ok = await checkout(fresh)
  assert.equal(ok.status, 200, 'works once Stripe answers again')
  assert.equal((await stripeControl(`customers?user_id=${fresh.id}`)).length, 1)
})

test('payment endpoints need a signed-in user (the webhook needs a signature instead)', async () => {
  assertError(await api('/api/payment/create-checkout-session', { body: checkoutBody() }), 401)
  assertError(await api('/api/payment/subscription'), 401)
})

// ---------------------------------------------------------------------------------------
// The caller's subscription
// ---------------------------------------------------------------------------------------

test("GET /api/payment/subscription: the caller's latest or null, never provider ids, never another's", async () => {
  const user = await createUser()
  const other = await createUser()
  assert.deepEqual((await api('/api/payment/subscription', { token: user.token })).body, {
    subscription: null,
    premium: false,
  })
  await sql`insert into public.subscriptions (user_id, stripe_customer_id, stripe_subscription_id, status, created_at)
            values (${user.id}, 'cus_old', ${newId('sub')}, 'canceled', now() - interval '1 year'),
                   (${user.id}, 'cus_new', ${newId('sub')}, 'active', now()),
                   (${other.id}, 'cus_other', ${newId('sub')}, 'past_due', now())`
  const res = await api('/api/payment/subscription', { token: user.token })
  assert.equal(res.status, 200)
  assert.equal(res.body.subscription.status, 'active')
  assert.equal(res.body.subscription.user_id, user.id)
  assert.equal(res.body.premium, true)
  assert.equal(
    (await api('/api/payment/subscription', { token: other.token })).body.premium,
    false,
    'past_due is not premium',
  )
  assert.deepEqual(Object.keys(res.body.subscription).sort(), [
    'cancel_at_period_end',
    'created_at',
    'current_period_end',
    'id',
    'last_payment_failed_at',
    'status',
    'updated_at',
    'user_id',
  ])
  assert.doesNotMatch(JSON.stringify(res.body), /cus_|sub_/)
  // PostgREST gives the same rows and refuses the provider ids.
  const db = clientAs(user.token)
  const { data } = await db.from('subscriptions').select('user_id, status').order('created_at')
  assert.deepEqual(data, [{ user_id: user.id, status: 'canceled' }, { user_id: user.id, status: 'active' }])
  const ids = await db.from('subscriptions').select('stripe_customer_id')
  assert.equal(ids.error?.code, '42501')
})

test('without Stripe keys: input is still checked first (400), then 503; reading the subscription still works', async () => {
  const user = await createUser()
  await withApi({ SITE_URL: SITE }, async (base) => {
    const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
      fetch(`${base}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${user.token}`, ...headers },
        body: JSON.stringify(body),
      })
    let res = await post('/api/payment/create-checkout-session', checkoutBody({ successUrl: 'nope' }))
    assert.equal(res.status, 400)
    assert.match((await res.json()).error, /successUrl/)
    res = await post(
      '/api/payment/create-checkout-session',
      checkoutBody({ cancelUrl: 'https://evil.example/' }),
    )
    assert.equal(res.status, 400)
    await res.body?.cancel()
    res = await post('/api/payment/create-checkout-session', checkoutBody())
    assert.equal(res.status, 503)
    assert.match((await res.json()).error, /STRIPE_SECRET_KEY/)
    res = await fetch(`${base}/api/payment/webhook`, {
      method: 'POST',
      body: '{}',
      headers: { 'content-type': 'application/json' },
    })
    assert.equal(res.status, 400, 'an unsigned request is still bad input')
    await res.body?.cancel()
    res = await fetch(`${base}/api/payment/webhook`, {
      method: 'POST',
      body: '{}',
      headers: { 'content-type': 'application/json', 'stripe-signature': 't=1,v1=00' },
    })
    assert.equal(res.status, 503)
    assert.match((await res.json()).error, /STRIPE_WEBHOOK_SECRET/)
    res = await fetch(`${base}/api/payment/subscription`, {
      headers: { authorization: `Bearer ${user.token}` },
    })
    assert.equal(res.status, 200)
    assert.deepEqual(await res.json(), { subscription: null, premium: false })
  })
  assert.equal(await storedCustomer(user.id), null)
})

test('STRIPE_PRICE_IDS limits checkout to the prices the site sells', async () => {
  const user = await createUser()
  const stripeEnv = {
    SITE_URL: SITE,
    STRIPE_SECRET_KEY: env('STRIPE_SECRET_KEY'),
    STRIPE_API_BASE: env('STRIPE_API_BASE'),
  }
  await withApi({ ...stripeEnv, STRIPE_PRICE_IDS: 'price_premium_monthly' }, async (base) => {
    const post = (body: unknown) =>
      fetch(`${base}/api/payment/create-checkout-session`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${user.token}` },
        body: JSON.stringify(body),
      })
    const refused = await post(checkoutBody({ priceId: 'price_premium_yearly' }))
    assert.equal(refused.status, 400)
    assert.match((await refused.json()).error, /^priceId: /)
    const ok = await post(checkoutBody())
    assert.equal(ok.status, 200)
    await ok.body?.cancel()
  })
  // Unset, checkout sells nothing (any recurring price would otherwise buy premium).
  await withApi(stripeEnv, async (base) => {
    const res = await fetch(`${base}/api/payment/create-checkout-session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${user.token}` },
      body: JSON.stringify(checkoutBody()),
    })
    assert.equal(res.status, 503)
    assert.match((await res.json()).error, /STRIPE_PRICE_IDS/)
  })
  assert.equal((await stripeControl(`sessions?user_id=${user.id}`)).length, 1)
})

test('checkout: a caller with an active subscription is 409 and no session is made', async () => {
  const user = await createUser()
  await sql`insert into public.subscriptions (user_id, stripe_subscription_id, status) values (${user.id}, ${
    'sub_' + crypto.randomUUID()
  }, 'active')`
  assertError(await checkout(user), 409, 'already')
  assert.equal((await stripeControl(`sessions?user_id=${user.id}`)).length, 0)
})
