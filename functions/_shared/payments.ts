// Stripe, through the official SDK over fetch and Web Crypto (the SDK's Node defaults do not
// run in Deno; its synchronous signature helpers throw there, so only the async ones are used).
//
// Configuration: STRIPE_SECRET_KEY (API calls), STRIPE_WEBHOOK_SECRET (the webhook needs only
// this), STRIPE_API_BASE (default https://api.stripe.com; tests point it at a local server that
// speaks Stripe's HTTP API), SITE_URL (the origins checkout may redirect to, comma-separated),
// STRIPE_PRICE_IDS (required for checkout: the only prices it accepts, comma-separated).
import Stripe from 'stripe'
import { optionalEnv } from './env.ts'
import { badRequest, HttpError, unavailable } from './errors.ts'

/**
 * The API version this code reads payloads in. Pinned, so a change of the account's default
 * version cannot change what webhooks and replies look like. Since 2025-03-31.basil the period
 * end lives on the subscription items (read below).
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
  e instanceof Stripe.errors.StripeInvalidRequestError && e.code === 'resource_missing' && e.param === 'customer'

/** Verifies a webhook's signature over the raw body, then parses it (only then). */
export function verifiedEvent(rawBody: string, signature: string, secret: string): Promise<Stripe.Event> {
  return Stripe.webhooks.constructEventAsync(rawBody, signature, secret, WEBHOOK_TOLERANCE_SECONDS, cryptoProvider)
}

/** The arguments of public.apply_stripe_event: the event reduced to what the product keeps. */
export interface EventForDatabase {
  event_id: string
  event_type: string
  event_created: string
  details: Record<string, unknown>
}

export const HANDLED_EVENTS = [
  'checkout.session.completed',
  'customer.subscription.created',
  'customer.subscription.updated',
  'customer.subscription.deleted',
  'invoice.payment_failed',
] as const

const idOf = (v: string | { id: string } | null | undefined) => (typeof v === 'string' ? v : v?.id ?? null)
const isoOf = (seconds: number | null | undefined) => (typeof seconds === 'number' ? new Date(seconds * 1000).toISOString() : null)
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const userIdOf = (...candidates: (string | null | undefined)[]) => candidates.find((c) => c && UUID.test(c)) ?? null

/** The latest period end over the subscription's items (where Stripe keeps it since basil). */
function periodEnd(sub: Stripe.Subscription): string | null {
  const ends = (sub.items?.data ?? []).map((i) => i.current_period_end).filter((n): n is number => typeof n === 'number')
  return ends.length ? isoOf(Math.max(...ends)) : null
}

/** What the database needs of a handled event, or null for event types this product ignores. */
export function eventForDatabase(event: Stripe.Event): EventForDatabase | null {
  const base = { event_id: event.id, event_type: event.type, event_created: isoOf(event.created)! }
  switch (event.type) {
    case 'checkout.session.completed': {
      const s = event.data.object
      if (s.mode !== 'subscription') return { ...base, details: {} }
      return {
        ...base,
        details: {
          subscription_id: idOf(s.subscription),
          customer_id: idOf(s.customer),
          user_id: userIdOf(s.client_reference_id, s.metadata?.user_id),
          paid: s.payment_status === 'paid',
        },
      }
    }
    case 'customer.subscription.created':
    case 'customer.subscription.updated':
    case 'customer.subscription.deleted': {
      const sub = event.data.object
      return {
        ...base,
        details: {
          subscription_id: sub.id,
          customer_id: idOf(sub.customer),
          user_id: userIdOf(sub.metadata?.user_id),
          status: sub.status,
          current_period_end: periodEnd(sub),
          cancel_at_period_end: sub.cancel_at_period_end === true,
        },
      }
    }
    case 'invoice.payment_failed': {
      const inv = event.data.object
      return {
        ...base,
        details: {
          subscription_id: idOf(inv.parent?.subscription_details?.subscription),
          customer_id: idOf(inv.customer),
        },
      }
    }
    default:
      return null
  }
}
