// Payments (SPEC "Payments and email webhooks", "Subscription"): Stripe checkout for a
// subscription, the caller's subscription, and the signed webhook that keeps `subscriptions`
// equal to Stripe's view. The webhook's whole effect is one SQL call per event
// (public.apply_stripe_event): event id recorded once, state applied only when newer.
import { z } from '@hono/zod-openapi'
import { serviceDb } from '../../_shared/db.ts'
import { optionalEnv } from '../../_shared/env.ts'
import { badRequest, HttpError, unavailable, unwrap } from '../../_shared/errors.ts'
import {
  allowedPrices,
  eventForDatabase,
  fromStripe,
  HANDLED_EVENTS,
  isMissingCustomer,
  requireStripe,
  siteOrigins,
  verifiedEvent,
} from '../../_shared/payments.ts'
import type { Caller } from '../credentials.ts'
import { endpoint, routeModule } from '../openapi.ts'
import type Stripe from 'stripe'

const redirectUrl = z.url({ protocol: /^https?$/ }).max(2048)
  .openapi({ description: 'An http(s) URL on the site (SITE_URL origins)' })

const CheckoutRequest = z.object({
  priceId: z.string().trim().min(1).max(255).regex(/^price_[A-Za-z0-9_]+$/, 'must be a Stripe price id (price_...)'),
  successUrl: redirectUrl,
  cancelUrl: redirectUrl,
}).strict().openapi('CheckoutRequest')

const Subscription = z.object({
  id: z.string(),
  user_id: z.string(),
  status: z.string().openapi({ description: 'Stripe\'s status: active, trialing, past_due, canceled, ...' }),
  current_period_end: z.string().nullable(),
  cancel_at_period_end: z.boolean(),
  last_payment_failed_at: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
}).openapi('Subscription')

/** The origin rule: checkout may only send the browser back to the site itself. */
function checkRedirects(body: { successUrl: string; cancelUrl: string }) {
  const origins = siteOrigins()
  if (!origins.length) throw unavailable('Payments are not configured (SITE_URL is not set)')
  for (const field of ['successUrl', 'cancelUrl'] as const) {
    if (!origins.includes(new URL(body[field]).origin)) {
      throw badRequest(`${field}: must be on the site (${origins.join(', ')})`)
    }
  }
}

/** Creates a Stripe customer for the caller; the key makes concurrent first attempts one customer. */
function createCustomer(stripe: Stripe, caller: Caller, idempotencyKey: string) {
  return stripe.customers.create({ email: caller.email ?? undefined, metadata: { user_id: caller.id } }, { idempotencyKey })
    .catch((e) => {
      throw fromStripe(e)
    })
}

/** The caller's Stripe customer: the stored one, or a new one stored once. */
async function customerFor(stripe: Stripe, caller: Caller): Promise<string> {
  const db = serviceDb() // customer ids are secrets no client role may read or write
  const stored = unwrap(await db.rpc('stripe_customer_of', { target_user_id: caller.id })) as string | null
  if (stored) return stored
  const created = await createCustomer(stripe, caller, `customer-for-user-${caller.id}`)
  const kept = unwrap(await db.rpc('remember_stripe_customer', { target_user_id: caller.id, customer_id: created.id })) as string
  if (kept !== created.id) console.error(`stripe: customer ${created.id} was made beside the stored ${kept}`)
  return kept
}

/** A new customer in place of one Stripe no longer knows (deleted, or test keys swapped for live ones). */
async function replaceCustomer(stripe: Stripe, caller: Caller, gone: string): Promise<string> {
  const created = await createCustomer(stripe, caller, `customer-for-user-${caller.id}-replacing-${gone}`)
  console.error(`stripe: customer ${gone} of user ${caller.id} no longer exists; replaced by ${created.id}`)
  return unwrap(await serviceDb().rpc('replace_stripe_customer', {
    target_user_id: caller.id, old_customer_id: gone, new_customer_id: created.id,
  })) as string
}

const tag = 'Payments'

export const paymentRoutes = routeModule()
  .openapi(
    endpoint({
      method: 'post', path: '/payment/create-checkout-session', tag, auth: 'bearer', body: CheckoutRequest,
      summary: 'Start a Stripe Checkout for a subscription',
      description: 'Redirect URLs must be on a SITE_URL origin. The caller\'s Stripe customer is created once and reused; ' +
        'the user id travels in client_reference_id and metadata. Only prices in STRIPE_PRICE_IDS (else 400); 409 when the caller ' +
        'already has an active subscription. 503 when STRIPE_SECRET_KEY, STRIPE_PRICE_IDS or SITE_URL is not set.',
      response: z.object({ sessionId: z.string(), url: z.string() }),
      errors: [409, 502],
    }),
    async (c) => {
      const body = c.req.valid('json')
      checkRedirects(body)
      const stripe = requireStripe()
      if (!allowedPrices().includes(body.priceId)) throw badRequest('priceId: not a price this site sells')
      // A second subscription would be paid for twice: change plans in Stripe's billing portal instead.
      if (unwrap(await c.var.db.rpc('caller_is_premium'))) throw new HttpError(409, 'You already have an active subscription')
      const caller = c.var.caller
      const sessionFor = (customer: string) =>
        stripe.checkout.sessions.create({
          mode: 'subscription',
          customer,
          line_items: [{ price: body.priceId, quantity: 1 }],
          success_url: body.successUrl,
          cancel_url: body.cancelUrl,
          client_reference_id: caller.id,
          metadata: { user_id: caller.id },
          subscription_data: { metadata: { user_id: caller.id } },
        })
      const customer = await customerFor(stripe, caller)
      const session = await sessionFor(customer)
        .catch(async (e) => isMissingCustomer(e) ? sessionFor(await replaceCustomer(stripe, caller, customer)) : Promise.reject(e))
        .catch((e) => {
          throw e instanceof HttpError ? e : fromStripe(e, { 'line_items[0][price]': 'priceId', success_url: 'successUrl', cancel_url: 'cancelUrl' })
        })
      if (!session.url) throw new HttpError(502, 'The payment provider returned no checkout URL')
      return c.json({ sessionId: session.id, url: session.url })
    },
  )
  .openapi(
    endpoint({
      method: 'get', path: '/payment/subscription', tag, auth: 'bearer',
      summary: 'The caller\'s latest subscription (or null), and whether the caller is premium',
      description: 'Read from the database (works without Stripe keys). `premium` is the helper the monthly award ' +
        'uses: a subscription with status active exists.',
      response: z.object({ subscription: Subscription.nullable(), premium: z.boolean() }),
    }),
    async (c) => {
      const [rows, premium] = await Promise.all([
        c.var.db.from('subscriptions')
          .select('id, user_id, status, current_period_end, cancel_at_period_end, last_payment_failed_at, created_at, updated_at')
          .eq('user_id', c.var.caller.id)
          .order('created_at', { ascending: false }).order('id', { ascending: false }).limit(1)
          .then(unwrap),
        c.var.db.rpc('caller_is_premium').then(unwrap),
      ])
      const latest = ((rows as unknown[])[0] ?? null) as z.infer<typeof Subscription> | null
      return c.json({ subscription: latest, premium: premium === true })
    },
  )
  .openapi(
    endpoint({
      method: 'post', path: '/payment/webhook', tag, auth: { signature: 'stripe' },
      summary: 'Stripe events (signed)',
      description: 'The body is a Stripe event, verified over the raw bytes with STRIPE_WEBHOOK_SECRET before anything ' +
        `is parsed or written (5-minute tolerance). Handled: ${HANDLED_EVENTS.join(', ')}; other types are ` +
        'acknowledged and ignored. A replayed event id is acknowledged and changes nothing; an event older than the ' +
        'stored state is recorded and not applied. Missing/bad/stale signature: 400. A failure while applying: 5xx ' +
        '(Stripe retries; nothing was written). 503 when STRIPE_WEBHOOK_SECRET is not set.',
      response: z.object({
        received: z.literal(true),
        outcome: z.enum(['applied', 'stale', 'ignored', 'replay']),
      }),
      errors: [400],
    }),
    async (c) => {
      const raw = await c.req.text()
      const signature = c.req.header('stripe-signature')
      if (!signature) throw badRequest('Stripe-Signature: header is required')
      const secret = optionalEnv('STRIPE_WEBHOOK_SECRET')
      if (!secret) throw unavailable('The payment webhook is not configured (STRIPE_WEBHOOK_SECRET is not set)')
      let event: Stripe.Event
      try {
        event = await verifiedEvent(raw, signature, secret)
      } catch (e) {
        throw badRequest(`Stripe-Signature: ${e instanceof Error ? e.message : 'verification failed'}`)
      }
      const args = eventForDatabase(event)
      if (!args) return c.json({ received: true as const, outcome: 'ignored' as const })
      const { data, error } = await serviceDb().rpc('apply_stripe_event', { ...args })
      if (error) {
        // Stripe retries any non-2xx; the function's transaction left nothing behind.
        console.error(`stripe event ${event.id} (${event.type}) not applied`, error)
        throw new HttpError(500, 'The event could not be applied; it will be retried')
      }
      console.log(`stripe event ${event.id} ${event.type}: ${data}`)
      return c.json({ received: true as const, outcome: data as 'applied' | 'stale' | 'ignored' | 'replay' })
    },
  )
