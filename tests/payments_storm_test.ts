// The webhook storm (issue 9, Reliability): 200 Stripe events for 20 subscriptions, each
// delivered twice, shuffled, 10 at a time. Afterwards every subscription equals the state of its
// last event, each event id is recorded once, and exactly one delivery of each event was not a
// replay. The order is random per run; the seed is printed so a failing order can be replayed
// (STORM_SEED=<n>). The figures appear in `npm test`'s output as the name of a step.
import { strict as assert } from 'node:assert'
import { createUser, sql } from './_helpers.ts'
import {
  at,
  checkoutObject,
  deliver,
  invoiceFailedObject,
  newId,
  type StripeEvent,
  stripeEvent,
  subscriptionEvent,
  type SubscriptionState,
} from './_stripe.ts'

const SUBSCRIPTIONS = 20
const EVENTS_PER_SUBSCRIPTION = 10
const CONCURRENCY = 10

/** mulberry32: a small seeded PRNG, so a failing order can be run again. */
function prng(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

interface Expected {
  userId: string
  status: string
  periodEnd: number
  cancelAtPeriodEnd: boolean
  lastPaymentFailed: number | null
}

Deno.test({
  name: 'webhook storm: 200 events twice each, shuffled, 10 at a time: every subscription ends at its last event',
  sanitizeOps: false,
  sanitizeResources: false,
  fn: storm,
})

async function storm(t: Deno.TestContext) {
  const seed = Number(Deno.env.get('STORM_SEED') ?? Date.now() % 2 ** 31)
  const random = prng(seed)
  const pick = <T>(xs: T[]) => xs[Math.floor(random() * xs.length)]
  const users = await Promise.all(Array.from({ length: SUBSCRIPTIONS }, () => createUser({ prefix: 'storm' })))

  const events: StripeEvent[] = []
  const expected = new Map<string, Expected>()
  for (const user of users) {
    const sub = newId('sub')
    const customer = newId('cus')
    const t0 = 10_000 + events.length * 10
    const state = (status: string, extra: Partial<SubscriptionState> = {}): SubscriptionState =>
      ({ id: sub, customer, userId: user.id, status, periodEnd: at(t0 + 30 * 86400), ...extra })
    // Stripe's opening: created (incomplete), then the paid checkout.
    events.push(subscriptionEvent('created', state('incomplete'), at(t0)))
    events.push(stripeEvent('checkout.session.completed', checkoutObject({ subscription: sub, customer, userId: user.id }), at(t0 + 1)))
    let last: SubscriptionState = state('active')
    let lastPaymentFailed: number | null = null
    for (let k = 2; k < EVENTS_PER_SUBSCRIPTION; k++) {
      const created = at(t0 + k)
      const final = k === EVENTS_PER_SUBSCRIPTION - 1
      if (!final && random() < 0.25) {
        events.push(stripeEvent('invoice.payment_failed', invoiceFailedObject({ subscription: sub, customer }), created))
        lastPaymentFailed = created
        continue
      }
      const cancel = final && random() < 0.3
      last = cancel
        ? state('canceled', { periodEnd: at(t0 + k * 86400) })
        : state(pick(['active', 'past_due', 'active', 'trialing', 'unpaid']), { periodEnd: at(t0 + (30 + k) * 86400), cancelAtPeriodEnd: random() < 0.5 })
      events.push(subscriptionEvent(cancel ? 'deleted' : 'updated', last, created))
    }
    expected.set(sub, {
      userId: user.id, status: last.status, periodEnd: last.periodEnd!, cancelAtPeriodEnd: last.cancelAtPeriodEnd ?? false,
      lastPaymentFailed,
    })
  }
  assert.equal(events.length, SUBSCRIPTIONS * EVENTS_PER_SUBSCRIPTION)

  // Each event twice, shuffled (Fisher-Yates), delivered by 10 workers.
  const deliveries = [...events, ...events]
  for (let i = deliveries.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1))
    ;[deliveries[i], deliveries[j]] = [deliveries[j], deliveries[i]]
  }
  const outcomes = new Map<string, string[]>()
  const failures: string[] = []
  let next = 0
  const started = performance.now()
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (next < deliveries.length) {
      const event = deliveries[next++]
      const res = await deliver(event)
      if (res.status !== 200) failures.push(`${event.id} ${event.type}: ${res.status} ${JSON.stringify(res.body)}`)
      else outcomes.set(event.id, [...(outcomes.get(event.id) ?? []), res.body.outcome])
    }
  }))
  const ms = Math.round(performance.now() - started)
  const tally: Record<string, number> = {}
  for (const list of outcomes.values()) for (const o of list) tally[o] = (tally[o] ?? 0) + 1
  // The figures as a step's name: `npm test` prints test names (its TAP reporter drops console output).
  await t.step(`storm figures (seed ${seed}): ${deliveries.length} deliveries of ${events.length} events, ` +
    `${CONCURRENCY} at a time, ${ms} ms; outcomes ${JSON.stringify(tally)}`, () => {})

  assert.deepEqual(failures, [], `seed ${seed}: every delivery is acknowledged with 2xx`)
  for (const [id, list] of outcomes) {
    assert.equal(list.length, 2, `${id} delivered twice`)
    assert.equal(list.filter((o) => o === 'replay').length, 1, `seed ${seed}: ${id} processed once, replayed once (${list})`)
  }
  const ids = events.map((e) => e.id)
  const [{ n, distinct }] = await sql`select count(*)::int as n, count(distinct event_id)::int as distinct
                                        from private.stripe_events where event_id = any(${ids})`
  assert.equal(n, events.length, 'each event id recorded')
  assert.equal(distinct, events.length, 'and recorded once')

  const rows = await sql`select stripe_subscription_id, user_id, status, current_period_end, cancel_at_period_end, last_payment_failed_at
                           from public.subscriptions where stripe_subscription_id = any(${[...expected.keys()]})`
  assert.equal(rows.length, SUBSCRIPTIONS, 'one row per subscription')
  for (const row of rows) {
    const want = expected.get(row.stripe_subscription_id)!
    const where = `seed ${seed}, ${row.stripe_subscription_id}`
    assert.equal(row.user_id, want.userId, where)
    assert.equal(row.status, want.status, `${where}: status`)
    assert.equal(row.current_period_end.getTime(), want.periodEnd * 1000, `${where}: period end`)
    assert.equal(row.cancel_at_period_end, want.cancelAtPeriodEnd, `${where}: cancel at period end`)
    assert.equal(row.last_payment_failed_at?.getTime() ?? null, want.lastPaymentFailed === null ? null : want.lastPaymentFailed * 1000, `${where}: last payment failure`)
  }
  // Premium is derived from the stored state, nothing else.
  const [{ premium }] = await sql`select count(*)::int as premium from unnest(${users.map((u) => u.id)}::uuid[]) u(id)
                                   where private.is_premium(u.id)`
  assert.equal(premium, [...expected.values()].filter((e) => e.status === 'active').length)
}
