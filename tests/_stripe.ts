// Stripe for the payment tests: events shaped as Stripe sends them (API 2026-10-28: the period
// end on the subscription items), signed with the SDK's own test helper, delivered through the
// gateway; and the fake Stripe server's control endpoints (tests/fakes/stripe.ts).
import Stripe from 'stripe'
import { api, type ApiResponse, env } from './_helpers.ts'
import { STRIPE_API_VERSION } from '../functions/_shared/payments.ts'

const cryptoProvider = Stripe.createSubtleCryptoProvider()
const rand = () => crypto.randomUUID().replace(/-/g, '').slice(0, 20)

export const newId = (prefix: 'sub' | 'cus' | 'evt' | 'cs' | 'in') => `${prefix}_test_${rand()}`

/** Seconds since the epoch, `offset` seconds from a base that is the same for one test file. */
const BASE = Math.floor(Date.now() / 1000) - 3600
export const at = (offset: number) => BASE + offset

export interface SubscriptionState {
  id: string
  customer: string
  userId?: string | null
  status: string
  periodEnd?: number // seconds
  cancelAtPeriodEnd?: boolean
}

export function subscriptionObject(s: SubscriptionState) {
  const periodEnd = s.periodEnd ?? at(30 * 86400)
  return {
    id: s.id,
    object: 'subscription',
    customer: s.customer,
    status: s.status,
    cancel_at_period_end: s.cancelAtPeriodEnd ?? false,
    created: at(0),
    metadata: s.userId ? { user_id: s.userId } : {},
    items: {
      object: 'list',
      data: [{
        id: `si_${rand()}`,
        object: 'subscription_item',
        current_period_start: periodEnd - 30 * 86400,
        current_period_end: periodEnd,
        price: { id: 'price_premium_monthly', object: 'price' },
        quantity: 1,
      }],
    },
  }
}

export function checkoutObject(
  o: { subscription: string; customer: string; userId: string; paid?: boolean },
) {
  return {
    id: newId('cs'),
    object: 'checkout.session',
    mode: 'subscription',
    customer: o.customer,
    subscription: o.subscription,
    client_reference_id: o.userId,
    metadata: { user_id: o.userId },
    payment_status: o.paid === false ? 'unpaid' : 'paid',
    status: 'complete',
  }
}

export function invoiceFailedObject(o: { subscription: string; customer: string }) {
  return {
    id: newId('in'),
    object: 'invoice',
    customer: o.customer,
    status: 'open',
    parent: {
      type: 'subscription_details',
      subscription_details: { subscription: o.subscription, metadata: {} },
    },
  }
}

export interface StripeEvent {
  id: string
  type: string
  created: number
  data: { object: unknown }
}

export function stripeEvent(type: string, object: unknown, created: number, id = newId('evt')): StripeEvent {
  return {
    id,
    object: 'event',
    api_version: STRIPE_API_VERSION,
    created,
    type,
    livemode: false,
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
    data: { object },
  } as StripeEvent
}

export const subscriptionEvent = (
  type: 'created' | 'updated' | 'deleted',
  s: SubscriptionState,
  created: number,
) => stripeEvent(`customer.subscription.${type}`, subscriptionObject(s), created)

/** The Stripe-Signature header Stripe would send for this payload (the SDK's own helper). */
export function signatureFor(payload: string, o: { timestamp?: number; secret?: string } = {}) {
  return Stripe.webhooks.generateTestHeaderStringAsync({
    payload,
    secret: o.secret ?? env('STRIPE_WEBHOOK_SECRET'),
    timestamp: o.timestamp ?? Math.floor(Date.now() / 1000),
    cryptoProvider,
  })
}

/** POSTs an event to the webhook as Stripe does: pretty-printed JSON, signed over the raw bytes. */
export async function deliver(
  event: StripeEvent,
  o: { timestamp?: number; secret?: string; signature?: string | null } = {},
): Promise<ApiResponse> {
  const payload = JSON.stringify(event, null, 2)
  const signature = o.signature === undefined ? await signatureFor(payload, o) : o.signature
  const headers: Record<string, string> = { 'content-type': 'application/json; charset=utf-8' }
  if (signature !== null) headers['stripe-signature'] = signature
  return await api('/api/payment/webhook', { method: 'POST', rawBody: payload, headers })
}

/** Delivers and insists on a 200; returns the outcome. */
export async function deliverOk(event: StripeEvent): Promise<string> {
  const res = await deliver(event)
  if (res.status !== 200) throw new Error(`webhook ${event.type}: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body.outcome
}

export async function stripeControl<T = any>(path: string, body?: unknown): Promise<T> {
  const res = await fetch(
    `${env('STRIPE_API_BASE')}/__control/${path}`,
    body === undefined ? {} : {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    },
  )
  return await res.json()
}

/** Stripe's current state of a subscription, as the fake serves it to the webhook's retrieve. */
export async function stripeHas(s: SubscriptionState | ReturnType<typeof subscriptionObject>) {
  const object = 'object' in s && s.object === 'subscription' ? s : subscriptionObject(s as SubscriptionState)
  await stripeControl('subscription', { object })
}

/**
 * A change as it happens at Stripe: the subscription takes the event's state (subscription
 * events carry it), then the event is delivered. Returns the outcome (insists on a 200).
 */
export async function happen(event: StripeEvent): Promise<string> {
  const object = event.data.object as { object?: string }
  if (object?.object === 'subscription') await stripeControl('subscription', { object })
  return await deliverOk(event)
}

export const retrievals = async (subscriptionId: string) =>
  (await stripeControl<{ count: number }>(`retrievals?subscription_id=${encodeURIComponent(subscriptionId)}`))
    .count
