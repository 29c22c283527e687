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
  fromStripe,
  HANDLED_EVENTS,
  isMissingCustomer,
  latestSubscription,
  planStripeEvent,
  requireStripe,
  siteOrigins,
  verifyStripeSignature,
} from '../../_shared/payments.ts'
import { refusedAsBadData, storableText, webhookDbFailure } from '../../_shared/webhooks.ts'
import type { Caller } from '../credentials.ts'
import { endpoint, orNull, routeModule } from '../openapi.ts'
import type Stripe from 'stripe'

const redirectUrl = z.url({ protocol: /^https?$/ }).max(2048)
  .openapi({ description: 'An http(s) URL on the site (SITE_URL origins)' })

const CheckoutRequest = z.object({
  priceId: z.string().trim().min(1).max(255).regex(
    /^price_[A-Za-z0-9_]+$/,
    'must be a Stripe price id (price_...)',
  ),
  successUrl: redirectUrl,
  cancelUrl: redirectUrl,
}).strict().openapi('CheckoutRequest')

const Subscription = z.object({
  id: z.string(),
  user_id: z.string(),
  status: z.string().openapi({ description: "Stripe's status: active, trialing, past_due, canceled, ..." }),
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
  return stripe.customers.create({ email: caller.email ?? undefined, metadata: { user_id: caller.id } }, {
    idempotencyKey,
  })
    .catch((e) => {
      throw fromStripe(e)
    })
}

/** The caller's Stripe customer: the stored one, or a new one stored once. */
async function customerFor(stripe: Stripe, caller: Caller): Promise<string> {
  const db = serviceDb() // customer ids are secrets no client role may read or write
  const stored = unwrap(await db.rpc('stripe_customer_of', { target_user_id: caller.id }))
  if (stored) return stored
  const created = await createCustomer(stripe, caller, `customer-for-user-${caller.id}`)
  const kept = unwrap(
    await db.rpc('remember_stripe_customer', { target_user_id: caller.id, customer_id: created.id }),
  )
  if (kept !== created.id) console.error(`stripe: customer ${created.id} was made beside the stored ${kept}`)
  return kept
}

/** A new customer in place of one Stripe no longer knows (deleted, or test keys swapped for live ones). */
async function replaceCustomer(stripe: Stripe, caller: Caller, gone: string): Promise<string> {
  const created = await createCustomer(stripe, caller, `customer-for-user-${caller.id}-replacing-${gone}`)
  console.error(`stripe: customer ${gone} of user ${caller.id} no longer exists; replaced by ${created.id}`)
  return unwrap(
    await serviceDb().rpc('replace_stripe_customer', {
      target_user_id: caller.id,
      old_customer_id: gone,
      new_customer_id: created.id,
    }),
  )
}

const tag = 'Payments'

export const paymentRoutes = routeModule()
  .openapi(
    endpoint({
      method: 'post',
      path: '/payment/create-checkout-session',
      tag,
      auth: 'bearer',
      body: CheckoutRequest,
      summary: 'Start a Stripe Checkout for a subscription',
      description:
        "Redirect URLs must be on a SITE_URL origin. The caller's Stripe customer is created once and reused; " +
        'the user id travels in client_reference_id and metadata. Only prices in STRIPE_PRICE_IDS (else 400); 409 when the caller ' +
        'already has an active subscription; 403 inside an impersonation session. 503 when STRIPE_SECRET_KEY, STRIPE_PRICE_IDS or ' +
        'SITE_URL is not set.',
      response: z.object({ sessionId: z.string(), url: z.string() }),
      errors: [403, 409, 502],
    }),
    async (c) => {
      const body = c.req.valid('json')
      checkRedirects(body)
      // Paid at Stripe by whoever holds the page: never started by an impersonator (403).
      unwrap(await c.var.db.rpc('refuse_while_impersonating', { action: 'starting a checkout' }))
      const stripe = requireStripe()
      if (!allowedPrices().includes(body.priceId)) throw badRequest('priceId: not a price this site sells')
      // A second subscription would be paid for twice: change plans in Stripe's billing portal instead.
      if (unwrap(await c.var.db.rpc('caller_is_premium'))) {
        throw new HttpError(409, 'You already have an active subscription')
      }
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
        .catch(async (e) =>
          isMissingCustomer(e)
            ? sessionFor(await replaceCustomer(stripe, caller, customer))
            : Promise.reject(e)
        )
        .catch((e) => {
          throw e instanceof HttpError ? e : fromStripe(e, {
            'line_items[0][price]': 'priceId',
            success_url: 'successUrl',
            cancel_url: 'cancelUrl',
          })
        })
      if (!session.url) throw new HttpError(502, 'The payment provider returned no checkout URL')
      return c.json({ sessionId: session.id, url: session.url })
    },
  )
  .openapi(
    endpoint({
      method: 'get',
      path: '/payment/subscription',
      tag,
      auth: 'bearer',
      summary: "The caller's latest subscription (or null), and whether the caller is premium",
      description:
        'Read from the database (works without Stripe keys). `premium` is the helper the monthly award ' +
        'uses: a subscription with status active exists.',
      response: z.object({ subscription: orNull(Subscription), premium: z.boolean() }),
    }),
    async (c) => {
      const [rows, premium] = await Promise.all([
        c.var.db.from('subscriptions')
          .select(
            'id, user_id, status, current_period_end, cancel_at_period_end, last_payment_failed_at, created_at, updated_at',
          )
          .eq('user_id', c.var.caller.id)
          .order('created_at', { ascending: false }).order('id', { ascending: false }).limit(1)
          .then(unwrap),
        c.var.db.rpc('caller_is_premium').then(unwrap),
      ])
      const latest = rows[0] ?? null
      return c.json({ subscription: latest, premium: premium === true })
    },
  )
  .openapi(
    endpoint({
      method: 'post',
      path: '/payment/webhook',
      tag,
      auth: { signature: 'stripe' },
      summary: 'Stripe events (signed)',
      description:
        'The body is a Stripe event, verified over the raw bytes with STRIPE_WEBHOOK_SECRET before anything ' +
        `is parsed or written (5-minute tolerance). Handled: ${HANDLED_EVENTS.join(', ')}; other types are ` +
        'acknowledged and ignored. For a handled event the subscription is retrieved from Stripe and its current ' +
        'state stored, unless a later read is stored already (stale). A replayed event id is acknowledged and changes ' +
        'nothing. A signed event that cannot be applied (malformed, a subscription Stripe does not know, a value the ' +
        'database refuses) is recorded and answered 200 `ignored` with the reason, so Stripe does not retry it. ' +
        'Missing/bad/stale signature: 400. 503 when Stripe cannot be asked (busy, failing, unreachable) or the ' +
        'database is unavailable, and when STRIPE_WEBHOOK_SECRET or STRIPE_SECRET_KEY is not set: Stripe retries, ' +
        'nothing was written. 500 for any other failure while applying (also retried).',
      response: z.object({
        received: z.literal(true),
        outcome: z.enum(['applied', 'stale', 'ignored', 'replay']),
        reason: z.string().optional().openapi({ description: 'Why an event was ignored' }),
      }),
      errors: [400],
    }),
    async (c) => {
      const raw = await c.req.text()
      const signature = c.req.header('stripe-signature')
      if (!signature) throw badRequest('Stripe-Signature: header is required')
      const secret = optionalEnv('STRIPE_WEBHOOK_SECRET')
      if (!secret) {
        throw unavailable('The payment webhook is not configured (STRIPE_WEBHOOK_SECRET is not set)')
      }
      try {
        await verifyStripeSignature(raw, signature, secret)
      } catch (e) {
        throw badRequest(`Stripe-Signature: ${e instanceof Error ? e.message : 'verification failed'}`)
      }
      const db = serviceDb()
      const reply = (outcome: 'applied' | 'stale' | 'ignored' | 'replay', reason?: string) =>
        c.json({ received: true as const, outcome, ...(reason ? { reason } : {}) })
      /** Records the event as ignored with the reason (a replay of an ignored event stays one row). */
      const ignore = async (key: string, type: string | null, created: string | null, reason: string) => {
        console.error(`stripe event ${key} (${type ?? 'no type'}) ignored: ${reason}`)
        const { data, error } = await db.rpc('record_ignored_stripe_event', {
          event_key: key,
          event_type: type,
          event_created: created,
          reason: storableText(reason, 2000),
        })
        if (error) throw webhookDbFailure(error, `stripe event ${key}: recording it as ignored`)
        return reply(data as 'ignored' | 'replay', reason)
      }

      const plan = await planStripeEvent(raw)
      if (plan.action === 'skip') return reply('ignored')
      if (plan.action === 'ignore') return await ignore(plan.key, plan.type, plan.created, plan.reason)
      const { event } = plan
      // The state to store is Stripe's latest, not the event's copy (which may be older than
      // another event's, and events of one second cannot be ordered by their own fields).
      const latest = await latestSubscription(requireStripe(), plan.subscriptionId)
      if ('missing' in latest) return await ignore(event.id, event.type, event.created, latest.missing)
      const details = { ...latest.state, user_id: plan.claimedUserId ?? latest.state.user_id }
      const { data, error, status } = await db.rpc('apply_stripe_event', {
        event_id: event.id,
        event_type: event.type,
        event_created: event.created,
        details,
      })
      if (error && refusedAsBadData(error, status)) {
        return await ignore(event.id, event.type, event.created, error.message)
      }
      // Stripe retries any non-2xx; the function's transaction left nothing behind.
      if (error) throw webhookDbFailure(error, `stripe event ${event.id} (${event.type}) not applied`)
      console.log(`stripe event ${event.id} ${event.type}: ${data}`)
      return reply(data as 'applied' | 'stale' | 'ignored' | 'replay')
    },
  )
