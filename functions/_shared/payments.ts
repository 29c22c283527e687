// Stripe, through the official SDK over fetch and Web Crypto (the SDK's Node defaults do not
// run in Deno; its synchronous signature helpers throw there, so only the async ones are used).
//
// Configuration: STRIPE_SECRET_KEY (API calls), STRIPE_WEBHOOK_SECRET (the webhook needs only
// this), STRIPE_API_BASE (default https://api.stripe.com; tests point it at a local server that
// speaks Stripe's HTTP API), SITE_URL (the origins checkout may redirect to, comma-separated),
// STRIPE_PRICE_IDS (required for checkout: the only prices it accepts, comma-separated).
import Stripe from 'stripe'
import { z } from 'zod'
import { optionalEnv } from './env.ts'
import { badRequest, HttpError, unavailable } from './errors.ts'
import { storableText } from './webhooks.ts'

/**
 * The API version this code reads payloads in. Pinned, so a change of the account's default
 * version cannot change what replies look like. Since 2025-03-31.basil the period end lives on
 * the subscription items (read below). Webhook events come in the version of their endpoint,
 * not this one: the webhook reads the few event fields it uses in this shape and, where an older
 * version differs (an invoice's subscription), in that one too.
 */
export const STRIPE_API_VERSION = '2026-10-28.endive' as const

/** Seconds a webhook signature stays valid (Stripe's default: 5 minutes). */
export const WEBHOOK_TOLERANCE_SECONDS = 300

const cryptoProvider = Stripe.createSubtleCryptoProvider()

let cached: { key: string; base: string; client: Stripe } | undefined

/** A Stripe client, or null when STRIPE_SECRET_KEY is not configured. */
export function stripeClient(): Stripe | null {
  const key = optionalEnv('STRIPE_SECRET_KEY')
  if (!key) return null
  const base = optionalEnv('STRIPE_API_BASE') ?? 'https://api.stripe.com'
  if (cached?.key === key && cached.base === base) return cached.client
  const url = new URL(base)
  const protocol = url.protocol === 'http:' ? 'http' : 'https'
  const client = new Stripe(key, {
    apiVersion: STRIPE_API_VERSION,
    httpClient: Stripe.createFetchHttpClient(),
    host: url.hostname,
    port: url.port || (protocol === 'http' ? 80 : 443),
    protocol,
    maxNetworkRetries: 2, // 409 (idempotency key in use), 429 and 5xx, with backoff
    timeout: 15_000,
  })
  cached = { key, base, client }
  return client
}

export function requireStripe(): Stripe {
  const client = stripeClient()
  if (!client) throw unavailable('Payments are not configured (STRIPE_SECRET_KEY is not set)')
  return client
}

/** The origins checkout may send the browser back to (SITE_URL, comma-separated). */
export function siteOrigins(): string[] {
  return (optionalEnv('SITE_URL') ?? '').split(',').map((s) => s.trim()).filter(Boolean).flatMap((s) => {
    try {
      return [new URL(s).origin]
    } catch {
      console.error(`SITE_URL: ignoring ${s}, not a URL`)
      return []
    }
  })
}

/**
 * The prices checkout accepts (STRIPE_PRICE_IDS). Required: any active subscription makes its
 * user premium, so an open list would sell premium at the price of the cheapest recurring
 * price in the Stripe account.
 */
export function allowedPrices(): string[] {
  const list = (optionalEnv('STRIPE_PRICE_IDS') ?? '').split(',').map((s) => s.trim()).filter(Boolean)
  if (!list.length) throw new HttpError(503, 'Payments are not configured (STRIPE_PRICE_IDS is not set)')
  return list
}

/** A Stripe error as the reply the caller gets: their mistake 400, Stripe's trouble 502/503. */
export function fromStripe(e: unknown, paramNames: Record<string, string> = {}): HttpError {
  if (!(e instanceof Stripe.errors.StripeError)) {
    console.error('stripe call failed', e)
    return new HttpError(502, 'The payment provider could not be reached')
  }
  console.error(`stripe ${e.type} ${e.statusCode ?? ''}: ${e.message}`)
  if (e.type === 'StripeInvalidRequestError' && e.statusCode !== undefined && e.statusCode < 500) {
    const field = e.param ? Object.entries(paramNames).find(([p]) => e.param!.startsWith(p))?.[1] : undefined
    if (field) return badRequest(`${field}: ${e.message}`)
  }
  if (e.type === 'StripeRateLimitError') return unavailable('The payment provider is busy; try again shortly')
  return new HttpError(502, 'The payment provider refused the request')
}

/** Stripe no longer knows the customer passed (deleted, or the account's keys changed mode). */
export const isMissingCustomer = (e: unknown) =>
  e instanceof Stripe.errors.StripeInvalidRequestError && e.code === 'resource_missing' &&
  e.param === 'customer'

/**
 * Checks a webhook's signature over the raw body (Stripe's scheme, 5-minute tolerance); throws
 * when it does not hold. The body is parsed only after, and separately: a signed body that is
 * not a valid event is the sender's bug, answered 2xx `ignored`, not a signature error.
 */
export async function verifyStripeSignature(
  rawBody: string,
  signature: string,
  secret: string,
): Promise<void> {
  await Stripe.webhooks.signature!.verifyHeaderAsync(
    rawBody,
    signature,
    secret,
    WEBHOOK_TOLERANCE_SECONDS,
    cryptoProvider,
  )
}

export const HANDLED_EVENTS = [
  'checkout.session.completed',
  'customer.subscription.created',
  'customer.subscription.updated',
  'customer.subscription.deleted',
  'invoice.payment_failed',
] as const
type HandledEvent = typeof HANDLED_EVENTS[number]

// ---------------------------------------------------------------------------------------
// The shapes this code reads (zod). Only the fields the webhook uses are checked: the state it
// stores comes from Stripe's current subscription (retrieved), never from the event's copy.
// ---------------------------------------------------------------------------------------

const stripeId = (prefix: string) =>
  z.string().regex(new RegExp(`^${prefix}_[A-Za-z0-9_]{1,250}$`), `must be a Stripe ${prefix}_ id`)
/** An id, or the object it names when expanded. */
const stripeRef = (prefix: string) => z.union([stripeId(prefix), z.looseObject({ id: stripeId(prefix) })])
/** Seconds since the epoch, 2000-01-01 to 2200-01-01 (the database also refuses an event from the future). */
const unixSeconds = z.number().int().min(946_684_800).max(7_258_118_400)
/**
 * A user id a checkout or subscription claims. Anything unreadable (too long: Stripe allows 500
 * characters of metadata; not a string) counts as no claim, not as a broken event: the
 * subscription is then kept without a user until an event names one.
 */
const UserIdClaim = z.string().max(100).nullish().catch(null)
const Metadata = z.looseObject({ user_id: UserIdClaim }).nullish().catch(null)

export const SUBSCRIPTION_STATUSES = [
  'incomplete',
  'incomplete_expired',
  'trialing',
  'active',
  'past_due',
  'canceled',
  'unpaid',
  'paused',
] as const

const EventEnvelope = z.looseObject({
  id: stripeId('evt'),
  type: z.enum(HANDLED_EVENTS),
  created: unixSeconds,
  data: z.looseObject({ object: z.looseObject({}) }),
})

const EVENT_OBJECTS = {
  'checkout.session.completed': z.looseObject({
    mode: z.string().max(50),
    subscription: stripeRef('sub').nullish(),
    customer: stripeRef('cus').nullish(),
    client_reference_id: UserIdClaim,
    metadata: Metadata,
  }),
  'customer.subscription.created': z.looseObject({ id: stripeId('sub') }),
  'customer.subscription.updated': z.looseObject({ id: stripeId('sub') }),
  'customer.subscription.deleted': z.looseObject({ id: stripeId('sub') }),
  'invoice.payment_failed': z.looseObject({
    customer: stripeRef('cus').nullish(),
    parent: z.looseObject({
      subscription_details: z.looseObject({ subscription: stripeRef('sub') }).nullish(),
    }).nullish(),
    // Endpoints on API versions before 2025-03-31.basil send the subscription here.
    subscription: stripeRef('sub').nullish(),
  }),
} satisfies Record<HandledEvent, z.ZodType>

/** A subscription as Stripe's API returns it (API 2026-10-28: the period end on the items). */
const RetrievedSubscription = z.looseObject({
  id: stripeId('sub'),
  customer: stripeRef('cus'),
  status: z.enum(SUBSCRIPTION_STATUSES),
  cancel_at_period_end: z.boolean(),
  metadata: Metadata,
  items: z.looseObject({
    data: z.array(z.looseObject({ current_period_end: unixSeconds.nullish() })).max(1000),
  }),
})

/** The first problems of a failed parse, as `path: message` (for the recorded reason). */
export function zodReason(error: z.ZodError, prefix = ''): string {
  return error.issues.slice(0, 3)
    .map((i) => `${[prefix, ...i.path.map(String)].filter(Boolean).join('.') || 'event'}: ${i.message}`)
    .join('; ')
}

const idOf = (v: string | { id: string } | null | undefined) => (typeof v === 'string' ? v : v?.id ?? null)
const isoOf = (seconds: number) => new Date(seconds * 1000).toISOString()
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const userIdOf = (...candidates: (string | null | undefined)[]) =>
  candidates.find((c) => c && UUID.test(c)) ?? null

async function sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text))
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, '0')).join('')
}

/** What the webhook does with a verified body. */
export type StripeEventPlan =
  /** A type this product does not handle: acknowledged, not recorded. */
  | { action: 'skip'; type: string }
  /** Recorded as ignored, with the reason; `key` is the event id or sha256:<hex of the body>. */
  | { action: 'ignore'; key: string; type: string | null; created: string | null; reason: string }
  /** Read the subscription from Stripe, then apply. */
  | {
    action: 'apply'
    event: { id: string; type: HandledEvent; created: string }
    subscriptionId: string
    /** What a checkout adds: the user it was made for, and their customer. */
    claimedUserId: string | null
  }

/** Validates a verified body (the fields the webhook uses) and says what to do with it. */
export async function planStripeEvent(rawBody: string): Promise<StripeEventPlan> {
  let body: unknown
  try {
    body = JSON.parse(rawBody)
  } catch {
    body = undefined
  }
  const fields = (body && typeof body === 'object' && !Array.isArray(body) ? body : {}) as Record<
    string,
    unknown
  >
  const type = typeof fields.type === 'string' ? storableText(fields.type, 100) : null
  if (type !== null && !(HANDLED_EVENTS as readonly string[]).includes(type)) return { action: 'skip', type }
  const key = typeof fields.id === 'string' && /^evt_[A-Za-z0-9_]{1,250}$/.test(fields.id)
    ? fields.id
    : `sha256:${await sha256Hex(rawBody)}`
  const created = typeof fields.created === 'number' && Number.isInteger(fields.created) &&
      fields.created >= 946_684_800 && fields.created <= 7_258_118_400
    ? isoOf(fields.created)
    : null
  const ignore = (reason: string): StripeEventPlan => ({ action: 'ignore', key, type, created, reason })
  if (body === undefined) return ignore('body: not JSON')

  const envelope = EventEnvelope.safeParse(body)
  if (!envelope.success) return ignore(zodReason(envelope.error))
  const event = { id: envelope.data.id, type: envelope.data.type, created: isoOf(envelope.data.created) }
  const parsed = EVENT_OBJECTS[event.type].safeParse(envelope.data.data.object)
  if (!parsed.success) return ignore(zodReason(parsed.error, 'data.object'))

  switch (event.type) {
    case 'checkout.session.completed': {
      const s = parsed.data as z.infer<typeof EVENT_OBJECTS['checkout.session.completed']>
      const subscriptionId = s.mode === 'subscription' ? idOf(s.subscription) : null
      if (!subscriptionId) {
        return ignore('data.object: a checkout without a subscription (not a subscription checkout)')
      }
      return {
        action: 'apply',
        event,
        subscriptionId,
        claimedUserId: userIdOf(s.client_reference_id, s.metadata?.user_id),
      }
    }
    case 'invoice.payment_failed': {
      const inv = parsed.data as z.infer<typeof EVENT_OBJECTS['invoice.payment_failed']>
      const subscriptionId = idOf(inv.parent?.subscription_details?.subscription) ?? idOf(inv.subscription)
      if (!subscriptionId) return ignore('data.object: an invoice without a subscription')
      return { action: 'apply', event, subscriptionId, claimedUserId: null }
    }
    default:
      return {
        action: 'apply',
        event,
        subscriptionId: (parsed.data as { id: string }).id,
        claimedUserId: null,
      }
  }
}

/** How long the webhook waits for Stripe's answer (STRIPE_RETRIEVE_TIMEOUT_MS, default 4 s; one retry). */
function retrieveTimeout(): number {
  const ms = Number(optionalEnv('STRIPE_RETRIEVE_TIMEOUT_MS') ?? 4000)
  return Number.isFinite(ms) && ms >= 100 && ms <= 60_000 ? ms : 4000
}

/**
 * Now, to the microsecond (Postgres keeps microseconds): when a subscription read started. Two
 * reads of one subscription in the same millisecond still order.
 */
function preciseNow(): string {
  const ms = performance.timeOrigin + performance.now()
  const whole = Math.floor(ms)
  const micros = String(Math.floor((ms - whole) * 1000)).padStart(3, '0')
  return new Date(whole).toISOString().replace('Z', `${micros}Z`)
}

/** Stripe's current state of a subscription, as public.apply_stripe_event takes it. */
export interface SubscriptionState {
  subscription_id: string
  customer_id: string | null
  user_id: string | null
  status: typeof SUBSCRIPTION_STATUSES[number]
  current_period_end: string | null
  cancel_at_period_end: boolean
  fetched_at: string
}

/**
 * Retrieves the subscription from Stripe: its current state, or `missing` (Stripe does not know
 * it, refuses the request, or answers with a subscription this code cannot read: retrying would
 * not change that).
 * Stripe busy, failing or unreachable: throws 503, so Stripe retries the event later (the stored
 * state must be Stripe's latest, and the event's own copy may be older: docs/payments_email.md).
 */
export async function latestSubscription(
  stripe: Stripe,
  id: string,
): Promise<{ state: SubscriptionState } | { missing: string }> {
  const fetchedAt = preciseNow()
  let sub: unknown
  try {
    sub = await stripe.subscriptions.retrieve(id, {}, { timeout: retrieveTimeout(), maxNetworkRetries: 1 })
  } catch (e) {
    if (
      e instanceof Stripe.errors.StripeInvalidRequestError &&
      (e.statusCode === 404 || e.code === 'resource_missing')
    ) {
      return { missing: `Stripe does not know subscription ${id}` }
    }
    // Stripe refusing the request itself (400) would refuse every retry as well. A rejected or
    // under-privileged key (401/403) is ours to fix: retried, like 429 and 5xx.
    if (
      e instanceof Stripe.errors.StripeInvalidRequestError && e.statusCode !== undefined &&
      e.statusCode < 500 && e.statusCode !== 429
    ) {
      return { missing: `Stripe refused to read subscription ${id}: ${e.message}` }
    }
    const what = e instanceof Stripe.errors.StripeError
      ? `${e.type} ${e.statusCode ?? ''}: ${e.message}`
      : String(e)
    console.error(`stripe: retrieving ${id} failed (${what}); the event will be retried`)
    throw unavailable("Stripe could not be asked for the subscription's current state; retry later")
  }
  const parsed = RetrievedSubscription.safeParse(sub)
  if (!parsed.success) {
    console.error(`stripe: subscription ${id} as retrieved is not readable: ${zodReason(parsed.error)}`)
    return {
      missing: `Stripe's subscription ${id} is not readable: ${zodReason(parsed.error, 'subscription')}`,
    }
  }
  const s = parsed.data
  const ends = s.items.data.map((i) => i.current_period_end).filter((n): n is number => typeof n === 'number')
  return {
    state: {
      subscription_id: s.id,
      customer_id: idOf(s.customer),
      user_id: userIdOf(s.metadata?.user_id),
      status: s.status,
      current_period_end: ends.length ? isoOf(Math.max(...ends)) : null,
      cancel_at_period_end: s.cancel_at_period_end,
      fetched_at: fetchedAt,
    },
  }
}
