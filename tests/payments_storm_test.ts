// The webhook storm (SPEC's reliability rules): 200 Stripe events for 20 subscriptions.
// Each change happens at Stripe (the fake's state moves on) and its event is then delivered
// twice, late and shuffled, 10 deliveries at a time, while later changes keep happening. The
// webhook reads Stripe's current state for every event, so afterwards every subscription
// equals its last state, each event id is recorded once, and exactly one delivery of each event
// was not a replay. The order is random per run; the seed is printed so a failing order can be
// replayed (STORM_SEED=<n>). The figures appear in `npm test`'s output as the name of a step.
import { strict as assert } from 'node:assert'
import { createUser, prng, sql } from './_helpers.ts'
import {
  at,
  checkoutObject,
  deliver,
  invoiceFailedObject,
  newId,
  type StripeEvent,
  stripeEvent,
  stripeHas,
  subscriptionEvent,
  type SubscriptionState,
} from './_stripe.ts'

const SUBSCRIPTIONS = 20
const EVENTS_PER_SUBSCRIPTION = 10
const CONCURRENCY = 10
/** How far (in events happening at Stripe) a delivery may lag behind its event. */
const MAX_LAG = 60

interface Expected {
  userId: string
  status: string
  periodEnd: number
  cancelAtPeriodEnd: boolean
  lastPaymentFailed: number | null
}

Deno.test({
  name:
    "webhook storm: 200 events twice each, late and shuffled while Stripe moves on, 10 at a time: every subscription ends at Stripe's last state",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: storm,
})

async function storm(t: Deno.TestContext) {
  const seed = Number(Deno.env.get('STORM_SEED') ?? Date.now() % 2 ** 31)
  const random = prng(seed)
  const pick = <T>(xs: T[]) => xs[Math.floor(random() * xs.length)]
  const users = await Promise.all(
    Array.from({ length: SUBSCRIPTIONS }, () => createUser({ prefix: 'storm' })),
  )

  // Per subscription: its events in order, each with Stripe's state once it happened.
  const timelines: { event: StripeEvent; stripe: SubscriptionState }[][] = []
  const expected = new Map<string, Expected>()
  let eventCount = 0
  for (const user of users) {
    const sub = newId('sub')
    const customer = newId('cus')
    const t0 = 10_000 + eventCount * 10
    const state = (status: string, extra: Partial<SubscriptionState> = {}): SubscriptionState => ({
      id: sub,
      customer,
      userId: user.id,
      status,
      periodEnd: at(t0 + 30 * 86400),
      ...extra,
    })
    const line: { event: StripeEvent; stripe: SubscriptionState }[] = []
    // Stripe's opening: created (incomplete), then the paid checkout (active).
    line.push({
      event: subscriptionEvent('created', state('incomplete'), at(t0)),
      stripe: state('incomplete'),
    })
    line.push({
      event: stripeEvent(
        'checkout.session.completed',
        checkoutObject({ subscription: sub, customer, userId: user.id }),
        at(t0 + 1),
      ),
      stripe: state('active'),
    })
    let last: SubscriptionState = state('active')
    let lastPaymentFailed: number | null = null
    for (let k = 2; k < EVENTS_PER_SUBSCRIPTION; k++) {
      const created = at(t0 + k)
      const final = k === EVENTS_PER_SUBSCRIPTION - 1
      if (!final && random() < 0.25) {
        line.push({
          event: stripeEvent(
            'invoice.payment_failed',
            invoiceFailedObject({ subscription: sub, customer }),
            created,
          ),
          stripe: last,
        })
        lastPaymentFailed = created
        continue
      }
      const cancel = final && random() < 0.3
      last = cancel
        ? state('canceled', { periodEnd: at(t0 + k * 86400) })
        : state(pick(['active', 'past_due', 'active', 'trialing', 'unpaid']), {
          periodEnd: at(t0 + (30 + k) * 86400),
          cancelAtPeriodEnd: random() < 0.5,
        })
      line.push({ event: subscriptionEvent(cancel ? 'deleted' : 'updated', last, created), stripe: last })
    }
    eventCount += line.length
    timelines.push(line)
    expected.set(sub, {
      userId: user.id,
      status: last.status,
      periodEnd: last.periodEnd!,
      cancelAtPeriodEnd: last.cancelAtPeriodEnd ?? false,
      lastPaymentFailed,
    })
  }
  // The order things happen at Stripe: each subscription's events in order, interleaved at random.
  const happened: { event: StripeEvent; stripe: SubscriptionState }[] = []
  const cursors = timelines.map(() => 0)
  while (happened.length < eventCount) {
    const open = timelines.map((_, i) => i).filter((i) => cursors[i] < timelines[i].length)
    const i = pick(open)
    happened.push(timelines[i][cursors[i]++])
  }
  const events = happened.map((h) => h.event)
  assert.equal(events.length, SUBSCRIPTIONS * EVENTS_PER_SUBSCRIPTION)

  // Each change happens, then its event is delivered twice, each copy up to MAX_LAG changes late.
  type Step = { at: number; happen?: SubscriptionState; deliver?: StripeEvent }
  const steps: Step[] = []
  happened.forEach((h, i) => {
    steps.push({ at: i, happen: h.stripe })
    for (let copy = 0; copy < 2; copy++) steps.push({ at: i + 0.5 + random() * MAX_LAG, deliver: h.event })
  })
  steps.sort((a, b) => a.at - b.at)

  const outcomes = new Map<string, string[]>()
  const failures: string[] = []
  const inFlight = new Set<Promise<void>>()
  const started = performance.now()
  for (const step of steps) {
    // A change is made at Stripe before any later step starts (deliveries under way may still
    // be reading the state before it, as they would at Stripe).
    if (step.happen) {
      await stripeHas(step.happen)
      continue
    }
    while (inFlight.size >= CONCURRENCY) await Promise.race(inFlight)
    const event = step.deliver!
    const delivery: Promise<void> = deliver(event).then((res) => {
      if (res.status !== 200) {
        failures.push(`${event.id} ${event.type}: ${res.status} ${JSON.stringify(res.body)}`)
      } else outcomes.set(event.id, [...(outcomes.get(event.id) ?? []), res.body.outcome])
    }).finally(() => inFlight.delete(delivery))
    inFlight.add(delivery)
  }
  await Promise.all(inFlight)
  const deliveries = steps.filter((s) => s.deliver)
  const ms = Math.round(performance.now() - started)
  const tally: Record<string, number> = {}
  for (const list of outcomes.values()) for (const o of list) tally[o] = (tally[o] ?? 0) + 1
  // The figures as a step's name: `npm test` prints test names (its TAP reporter drops console output).
  await t.step(
    `storm figures (seed ${seed}): ${deliveries.length} deliveries of ${events.length} events, ` +
      `${CONCURRENCY} at a time, up to ${MAX_LAG} changes late, ${ms} ms; outcomes ${JSON.stringify(tally)}`,
    () => {},
  )

  assert.deepEqual(failures, [], `seed ${seed}: every delivery is acknowledged with 2xx`)
  for (const [id, list] of outcomes) {
    assert.equal(list.length, 2, `${id} delivered twice`)
    assert.equal(
      list.filter((o) => o === 'replay').length,
      1,
      `seed ${seed}: ${id} processed once, replayed once (${list})`,
    )
  }
  const ids = events.map((e) => e.id)
  const [{ n, distinct }] = await sql`select count(*)::int as n, count(distinct event_id)::int as distinct
                                        from private.stripe_events where event_id = any(${ids})`
  assert.equal(n, events.length, 'each event id recorded')
  assert.equal(distinct, events.length, 'and recorded once')

  const rows =
    await sql`select stripe_subscription_id, user_id, status, current_period_end, cancel_at_period_end, last_payment_failed_at
                           from public.subscriptions where stripe_subscription_id = any(${[
      ...expected.keys(),
    ]})`
  assert.equal(rows.length, SUBSCRIPTIONS, 'one row per subscription')
  for (const row of rows) {
    const want = expected.get(row.stripe_subscription_id)!
    const where = `seed ${seed}, ${row.stripe_subscription_id}`
    assert.equal(row.user_id, want.userId, where)
    assert.equal(row.status, want.status, `${where}: status`)
    assert.equal(row.current_period_end.getTime(), want.periodEnd * 1000, `${where}: period end`)
    assert.equal(row.cancel_at_period_end, want.cancelAtPeriodEnd, `${where}: cancel at period end`)
    assert.equal(
      row.last_payment_failed_at?.getTime() ?? null,
      want.lastPaymentFailed === null ? null : want.lastPaymentFailed * 1000,
      `${where}: last payment failure`,
    )
  }
  // Premium is derived from the stored state, nothing else.
  const [{ premium }] = await sql`select count(*)::int as premium from unnest(${
    users.map((u) => u.id)
  }::uuid[]) u(id)
                                   where private.is_premium(u.id)`
  assert.equal(premium, [...expected.values()].filter((e) => e.status === 'active').length)
}
