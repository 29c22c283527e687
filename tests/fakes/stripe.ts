// A local server that speaks the part of Stripe's HTTP API the payment code uses: form-encoded
// POST /v1/customers and /v1/checkout/sessions and GET /v1/subscriptions/:id (the webhook reads
// Stripe's current state) with bearer keys, Stripe's error bodies
// ({error: {type, code, param, message}}), 401 for a wrong key, idempotency keys as Stripe keeps
// them (same key and parameters: the first answer again; same key while the first request is
// in flight: 409, which the SDK retries; same key, other parameters: 400).
//
// Control (tests only, steered per user id so test files do not interfere):
//   GET  /__control/customers?user_id=<uuid>   customers whose metadata.user_id is that user
//   GET  /__control/sessions?user_id=<uuid>    checkout sessions made for that user, with the
//                                              parameters received and the Stripe-Version header
//   POST /__control/fail {user_id, status, type?, message?, times?, retry_after?}
//        the next `times` (default 1) API requests for that user answer with that error
//   POST /__control/slow {user_id, ms}         requests for that user answer after `ms`
//   POST /__control/delete-customer {id}       the customer is gone (as if deleted in the dashboard)
//   POST /__control/subscription {object}      Stripe's current state of a subscription (as the API returns it)
//   GET  /__control/retrievals?subscription_id=<id>  how many times it was retrieved
//   POST /__control/fail {subscription_id, status, type?, message?, times?}, /__control/slow
//        {subscription_id, ms}: the same for retrievals of that subscription
const PRICES = new Set(['price_premium_monthly', 'price_premium_yearly'])

interface Failure {
  status: number
  type: string
  message: string
  times: number
  retryAfter?: number
}

type Params = Record<string, unknown>

/** Stripe's form encoding (a[b][0][c]=v) back into nested objects. */
function decodeForm(body: string): Params {
  const out: Params = {}
  for (const [key, value] of new URLSearchParams(body)) {
    const path = key.replace(/\]/g, '').split('[')
    let node: any = out
    path.forEach((part, i) => {
      if (i === path.length - 1) node[part] = value
      else node = node[part] ??= /^\d+$/.test(path[i + 1]) ? [] : {}
    })
  }
  return out
}

const rand = () => crypto.randomUUID().replace(/-/g, '').slice(0, 24)

export function start(): Promise<{ env: Record<string, string>; stop(): Promise<void> }> {
  const key = `sk_test_fake_${rand()}`
  const webhookSecret = `whsec_test_${rand()}`
  const customers = new Map<string, Params>()
  const sessions: (Params & { user_id?: string; stripe_version: string | null })[] = []
  const idempotent = new Map<string, { params: string; answer?: { status: number; body: unknown } }>()
  const failures = new Map<string, Failure>()
  const slow = new Map<string, number>()
  const subscriptions = new Map<string, Params>()
  const retrievals = new Map<string, number>()
  /** DELETE requests answered (subscription cancellations, customer deletions), in order. */
  const deletions: { path: string; status: number }[] = []

  const error = (
    status: number,
    type: string,
    message: string,
    extra: Params = {},
    headers: Record<string, string> = {},
  ) =>
    Response.json({ error: { type, message, ...extra } }, {
      status,
      headers: { 'request-id': `req_${rand()}`, ...headers },
    })

  function create(path: string, params: Params, version: string | null): { status: number; body: unknown } {
    if (path === '/v1/customers') {
      const customer = {
        id: `cus_${rand()}`,
        object: 'customer',
        email: params.email ?? null,
        metadata: params.metadata ?? {},
        created: Math.floor(Date.now() / 1000),
      }
      customers.set(customer.id, customer)
      return { status: 200, body: customer }
    }
    if (path === '/v1/checkout/sessions') {
      const items = (params.line_items ?? []) as { price?: string; quantity?: string }[]
      const missing = (param: string) => ({
        status: 400,
        body: {
          error: {
            type: 'invalid_request_error',
            code: 'parameter_missing',
            param,
            message: `Missing required param: ${param}.`,
          },
        },
      })
      if (params.mode !== 'subscription' && params.mode !== 'payment') return missing('mode')
      if (!params.success_url) return missing('success_url')
      if (!items.length) return missing('line_items')
      if (!PRICES.has(items[0].price ?? '')) {
        return {
          status: 400,
          body: {
            error: {
              type: 'invalid_request_error',
              code: 'resource_missing',
              param: 'line_items[0][price]',
              message: `No such price: '${items[0].price}'`,
            },
          },
        }
      }
      if (params.customer && !customers.has(String(params.customer))) {
        return {
          status: 400,
          body: {
            error: {
              type: 'invalid_request_error',
              code: 'resource_missing',
              param: 'customer',
              message: `No such customer: '${params.customer}'`,
            },
          },
        }
      }
      const id = `cs_test_${rand()}`
      const session = {
        id,
        object: 'checkout.session',
        mode: params.mode,
        customer: params.customer ?? null,
        client_reference_id: params.client_reference_id ?? null,
        metadata: params.metadata ?? {},
        success_url: params.success_url,
        cancel_url: params.cancel_url ?? null,
        payment_status: 'unpaid',
        status: 'open',
        subscription: null,
        url: `https://checkout.stripe.test/c/pay/${id}`,
      }
      const user = (params.metadata as Params | undefined)?.user_id as string | undefined
      sessions.push({ ...session, params, user_id: user, stripe_version: version })
      return { status: 200, body: session }
    }
    return {
      status: 404,
      body: {
        error: { type: 'invalid_request_error', message: `Unrecognized request URL (POST: ${path}).` },
      },
    }
  }

  const server = Deno.serve({ hostname: '127.0.0.1', port: 0, onListen: () => {} }, async (req) => {
    const url = new URL(req.url)
    if (url.pathname.startsWith('/__control/')) {
      const user = url.searchParams.get('user_id')
      if (req.method === 'GET' && url.pathname === '/__control/customers') {
        return Response.json([...customers.values()].filter((c) => (c.metadata as Params)?.user_id === user))
      }
      if (req.method === 'GET' && url.pathname === '/__control/sessions') {
        return Response.json(sessions.filter((s) => s.user_id === user))
      }
      if (req.method === 'GET' && url.pathname === '/__control/deletions') {
        return Response.json(deletions)
      }
      if (req.method === 'GET' && url.pathname === '/__control/retrievals') {
        return Response.json({ count: retrievals.get(url.searchParams.get('subscription_id') ?? '') ?? 0 })
      }
      const body = await req.json()
      if (url.pathname === '/__control/subscription') {
        subscriptions.set(body.object.id, { object: 'subscription', ...body.object })
        return Response.json({ ok: true })
      }
      if (url.pathname === '/__control/fail') {
        failures.set(body.subscription_id ?? body.user_id, {
          status: body.status,
          type: body.type ?? 'api_error',
          message: body.message ?? "Something went wrong on Stripe's end.",
          times: body.times ?? 1,
          retryAfter: body.retry_after,
        })
        return Response.json({ ok: true })
      }
      if (url.pathname === '/__control/delete-customer') {
        customers.delete(body.id)
        return Response.json({ ok: true })
      }
      if (url.pathname === '/__control/slow') {
        slow.set(body.subscription_id ?? body.user_id, body.ms)
        return Response.json({ ok: true })
      }
      return Response.json({ error: 'unknown control' }, { status: 404 })
    }

    if (req.headers.get('authorization') !== `Bearer ${key}`) {
      return error(
        401,
        'invalid_request_error',
        'Invalid API Key provided: ' + (req.headers.get('authorization') ?? '').slice(7, 15) + '****',
      )
    }
    const retrieve = url.pathname.match(/^\/v1\/subscriptions\/([^/]+)$/)
    if (req.method === 'GET' && retrieve) {
      const id = decodeURIComponent(retrieve[1])
      retrievals.set(id, (retrievals.get(id) ?? 0) + 1)
      if (slow.has(id)) await new Promise((r) => setTimeout(r, slow.get(id)))
      const failure = failures.get(id)
      if (failure && failure.times > 0) {
        failure.times--
        // Unlike the POST failures, the SDK may retry these (as it would Stripe's): a 429 or 5xx
        // configured once is one failed attempt; `times` covers the retry too.
        return error(failure.status, failure.type, failure.message)
      }
      const sub = subscriptions.get(id)
      if (!sub) {
        return error(404, 'invalid_request_error', `No such subscription: '${id}'`, {
          code: 'resource_missing',
          param: 'id',
        })
      }
      return Response.json(sub, { headers: { 'request-id': `req_${rand()}` } })
    }
    // Cancelling a subscription (DELETE /v1/subscriptions/:id) and deleting a customer
    // (DELETE /v1/customers/:id): a second time answers 404 resource_missing, as Stripe does for
    // a deleted customer (a cancelled subscription answers 400 there; the client treats both as done).
    const removal = url.pathname.match(/^\/v1\/(subscriptions|customers)\/([^/]+)$/)
    if (req.method === 'DELETE' && removal) {
      const [, kind, rawId] = removal
      const id = decodeURIComponent(rawId)
      const failure = failures.get(id)
      if (failure && failure.times > 0) {
        failure.times--
        deletions.push({ path: url.pathname, status: failure.status })
        const headers: Record<string, string> = failure.retryAfter
          ? { 'retry-after': String(failure.retryAfter) }
          : {}
        return error(failure.status, failure.type, failure.message, {}, headers)
      }
      const store = kind === 'customers' ? customers : subscriptions
      const found = store.get(id)
      if (!found || found.deleted || found.status === 'canceled') {
        deletions.push({ path: url.pathname, status: 404 })
        const noun = kind === 'customers' ? 'customer' : 'subscription'
        return error(404, 'invalid_request_error', `No such ${noun}: '${id}'`, {
          code: 'resource_missing',
          param: 'id',
        })
      }
      deletions.push({ path: url.pathname, status: 200 })
      if (kind === 'customers') {
        customers.set(id, { ...found, deleted: true })
        return Response.json({ id, object: 'customer', deleted: true })
      }
      const cancelled = { ...found, status: 'canceled', canceled_at: Math.floor(Date.now() / 1000) }
      subscriptions.set(id, cancelled)
      return Response.json(cancelled)
    }
    if (req.method !== 'POST') {
      return error(404, 'invalid_request_error', `Unrecognized request URL (${req.method}: ${url.pathname}).`)
    }
    const raw = await req.text()
    const params = decodeForm(raw)
    const user = ((params.metadata as Params | undefined)?.user_id ?? params.client_reference_id) as
      | string
      | undefined

    if (user && slow.has(user)) await new Promise((r) => setTimeout(r, slow.get(user)))
    const failure = user ? failures.get(user) : undefined
    if (failure && failure.times > 0) {
      failure.times--
      const headers: Record<string, string> = failure.retryAfter !== undefined
        ? { 'retry-after': String(failure.retryAfter) }
        : {}
      // Tell the SDK not to retry, so one configured failure is one failed call.
      return error(failure.status, failure.type, failure.message, {}, {
        ...headers,
        'stripe-should-retry': 'false',
      })
    }

    const idemKey = req.headers.get('idempotency-key')
    const version = req.headers.get('stripe-version')
    if (!idemKey) {
      const answer = create(url.pathname, params, version)
      return Response.json(answer.body, { status: answer.status })
    }
    const scoped = `${url.pathname} ${idemKey}`
    const seen = idempotent.get(scoped)
    if (seen && seen.params !== raw) {
      return error(
        400,
        'idempotency_error',
        `Keys for idempotent requests can only be used with the same parameters they were first used with.`,
      )
    }
    if (seen && !seen.answer) {
      return error(
        409,
        'idempotency_error',
        'There is currently another in-progress request using this Idempotent Key (that probably means you submitted twice, and the other request is still going through): ' +
          idemKey + '. Please try again later.',
      )
    }
    if (seen?.answer) {
      return Response.json(seen.answer.body, {
        status: seen.answer.status,
        headers: { 'idempotent-replayed': 'true' },
      })
    }
    const entry: { params: string; answer?: { status: number; body: unknown } } = { params: raw }
    idempotent.set(scoped, entry)
    // Stripe takes a moment to create things; long enough for concurrent first calls to overlap.
    await new Promise((r) => setTimeout(r, 150))
    entry.answer = create(url.pathname, params, version)
    return Response.json(entry.answer.body, { status: entry.answer.status })
  })

  return Promise.resolve({
    env: {
      STRIPE_SECRET_KEY: key,
      STRIPE_WEBHOOK_SECRET: webhookSecret,
      STRIPE_API_BASE: `http://127.0.0.1:${server.addr.port}`,
      // The prices the site sells (the last one is on the list but unknown to Stripe).
      STRIPE_PRICE_IDS: 'price_premium_monthly,price_premium_yearly,price_does_not_exist',
      // The site checkout may redirect back to (the payment endpoint's origin rule).
      SITE_URL: 'http://127.0.0.1:3000,https://app.journal.test',
    },
    stop: () => server.shutdown(),
  })
}
