// The signed Stripe webhook: every handled event and its effect on `subscriptions` and on the
// monthly award, bad/missing/stale signatures, replays, out-of-order events (the state stored is
// Stripe's latest, read from Stripe), Stripe or the database unreachable (503), malformed events
// (2xx, ignored, with the reason recorded), a failure rolled back and retried.
import { strict as assert } from 'node:assert'
import { storableText } from '../functions/_shared/webhooks.ts'
import { withApi } from './_api_process.ts'
import { api, assertError, clientAs, createUser, env, sql, test } from './_helpers.ts'
import {
  at,
  checkoutObject,
  deliver,
  deliverOk,
  happen,
  invoiceFailedObject,
  newId,
  retrievals,
  signatureFor,
  stripeControl,
  stripeEvent,
  stripeHas,
  subscriptionEvent,
  subscriptionObject,
} from './_stripe.ts'
import { checkout, storedCustomer, subscriptionRow } from './_payments.ts'

const recordedEvents = async (ids: string[]) =>
  (await sql`select count(*)::int as n from private.stripe_events where event_id = any(${ids})`)[0]
    .n as number

class Rollback extends Error {}

type StripeEventLike = Record<string, unknown> & { id?: unknown; type?: unknown }

/** Delivers a raw body, signed as Stripe signs it. */
async function deliverRaw(payload: string) {
  return await api('/api/payment/webhook', {
    method: 'POST',
    rawBody: payload,
    headers: {
      'content-type': 'application/json; charset=utf-8',
      'stripe-signature': await signatureFor(payload),
    },
  })
}

/**
 * What the monthly award (the one SQL function both award endpoints use) would give the user
 * for a month of our choosing, in a transaction rolled back so no ledger row stays behind.
 */
async function awardFor(userId: string, month: string): Promise<number> {
  let amount = 0
  await sql.begin(async (tx) => {
    await tx`select * from private.award_monthly_drops(array[${userId}::uuid], ${month}::date)`
    ;[{ amount }] =
      await tx`select amount from public.monthly_drop_awards where user_id = ${userId} and award_month = ${month}`
    throw new Rollback()
  }).catch((e) => {
    if (!(e instanceof Rollback)) throw e
  })
  return amount
}

// ---------------------------------------------------------------------------------------
// The webhook
// ---------------------------------------------------------------------------------------

test('webhook: a missing, wrong, tampered or stale signature is 400 and writes nothing', async () => {
  const user = await createUser()
  const sub = newId('sub')
  const event = subscriptionEvent('created', {
    id: sub,
    customer: newId('cus'),
    userId: user.id,
    status: 'active',
  }, at(1))
  const payload = JSON.stringify(event, null, 2)
  assertError(await deliver(event, { signature: null }), 400, 'Stripe-Signature')
  assertError(await deliver(event, { signature: 'garbage' }), 400, 'Stripe-Signature')
  assertError(await deliver(event, { secret: 'whsec_not_the_right_one' }), 400, 'Stripe-Signature')
  assertError(
    await deliver(event, { timestamp: Math.floor(Date.now() / 1000) - 600 }),
    400,
    'Stripe-Signature',
  )
  // A valid signature over another body.
  const tampered = await api('/api/payment/webhook', {
    rawBody: payload.replace('"active"', '"trialing"'),
    headers: { 'stripe-signature': await signatureFor(payload), 'content-type': 'application/json' },
  })
  assertError(tampered, 400, 'Stripe-Signature')
  assert.equal(await recordedEvents([event.id]), 0)
  assert.equal(await subscriptionRow(sub), undefined)
  // The same event, correctly signed, goes through.
  assert.equal(await happen(event), 'applied')
})

test('webhook: checkout, created, updated, payment failed, deleted keep subscriptions equal to Stripe, and premium follows', async () => {
  const user = await createUser()
  assert.equal((await checkout(user)).status, 200)
  const customer = (await storedCustomer(user.id))!
  const sub = newId('sub')
  const periodEnd = at(40 * 86400)
  assert.equal(await awardFor(user.id, '2031-01-01'), 30, 'not premium yet: 30')

  // Stripe's order for a card checkout: created (incomplete), checkout completed (paid).
  assert.equal(
    await happen(
      subscriptionEvent(
        'created',
        { id: sub, customer, userId: user.id, status: 'incomplete', periodEnd },
        at(100),
      ),
    ),
    'applied',
  )
  assert.equal((await subscriptionRow(sub)).status, 'incomplete')
  assert.equal(await awardFor(user.id, '2031-02-01'), 30, 'incomplete is not premium')
  // Paying activates the subscription at Stripe; the checkout event makes the webhook read it.
  await stripeHas({ id: sub, customer, userId: user.id, status: 'active', periodEnd })
  assert.equal(
    await deliverOk(
      stripeEvent(
        'checkout.session.completed',
        checkoutObject({ subscription: sub, customer, userId: user.id }),
        at(101),
      ),
    ),
    'applied',
  )
  let row = await subscriptionRow(sub)
  assert.equal(row.status, 'active')
  assert.equal(row.user_id, user.id)
  assert.equal(row.stripe_customer_id, customer)
  assert.equal(row.current_period_end.getTime(), periodEnd * 1000, "the period end is Stripe's")
  assert.equal(await awardFor(user.id, '2031-03-01'), 250, 'premium: 250')
  const award = await api('/api/drops/award-monthly', { method: 'POST', token: user.token })
  assert.equal(award.body.amount, 250, 'the award endpoint agrees')

  const mine = await api('/api/payment/subscription', { token: user.token })
  assert.equal(mine.body.subscription.status, 'active')
  assert.equal(mine.body.premium, true)
  assert.equal(
    mine.body.subscription.current_period_end,
    new Date(periodEnd * 1000).toISOString().replace('.000Z', '+00:00'),
  )

  // Cancel at period end: still active, so still premium.
  await happen(
    subscriptionEvent('updated', {
      id: sub,
      customer,
      userId: user.id,
      status: 'active',
      periodEnd,
      cancelAtPeriodEnd: true,
    }, at(200)),
  )
  row = await subscriptionRow(sub)
  assert.equal(row.cancel_at_period_end, true)
  assert.equal(await awardFor(user.id, '2031-04-01'), 250)

  // A failed renewal: recorded; the status follows Stripe's subscription events, not guesses.
  assert.equal(
    await deliverOk(
      stripeEvent('invoice.payment_failed', invoiceFailedObject({ subscription: sub, customer }), at(300)),
    ),
    'applied',
  )
  row = await subscriptionRow(sub)
  assert.equal(row.last_payment_failed_at.getTime(), at(300) * 1000)
  assert.equal(row.status, 'active')
  await happen(
    subscriptionEvent(
      'updated',
      { id: sub, customer, userId: user.id, status: 'past_due', periodEnd },
      at(301),
    ),
  )
  assert.equal((await subscriptionRow(sub)).status, 'past_due')
  assert.equal((await subscriptionRow(sub)).cancel_at_period_end, false)
  assert.equal(await awardFor(user.id, '2031-05-01'), 30, 'past_due is not premium')

  await happen(
    subscriptionEvent('updated', {
      id: sub,
      customer,
      userId: user.id,
      status: 'active',
      periodEnd: periodEnd + 30 * 86400,
    }, at(400)),
  )
  assert.equal(await awardFor(user.id, '2031-06-01'), 250, 'paid again: premium again')
  await happen(
    subscriptionEvent('deleted', {
      id: sub,
      customer,
      userId: user.id,
      status: 'canceled',
      periodEnd: periodEnd + 30 * 86400,
    }, at(500)),
  )
  row = await subscriptionRow(sub)
  assert.equal(row.status, 'canceled')
  assert.equal(await awardFor(user.id, '2031-07-01'), 30, 'after cancellation: back to 30')
  const after = (await api('/api/payment/subscription', { token: user.token })).body
  assert.equal(after.subscription.status, 'canceled')
  assert.equal(after.premium, false)
})

test('webhook: a replayed event is acknowledged and changes nothing, even after newer events', async () => {
  const user = await createUser()
  const sub = newId('sub')
  const customer = newId('cus')
  const created = subscriptionEvent(
    'created',
    { id: sub, customer, userId: user.id, status: 'active' },
    at(10),
  )
  assert.equal(await happen(created), 'applied')
  assert.equal(await deliverOk(created), 'replay')
  await happen(
    subscriptionEvent('deleted', { id: sub, customer, userId: user.id, status: 'canceled' }, at(20)),
  )
  assert.equal(await deliverOk(created), 'replay')
  assert.equal((await subscriptionRow(sub)).status, 'canceled')
  assert.equal(await recordedEvents([created.id]), 1)
})

test("webhook: events out of order never move a subscription back: each stores Stripe's latest state", async () => {
  const user = await createUser()
  const sub = newId('sub')
  const customer = newId('cus')
  const periodEnd = at(90 * 86400)
  // Stripe has canceled it; its events arrive newest first, then older ones (whose own copies
  // say incomplete or active): each makes the webhook read Stripe, which says canceled.
  await stripeHas({ id: sub, customer, userId: user.id, status: 'canceled', periodEnd })
  assert.equal(
    await deliverOk(
      subscriptionEvent(
        'deleted',
        { id: sub, customer, userId: user.id, status: 'canceled', periodEnd },
        at(50),
      ),
    ),
    'applied',
  )
  for (
    const older of [
      subscriptionEvent('updated', {
        id: sub,
        customer,
        userId: user.id,
        status: 'active',
        cancelAtPeriodEnd: true,
      }, at(40)),
      subscriptionEvent('created', { id: sub, customer, userId: user.id, status: 'incomplete' }, at(30)),
      stripeEvent(
        'checkout.session.completed',
        checkoutObject({ subscription: sub, customer, userId: user.id }),
        at(35),
      ),
    ]
  ) {
    assert.equal(await deliverOk(older), 'applied', `${older.type}: Stripe's state read again`)
    const row = await subscriptionRow(sub)
    assert.equal(row.status, 'canceled', older.type)
    assert.equal(row.cancel_at_period_end, false, older.type)
    assert.equal(row.current_period_end.getTime(), periodEnd * 1000, older.type)
  }

  // A payment failure reported before any subscription event is kept, with Stripe's state.
  const early = newId('sub')
  await stripeHas({ id: early, customer, userId: user.id, status: 'past_due' })
  assert.equal(
    await deliverOk(
      stripeEvent('invoice.payment_failed', invoiceFailedObject({ subscription: early, customer }), at(70)),
    ),
    'applied',
  )
  assert.equal((await subscriptionRow(early)).status, 'past_due')
  assert.equal(
    await deliverOk(
      subscriptionEvent('updated', { id: early, customer, userId: user.id, status: 'past_due' }, at(69)),
    ),
    'applied',
  )
  assert.equal((await subscriptionRow(early)).last_payment_failed_at.getTime(), at(70) * 1000)
  // An older failure does not move the recorded time back.
  await deliverOk(
    stripeEvent('invoice.payment_failed', invoiceFailedObject({ subscription: early, customer }), at(60)),
  )
  assert.equal((await subscriptionRow(early)).last_payment_failed_at.getTime(), at(70) * 1000)
})

test("webhook: events of one second with equally settled statuses end at Stripe's latest, in either order", async () => {
  const user = await createUser()
  const customer = newId('cus')
  // Two changes within one second (active -> past_due), their ids sorting the other way: the
  // events alone cannot tell which is newer. Stripe's current state can.
  for (const order of ['newest first', 'oldest first']) {
    const sub = newId('sub')
    const wasActive = subscriptionEvent(
      'updated',
      { id: sub, customer, userId: user.id, status: 'active' },
      at(500),
    )
    wasActive.id = `evt_test_zz${crypto.randomUUID().replace(/-/g, '')}`
    const nowPastDue = subscriptionEvent('updated', {
      id: sub,
      customer,
      userId: user.id,
      status: 'past_due',
    }, at(500))
    nowPastDue.id = `evt_test_aa${crypto.randomUUID().replace(/-/g, '')}`
    await stripeHas({ id: sub, customer, userId: user.id, status: 'past_due' })
    const events = order === 'newest first' ? [nowPastDue, wasActive] : [wasActive, nowPastDue]
    for (const e of events) assert.equal((await deliver(e)).status, 200)
    assert.equal((await subscriptionRow(sub)).status, 'past_due', order)
    assert.equal(await awardFor(user.id, '2032-01-01'), 30, `${order}: past_due is not premium`)
  }
  // And when Stripe moves on between deliveries, the later read wins; an earlier read never does.
  const sub = newId('sub')
  await stripeHas({ id: sub, customer, userId: user.id, status: 'active' })
  const first = subscriptionEvent(
    'updated',
    { id: sub, customer, userId: user.id, status: 'active' },
    at(600),
  )
  assert.equal(await deliverOk(first), 'applied')
  await stripeHas({ id: sub, customer, userId: user.id, status: 'canceled' })
  assert.equal(
    await deliverOk(
      subscriptionEvent('updated', { id: sub, customer, userId: user.id, status: 'active' }, at(599)),
    ),
    'applied',
  )
  assert.equal((await subscriptionRow(sub)).status, 'canceled', "an older event still stores Stripe's latest")
  assert.equal(await retrievals(sub), 2, 'each event read Stripe once')
  // The database keeps the later read even when an earlier read is applied after it.
  await sql`update public.subscriptions set stripe_fetched_at = now() + interval '1 minute' where stripe_subscription_id = ${sub}`
  await stripeHas({ id: sub, customer, userId: user.id, status: 'active' })
  assert.equal(
    await deliverOk(
      subscriptionEvent('updated', { id: sub, customer, userId: user.id, status: 'active' }, at(601)),
    ),
    'stale',
  )
  assert.equal((await subscriptionRow(sub)).status, 'canceled')
})

test('webhook: when Stripe cannot be asked (429, 5xx, timeout) the answer is 503, nothing is recorded, and the retry applies', async () => {
  const user = await createUser()
  const customer = newId('cus')
  // The SDK retries a 5xx once (so it fails twice here); a 429 it leaves to the caller.
  for (
    const [status, type, times] of [[429, 'rate_limit_error', 1], [500, 'api_error', 2], [
      503,
      'api_error',
      2,
    ]] as const
  ) {
    const sub = newId('sub')
    await stripeHas({ id: sub, customer, userId: user.id, status: 'active' })
    await stripeControl('fail', { subscription_id: sub, status, type, times })
    const event = subscriptionEvent(
      'created',
      { id: sub, customer, userId: user.id, status: 'active' },
      at(10),
    )
    assertError(await deliver(event), 503, 'Stripe')
    assert.equal(
      await recordedEvents([event.id]),
      0,
      `${status}: not recorded, so Stripe's retry is not a replay`,
    )
    assert.equal(await subscriptionRow(sub), undefined, `${status}: nothing stored`)
    assert.equal(await deliverOk(event), 'applied', `${status}: the retry applies`)
    assert.equal((await subscriptionRow(sub)).status, 'active')
  }
  // A Stripe that does not answer in time (STRIPE_RETRIEVE_TIMEOUT_MS) is the same.
  const slowSub = newId('sub')
  await stripeHas({ id: slowSub, customer, userId: user.id, status: 'active' })
  await stripeControl('slow', { subscription_id: slowSub, ms: 3000 })
  const stripeEnv = {
    STRIPE_SECRET_KEY: env('STRIPE_SECRET_KEY'),
    STRIPE_WEBHOOK_SECRET: env('STRIPE_WEBHOOK_SECRET'),
    STRIPE_API_BASE: env('STRIPE_API_BASE'),
    STRIPE_RETRIEVE_TIMEOUT_MS: '200',
  }
  const event = subscriptionEvent(
    'created',
    { id: slowSub, customer, userId: user.id, status: 'active' },
    at(20),
  )
  await withApi(stripeEnv, async (base) => {
    const payload = JSON.stringify(event)
    const res = await fetch(`${base}/api/payment/webhook`, {
      method: 'POST',
      body: payload,
      headers: { 'content-type': 'application/json', 'stripe-signature': await signatureFor(payload) },
    })
    assert.equal(res.status, 503)
    assert.match((await res.json()).error, /Stripe/)
  })
  assert.equal(await recordedEvents([event.id]), 0)
  await stripeControl('slow', { subscription_id: slowSub, ms: 0 })
  assert.equal(await deliverOk(event), 'applied')
})

test('webhook: the database unavailable is 503 (Stripe retries), not 500', async () => {
  const user = await createUser()
  const sub = newId('sub')
  const customer = newId('cus')
  await stripeHas({ id: sub, customer, userId: user.id, status: 'active' })
  const event = subscriptionEvent('created', { id: sub, customer, userId: user.id, status: 'active' }, at(10))
  const stripeEnv = {
    STRIPE_SECRET_KEY: env('STRIPE_SECRET_KEY'),
    STRIPE_WEBHOOK_SECRET: env('STRIPE_WEBHOOK_SECRET'),
    STRIPE_API_BASE: env('STRIPE_API_BASE'),
  }
  // PostgREST (and the database behind it) at an address nothing answers.
  await withApi({ ...stripeEnv, SUPABASE_REST_URL: 'http://127.0.0.1:9/rest/v1' }, async (base) => {
    for (
      const e of [
        event,
        stripeEvent(
          'customer.subscription.updated',
          { id: sub, object: 'subscription', status: null },
          'notanumber' as unknown as number,
        ),
      ]
    ) {
      const payload = JSON.stringify(e)
      const res = await fetch(`${base}/api/payment/webhook`, {
        method: 'POST',
        body: payload,
        headers: { 'content-type': 'application/json', 'stripe-signature': await signatureFor(payload) },
      })
      assert.equal(res.status, 503, e.type)
      assert.match((await res.json()).error, /database/i)
    }
  })
  assert.equal(await recordedEvents([event.id]), 0)
  assert.equal(await deliverOk(event), 'applied', 'the retry applies')
})

test('webhook: malformed signed events are acknowledged (2xx) as ignored, with the reason recorded, never 500', async () => {
  const user = await createUser()
  const sub = newId('sub')
  const customer = newId('cus')
  await stripeHas({ id: sub, customer, userId: user.id, status: 'active' })
  const valid = subscriptionEvent('updated', { id: sub, customer, userId: user.id, status: 'active' }, at(10))
  const withObject = (object: unknown) => ({ ...valid, id: newId('evt'), data: { object } })
  const cases: [string, StripeEventLike, RegExp][] = [
    ['created: "notanumber"', { ...valid, id: newId('evt'), created: 'notanumber' }, /^created: /],
    ['created: -99999999999', { ...valid, id: newId('evt'), created: -99999999999 }, /^created: /],
    ['created: 1e20', { ...valid, id: newId('evt'), created: 1e20 }, /^created: /],
    ['no data', { ...valid, id: newId('evt'), data: undefined }, /^data: /],
    ['data.object null', { ...valid, id: newId('evt'), data: { object: null } }, /^data\.object: /],
    [
      'a subscription id that is a number',
      withObject({ ...subscriptionObject({ id: sub, customer, status: 'active' }), id: 42 }),
      /^data\.object\.id: /,
    ],
    ['a checkout whose subscription is an object without id and customer a number', {
      ...stripeEvent('checkout.session.completed', {
        ...checkoutObject({ subscription: sub, customer, userId: user.id }),
        subscription: { plan: 'x' },
        customer: 42,
      }, at(11)),
    }, /^data\.object\.(subscription|customer): /],
    [
      'a checkout without a subscription',
      stripeEvent('checkout.session.completed', {
        ...checkoutObject({ subscription: sub, customer, userId: user.id }),
        subscription: null,
      }, at(12)),
      /without a subscription/,
    ],
    [
      'an invoice whose parent is a string',
      stripeEvent('invoice.payment_failed', {
        ...invoiceFailedObject({ subscription: sub, customer }),
        parent: 'sub',
      }, at(13)),
      /^data\.object\.parent: /,
    ],
    ['no id', { ...valid, id: undefined }, /^id: /],
  ]
  for (const [what, event, reason] of cases) {
    const res = await deliverRaw(JSON.stringify(event, null, 2))
    assert.equal(res.status, 200, `${what}: ${JSON.stringify(res.body)}`)
    assert.equal(res.body.outcome, 'ignored', what)
    assert.match(res.body.reason, reason, what)
    const key = typeof event.id === 'string' ? event.id : null
    if (key) {
      const [row] = await sql`select outcome, reason from private.stripe_events where event_id = ${key}`
      assert.equal(row?.outcome, 'ignored', `${what}: recorded`)
      assert.equal(row?.reason, res.body.reason, `${what}: with its reason`)
    }
  }
  // A body without a usable id is recorded under its hash: delivered again, it is a replay.
  const noId = JSON.stringify({ ...valid, id: undefined }, null, 2)
  assert.equal((await deliverRaw(noId)).body.outcome, 'replay')
  // A signed body that is not JSON at all.
  const notJson = await deliverRaw('this is not json')
  assert.equal(notJson.status, 200)
  assert.deepEqual([notJson.body.outcome, notJson.body.reason], ['ignored', 'body: not JSON'])
  assert.equal(await subscriptionRow(sub), undefined, 'none of them stored a subscription')

  // The event's own copy of the state is not what is stored, so a malformed copy (status null,
  // items missing) does not stop Stripe's state from being applied.
  const nullStatus = withObject({ id: sub, object: 'subscription', status: null, customer: 42 })
  assert.equal(await deliverOk(nullStatus as never), 'applied')
  assert.equal((await subscriptionRow(sub)).status, 'active')
})

test('webhook: a subscription Stripe does not know is acknowledged and recorded as ignored', async () => {
  const user = await createUser()
  const sub = newId('sub')
  const event = subscriptionEvent('created', {
    id: sub,
    customer: newId('cus'),
    userId: user.id,
    status: 'active',
  }, at(10))
  const res = await deliver(event)
  assert.equal(res.status, 200, JSON.stringify(res.body))
  assert.equal(res.body.outcome, 'ignored')
  assert.match(res.body.reason, /Stripe does not know subscription/)
  assert.equal(await subscriptionRow(sub), undefined, 'an event Stripe disowns grants nothing')
  assert.equal(await awardFor(user.id, '2033-01-01'), 30)
  assert.equal((await deliver(event)).body.outcome, 'replay')
})

test('webhook: a value only the database refuses (an event created in the future) is recorded as ignored', async () => {
  const user = await createUser()
  const sub = newId('sub')
  const customer = newId('cus')
  await stripeHas({ id: sub, customer, userId: user.id, status: 'active' })
  const future = subscriptionEvent(
    'created',
    { id: sub, customer, userId: user.id, status: 'active' },
    Math.floor(Date.now() / 1000) + 30 * 86400,
  )
  const res = await deliver(future)
  assert.equal(res.status, 200, JSON.stringify(res.body))
  assert.deepEqual([res.body.outcome, res.body.reason], ['ignored', 'created: out of range'])
  const [row] =
    await sql`select outcome, reason, event_created from private.stripe_events where event_id = ${future.id}`
  assert.deepEqual({ ...row }, { outcome: 'ignored', reason: 'created: out of range', event_created: null })
  assert.equal(await subscriptionRow(sub), undefined)
})

test('webhook: a subscription whose user is not known yet is kept and linked by the checkout', async () => {
  const user = await createUser()
  const sub = newId('sub')
  const customer = newId('cus')
  await happen(subscriptionEvent('updated', { id: sub, customer, userId: null, status: 'active' }, at(10)))
  assert.equal((await subscriptionRow(sub)).user_id, null)
  // An older checkout is still a new read of Stripe (the same state), and it names the user.
  assert.equal(
    await deliverOk(
      stripeEvent(
        'checkout.session.completed',
        checkoutObject({ subscription: sub, customer, userId: user.id }),
        at(5),
      ),
    ),
    'applied',
  )
  assert.equal((await subscriptionRow(sub)).user_id, user.id, 'an older checkout still links the user')
  assert.equal((await subscriptionRow(sub)).status, 'active')
  assert.equal(await storedCustomer(user.id), customer, 'and remembers the customer')
  // A user id in metadata that is not a profile is ignored, not an error Stripe would retry for days.
  const stray = newId('sub')
  assert.equal(
    await happen(
      subscriptionEvent('created', {
        id: stray,
        customer: newId('cus'),
        userId: crypto.randomUUID(),
        status: 'active',
      }, at(10)),
    ),
    'applied',
  )
  assert.equal((await subscriptionRow(stray)).user_id, null)
})

test('webhook: a subscription whose metadata.user_id cannot be read (over 100 characters, not a string) is applied without it', async () => {
  const user = await createUser()
  for (
    const [what, userId] of [['117 characters', user.id + ' '.repeat(81)], [
      '500 characters',
      'u'.repeat(500),
    ], ['a number', 42]] as const
  ) {
    const sub = newId('sub')
    const customer = newId('cus')
    const object = subscriptionObject({ id: sub, customer, status: 'active' })
    await stripeHas({ ...object, metadata: { user_id: userId, note: 'x' } } as never)
    const res = await deliver(
      stripeEvent('customer.subscription.created', { id: sub, object: 'subscription' }, at(20)),
    )
    assert.equal(res.status, 200, `${what}: ${JSON.stringify(res.body)}`)
    assert.equal(res.body.outcome, 'applied', `${what}: ${JSON.stringify(res.body)}`)
    const row = await subscriptionRow(sub)
    assert.deepEqual(
      [row?.status, row?.user_id, row?.stripe_customer_id],
      ['active', null, customer],
      `${what}: stored, user not known yet`,
    )
    // The existing rule for a subscription without a known user: the checkout links it.
    assert.equal(
      await deliverOk(
        stripeEvent('checkout.session.completed', {
          ...checkoutObject({ subscription: sub, customer, userId: user.id }),
          metadata: { user_id: userId },
        }, at(21)),
      ),
      'applied',
    )
    assert.equal(
      (await subscriptionRow(sub)).user_id,
      user.id,
      `${what}: linked by the checkout's client_reference_id`,
    )
    await sql`delete from public.subscriptions where stripe_subscription_id = ${sub}`
    await sql`delete from private.stripe_customers where user_id = ${user.id}`
  }
})

test('webhook: invoice.payment_failed in the shape of API versions before 2025-03-31.basil (a top-level subscription) is applied', async () => {
  const user = await createUser()
  const sub = newId('sub')
  const customer = newId('cus')
  await happen(subscriptionEvent('created', { id: sub, customer, userId: user.id, status: 'active' }, at(10)))
  const { parent: _, ...newer } = invoiceFailedObject({ subscription: sub, customer })
  const older = stripeEvent('invoice.payment_failed', { ...newer, subscription: sub }, at(30))
  assert.equal(await deliverOk(older), 'applied')
  assert.equal((await subscriptionRow(sub)).last_payment_failed_at.getTime(), at(30) * 1000)
  // Expanded (an object with its id), as older versions also send it.
  const expanded = stripeEvent('invoice.payment_failed', {
    ...newer,
    subscription: { id: sub, object: 'subscription' },
  }, at(40))
  assert.equal(await deliverOk(expanded), 'applied')
  assert.equal((await subscriptionRow(sub)).last_payment_failed_at.getTime(), at(40) * 1000)
  // Neither shape: still an invoice without a subscription (a one-off invoice), ignored.
  const oneOff = await deliver(
    stripeEvent('invoice.payment_failed', { ...newer, subscription: null }, at(50)),
  )
  assert.deepEqual([oneOff.status, oneOff.body.outcome], [200, 'ignored'])
  assert.match(oneOff.body.reason, /without a subscription/)
})

test('storableText: cut first, then made well-formed (a cut inside an emoji leaves no lone surrogate)', () => {
  for (
    const [input, max] of [['x'.repeat(99) + '\u{1F600}', 100], [
      'y'.repeat(1999) + '\u{1F600}tail',
      2000,
    ]] as const
  ) {
    const out = storableText(input, max)
    assert.ok(out.isWellFormed(), `${max}: well-formed`)
    assert.ok(out.length <= max)
    assert.equal(out, input.slice(0, max - 1) + '\uFFFD')
  }
  assert.equal(storableText('a\u0000b\ud800'), 'a\uFFFDb\uFFFD')
})

test('webhook: unknown event types are acknowledged and ignored', async () => {
  const event = stripeEvent('customer.created', { id: newId('cus'), object: 'customer' }, at(1))
  const res = await deliver(event)
  assert.equal(res.status, 200)
  assert.deepEqual(res.body, { received: true, outcome: 'ignored' })
  assert.equal(await recordedEvents([event.id]), 0)
  // A handled type without a subscription (a one-off payment checkout) is recorded and ignored.
  const oneOff = stripeEvent('checkout.session.completed', {
    ...checkoutObject({ subscription: '', customer: newId('cus'), userId: crypto.randomUUID() }),
    mode: 'payment',
    subscription: null,
  }, at(2))
  assert.equal(await deliverOk(oneOff), 'ignored')
})

test('webhook: a failure while applying is a 5xx, leaves nothing behind, and the retry applies', async () => {
  const user = await createUser()
  const sub = newId('sub')
  const customer = newId('cus')
  // Make the database refuse this one subscription (as a broken deploy or a lock timeout would).
  await sql.unsafe(
    `create function private.test_refuse_${sub}() returns trigger language plpgsql set search_path = '' as $$
    begin raise exception 'simulated failure'; end $$`,
  )
  await sql.unsafe(
    `create trigger test_refuse_${sub} before insert or update on public.subscriptions for each row
    when (new.stripe_subscription_id = '${sub}') execute function private.test_refuse_${sub}()`,
  )
  const event = subscriptionEvent('created', { id: sub, customer, userId: user.id, status: 'active' }, at(10))
  await stripeHas({ id: sub, customer, userId: user.id, status: 'active' })
  try {
    const res = await deliver(event)
    assertError(res, 500)
    assert.equal(
      await recordedEvents([event.id]),
      0,
      'the event id is not recorded, so the retry is not a replay',
    )
    assert.equal(await subscriptionRow(sub), undefined)
  } finally {
    await sql.unsafe(`drop trigger test_refuse_${sub} on public.subscriptions`)
    await sql.unsafe(`drop function private.test_refuse_${sub}()`)
  }
  assert.equal(await deliverOk(event), 'applied', "Stripe's retry is applied")
  assert.equal((await subscriptionRow(sub)).status, 'active')
  assert.equal(await recordedEvents([event.id]), 1)
})

test('PostgREST: clients cannot apply events, read customers or write subscriptions', async () => {
  const user = await createUser()
  const db = clientAs(user.token)
  const applied = await db.rpc('apply_stripe_event', {
    event_id: 'evt_x',
    event_type: 'customer.subscription.created',
    event_created: new Date().toISOString(),
    details: { subscription_id: 'sub_x', status: 'active', user_id: user.id },
  })
  assert.equal(applied.error?.code, '42501', JSON.stringify(applied))
  for (
    const [fn, args] of [['stripe_customer_of', { target_user_id: user.id }], ['remember_stripe_customer', {
      target_user_id: user.id,
      customer_id: 'cus_mine',
    }]] as const
  ) {
    const r = await db.rpc(fn, args)
    assert.equal(r.error?.code, '42501', `${fn}: ${JSON.stringify(r)}`)
  }
  const insert = await db.from('subscriptions').insert({ user_id: user.id, status: 'active' })
  assert.equal(insert.error?.code, '42501')
  const anon = await clientAs().rpc('apply_stripe_event', {
    event_id: 'evt_y',
    event_type: 'x',
    event_created: new Date().toISOString(),
    details: {},
  })
  assert.ok(anon.error, 'anon neither')
  assert.equal((await sql`select 1 from public.subscriptions where user_id = ${user.id}`).length, 0)
})
