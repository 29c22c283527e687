// The two signed webhooks (Stripe, Resend), fuzzed a little: for every event type they handle,
// malformed variants of a valid event (each field in turn removed, null, swapped to another JSON
// type, a huge or negative number, a bad date, a long or odd string, a string cut inside an emoji,
// a value nested 5,000 levels deep), each correctly signed.
// A provider retries every non-2xx for days, so none may be 5xx: each is 200 (applied, stale,
// stored, replay, or ignored with its reason recorded). The sample is random per run; the seed is
// printed in the step's name (WEBHOOK_FUZZ_SEED=<n> replays it).
import { strict as assert } from 'node:assert'
import { Webhook } from 'svix'
import { api, createUser, env, prng, sql } from './_helpers.ts'
import {
  at,
  checkoutObject,
  invoiceFailedObject,
  newId,
  signatureFor,
  stripeEvent,
  stripeHas,
  subscriptionObject,
} from './_stripe.ts'

const PER_TYPE = 60
const CONCURRENCY = 8

type Json = null | boolean | number | string | Json[] | { [k: string]: Json }
const REMOVE = Symbol('remove')
/** Stands for a value nested 5,000 levels deep, put into the payload after JSON.stringify. */
const DEEP = '(deep)'
const withDeep = (payload: string) =>
  payload.replaceAll(JSON.stringify(DEEP), '['.repeat(5000) + ']'.repeat(5000))

/** What a value may be replaced with: nulls, other JSON types, extreme numbers, bad dates, odd strings. */
function replacementsFor(value: Json): (Json | typeof REMOVE)[] {
  const common: (Json | typeof REMOVE)[] = [
    REMOVE,
    null,
    '',
    'x'.repeat(20_000),
    '\u0000',
    '\ud800',
    "' or 1=1 --",
    '0000-00-00',
    '2026-02-30T00:00:00Z',
    'garbage',
    '9999-12-31T23:59:59Z',
    'notanumber',
    -99999999999,
    1e308,
    -1e308,
    2 ** 63,
    1.5,
    0,
    true,
    [],
    {},
    [null],
    [{}],
    { id: 42 },
    // Cut at the 100 and 2000 characters the webhooks keep: the cut falls inside the emoji.
    'x'.repeat(99) + '\u{1F600}',
    'x'.repeat(1999) + '\u{1F600}',
    DEEP,
  ]
  if (typeof value === 'string') return [...common, 42, `${value}${'x'.repeat(300)}`, `${value} `]
  if (typeof value === 'number') return [...common, String(value), value * 1e12, -value]
  if (typeof value === 'boolean') return [...common, String(value), value ? 0 : 1]
  if (Array.isArray(value)) {
    return [...common, 'x', [value[0] ?? null, 42], value.length ? [value[0], value[0]] : ['x']]
  }
  return [...common, 'x', [value]]
}

/** Every path into the value (objects and arrays included, the first element of arrays). */
function pathsOf(value: Json, prefix: (string | number)[] = []): (string | number)[][] {
  const out: (string | number)[][] = prefix.length ? [prefix] : []
  if (Array.isArray(value)) {
    if (value.length) out.push(...pathsOf(value[0], [...prefix, 0]))
  } else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) out.push(...pathsOf(v, [...prefix, k]))
  }
  return out
}

function mutate(base: Json, path: (string | number)[], replacement: Json | typeof REMOVE): Json {
  const copy = structuredClone(base) as Json
  let node = copy as Record<string | number, Json>
  for (const key of path.slice(0, -1)) node = node[key] as Record<string | number, Json>
  const last = path[path.length - 1]
  if (replacement === REMOVE) {
    if (Array.isArray(node)) node.splice(last as number, 1)
    else delete node[last]
  } else node[last] = replacement
  return copy
}

/** Up to `count` variants of `base`, drawn at random from every path x replacement. */
function variants(base: Json, count: number, random: () => number): { what: string; body: Json }[] {
  const all: { path: (string | number)[]; replacement: Json | typeof REMOVE }[] = []
  for (const path of pathsOf(base)) {
    let value = base as Json
    for (const key of path) value = (value as Record<string | number, Json>)[key]
    for (const replacement of replacementsFor(value)) all.push({ path, replacement })
  }
  for (let i = all.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1))
    ;[all[i], all[j]] = [all[j], all[i]]
  }
  return all.slice(0, count).map(({ path, replacement }) => ({
    what: `${path.join('.')} = ${
      replacement === REMOVE ? '(removed)' : JSON.stringify(replacement).slice(0, 40)
    }`,
    body: mutate(base, path, replacement),
  }))
}

/** Runs the deliveries `CONCURRENCY` at a time; returns those not answered 200. */
async function deliverAll<T>(
  items: T[],
  send: (item: T) => Promise<{ status: number; body: unknown }>,
  label: (item: T) => string,
) {
  const bad: string[] = []
  const counts: Record<string, number> = {}
  let next = 0
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (next < items.length) {
      const item = items[next++]
      const res = await send(item)
      const outcome = (res.body as { outcome?: string })?.outcome ?? String(res.status)
      counts[outcome] = (counts[outcome] ?? 0) + 1
      if (res.status !== 200) {
        bad.push(`${label(item)}: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`)
      }
    }
  }))
  return { bad, counts }
}

const seedOf = () => Number(Deno.env.get('WEBHOOK_FUZZ_SEED') ?? Date.now() % 2 ** 31)

Deno.test({
  name: 'webhook fuzz: malformed but signed Stripe events of every handled type are never 5xx',
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const seed = seedOf()
    const random = prng(seed)
    const user = await createUser({ prefix: 'fuzz' })
    const sub = newId('sub')
    const customer = newId('cus')
    await stripeHas({ id: sub, customer, userId: user.id, status: 'active' })
    const state = { id: sub, customer, userId: user.id, status: 'active' }
    const bases: Json[] = [
      ...(['created', 'updated', 'deleted'] as const).map((k) =>
        stripeEvent(`customer.subscription.${k}`, subscriptionObject(state), at(10)) as unknown as Json
      ),
      stripeEvent(
        'checkout.session.completed',
        checkoutObject({ subscription: sub, customer, userId: user.id }),
        at(11),
      ) as unknown as Json,
      stripeEvent(
        'invoice.payment_failed',
        invoiceFailedObject({ subscription: sub, customer }),
        at(12),
      ) as unknown as Json,
    ]
    const cases = bases.flatMap((base) =>
      variants(base, PER_TYPE, random).map((v) => {
        // A fresh event id per variant (unless the id itself is the mutated field), so none is a replay.
        const body = v.body as Record<string, Json>
        if (
          body && typeof body === 'object' && !Array.isArray(body) &&
          body.id === (base as Record<string, Json>).id
        ) body.id = newId('evt')
        return { type: (base as Record<string, Json>).type as string, ...v }
      })
    )
    const { bad, counts } = await deliverAll(cases, async (c) => {
      const payload = withDeep(JSON.stringify(c.body, null, 2))
      return await api('/api/payment/webhook', {
        method: 'POST',
        rawBody: payload,
        headers: { 'content-type': 'application/json', 'stripe-signature': await signatureFor(payload) },
      })
    }, (c) => `${c.type}: ${c.what}`)
    await t.step(
      `stripe fuzz (seed ${seed}): ${cases.length} signed variants; answers ${JSON.stringify(counts)}`,
      () => {},
    )
    assert.deepEqual(bad, [], `seed ${seed}: every malformed but signed event is answered 200`)
    const [{ n }] =
      await sql`select count(*)::int as n from private.stripe_events where outcome = 'ignored' and reason is not null
                               and received_at > now() - interval '10 minutes'`
    assert.ok(n > 0, 'ignored events are recorded with their reason')
  },
})

Deno.test({
  name: 'webhook fuzz: malformed but signed Resend events of every handled type are never 5xx',
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const seed = seedOf()
    const random = prng(seed)
    const emailId = crypto.randomUUID()
    // The inbound body Resend serves for the received event (so only malformed input is tested).
    await fetch(`${env('RESEND_BASE_URL')}/__control/inbound`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        id: emailId,
        from: 'Reader <reader@example.com>',
        to: ['inbox@mail.journal.test'],
        subject: 'Hi',
        text: 'body',
        html: null,
      }),
    }).then((r) => r.body?.cancel())
    const event = (type: string, data: Record<string, Json>): Json => ({
      type,
      created_at: new Date().toISOString(),
      data: {
        created_at: '2024-02-22 23:41:11.894719+00',
        email_id: emailId,
        from: 'Journal <journal@mail.journal.test>',
        to: ['fuzz@example.com'],
        subject: 'Hi',
        ...data,
      },
    })
    const bases: Json[] = [
      ...['email.sent', 'email.delivered', 'email.delivery_delayed', 'email.complained', 'email.failed'].map((
        type,
      ) => event(type, {})),
      event('email.bounced', {
        bounce: { type: 'Permanent', subType: 'General', message: 'no such mailbox' },
      }),
      event('email.received', {
        from: 'Reader <reader@example.com>',
        to: ['inbox@mail.journal.test'],
        cc: [],
        bcc: [],
        attachments: [],
      }),
    ]
    const svix = new Webhook(env('RESEND_WEBHOOK_SECRET'))
    const cases = bases.flatMap((base) =>
      variants(base, PER_TYPE, random).map((v) => ({
        type: (base as Record<string, Json>).type as string,
        ...v,
      }))
    )
    const { bad, counts } = await deliverAll(cases, async (c) => {
      const payload = withDeep(JSON.stringify(c.body))
      const id = `msg_${crypto.randomUUID()}`
      const now = new Date()
      return await api('/api/email/webhook', {
        method: 'POST',
        rawBody: payload,
        headers: {
          'content-type': 'application/json',
          'svix-id': id,
          'svix-timestamp': String(Math.floor(now.getTime() / 1000)),
          'svix-signature': svix.sign(id, now, payload),
        },
      })
    }, (c) => `${c.type}: ${c.what}`)
    await t.step(
      `resend fuzz (seed ${seed}): ${cases.length} signed variants; answers ${JSON.stringify(counts)}`,
      () => {},
    )
    assert.deepEqual(bad, [], `seed ${seed}: every malformed but signed event is answered 200`)
    // The suppressions a fuzzed bounce or complaint may add are for the test's own address only.
    await sql`delete from private.email_suppressions where address = 'fuzz@example.com'`
  },
})
