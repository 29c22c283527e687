// A local server that speaks the part of Resend's HTTP API the e-mail code uses: POST /emails
// and POST /emails/batch (up to 100; x-batch-validation strict fails the request on an invalid
// message, permissive sends the rest and lists the refused ones as errors [{index, message}])
// (bearer key, JSON, Idempotency-Key as Resend keeps it: same key and body answer the first
// reply again without sending; same key with another body 409 invalid_idempotent_request; same
// key while the first is in flight 409 concurrent_idempotent_requests) and GET
// /emails/receiving/:id (an inbound e-mail with its body). Errors use Resend's body
// {statusCode, name, message}; 429 carries Retry-After.
//
// Control (tests only, steered per recipient address so test files do not interfere):
//   GET  /__control/sent?to=<address>          e-mails accepted for that address
//   POST /__control/fail {to, status, name?, message?, times?}  the next sends to it fail (422:
//                                              that message is invalid; others: the whole request)
//   POST /__control/inbound {id, from, to, subject, text, html}  an inbound e-mail to serve
const rand = () => crypto.randomUUID()

interface Sent {
  id: string
  from: string
  to: string[]
  subject: string
  html?: string
  text?: string
  idempotency_key: string | null
  headers?: Record<string, string>
  /** Which batch request carried it (numbered from 0), null for POST /emails. */
  batch: number | null
}

export function start(): Promise<{ env: Record<string, string>; stop(): Promise<void> }> {
  const key = `re_test_${rand().replace(/-/g, '')}`
  // Svix secrets are whsec_ + base64 of the key bytes.
  const webhookSecret = `whsec_${btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(24))))}`
  const sent: Sent[] = []
  const idempotent = new Map<string, { body: string; reply?: unknown }>()
  let requests = 0 // numbers the batch requests
  const failures = new Map<string, { status: number; name: string; message: string; times: number }>()
  const inbound = new Map<string, Record<string, unknown>>()

  const error = (statusCode: number, name: string, message: string, headers: Record<string, string> = {}) =>
    Response.json({ statusCode, name, message }, { status: statusCode, headers })

  const server = Deno.serve({ hostname: '127.0.0.1', port: 0, onListen: () => {} }, async (req) => {
    const url = new URL(req.url)
    if (url.pathname.startsWith('/__control/')) {
      if (req.method === 'GET' && url.pathname === '/__control/sent') {
        const to = url.searchParams.get('to')?.toLowerCase()
        return Response.json(sent.filter((m) => m.to.some((t) => t.toLowerCase() === to)))
      }
      const body = await req.json()
      if (url.pathname === '/__control/fail') {
        failures.set(String(body.to).toLowerCase(), {
          status: body.status,
          name: body.name ?? 'application_error',
          message: body.message ?? 'Internal server error',
          times: body.times ?? 1,
        })
        return Response.json({ ok: true })
      }
      if (url.pathname === '/__control/inbound') {
        inbound.set(body.id, { object: 'email', created_at: new Date().toISOString(), ...body })
        return Response.json({ ok: true })
      }
      return Response.json({ error: 'unknown control' }, { status: 404 })
    }

    const auth = req.headers.get('authorization')
    if (!auth) return error(401, 'missing_api_key', 'Missing API key in the authorization header.')
    if (auth !== `Bearer ${key}`) return error(403, 'invalid_api_key', 'API key is invalid')

    const received = url.pathname.match(/^\/emails\/receiving\/([^/]+)$/)
    if (req.method === 'GET' && received) {
      const mail = inbound.get(decodeURIComponent(received[1]))
      return mail ? Response.json(mail) : error(404, 'not_found', 'Email not found')
    }
    if (req.method !== 'POST' || (url.pathname !== '/emails' && url.pathname !== '/emails/batch')) {
      return error(404, 'not_found', 'The requested endpoint does not exist.')
    }
    const batch = url.pathname === '/emails/batch'

    const raw = await req.text()
    let body: any
    try {
      body = JSON.parse(raw)
    } catch {
      return error(400, 'invalid_json', 'Invalid JSON body')
    }
    const messages: Record<string, any>[] = batch ? body : [body]
    if (batch && (!Array.isArray(body) || body.length === 0 || body.length > 100)) {
      return error(422, 'validation_error', 'The batch must hold 1 to 100 emails.')
    }
    const permissive = batch && req.headers.get('x-batch-validation') === 'permissive'
    // A message's validation error (Resend's 422), or null.
    const invalid = (m: Record<string, any>): string | null => {
      const to: string[] = Array.isArray(m.to) ? m.to : m.to ? [m.to] : []
      for (const field of ['from', 'subject'] as const) {
        if (typeof m[field] !== 'string' || !m[field]) return `The \`${field}\` field is required.`
      }
      if (!to.length) return 'The `to` field is required.'
      if (!m.html && !m.text) return 'Either `html` or `text` must be provided.'
      const failure = failures.get(to[0].toLowerCase())
      if (failure?.status === 422 && failure.times > 0) {
        failure.times--
        return failure.message
      }
      return null
    }
    const refused: { index: number; message: string }[] = []
    for (const [index, m] of messages.entries()) {
      const why = invalid(m)
      if (why && !permissive) return error(422, 'validation_error', batch ? `emails[${index}]: ${why}` : why)
      if (why) refused.push({ index, message: why })
    }

    // Other failures steered for a recipient fail the whole request (a 429 or 5xx is the request's).
    for (const m of messages) {
      const to: string[] = Array.isArray(m.to) ? m.to : [m.to]
      const failure = failures.get(String(to[0]).toLowerCase())
      if (failure && failure.status !== 422 && failure.times > 0) {
        failure.times--
        return error(
          failure.status,
          failure.name,
          failure.message,
          failure.status === 429 ? { 'retry-after': '1' } : {},
        )
      }
    }

    const idemKey = req.headers.get('idempotency-key')
    if (idemKey) {
      const seen = idempotent.get(idemKey)
      if (seen && seen.body !== raw) {
        return error(
          409,
          'invalid_idempotent_request',
          'Same idempotency key used with a different request payload.',
        )
      }
      if (seen && !seen.reply) {
        return error(
          409,
          'concurrent_idempotent_requests',
          'Same idempotency key used while original request is still in progress.',
        )
      }
      if (seen?.reply) return Response.json(seen.reply)
      idempotent.set(idemKey, { body: raw })
    }
    await new Promise((r) => setTimeout(r, 20))
    const ids: { id: string }[] = []
    for (const [index, m] of messages.entries()) {
      if (refused.some((r) => r.index === index)) continue
      const id = rand()
      ids.push({ id })
      sent.push({
        id,
        from: m.from,
        to: Array.isArray(m.to) ? m.to : [m.to],
        subject: m.subject,
        html: m.html,
        text: m.text,
        idempotency_key: idemKey,
        headers: m.headers,
        batch: batch ? requests : null,
      })
    }
    const reply = batch ? { data: ids, ...(permissive ? { errors: refused } : {}) } : ids[0]
    requests++
    if (idemKey) idempotent.get(idemKey)!.reply = reply
    return Response.json(reply)
  })

  return Promise.resolve({
    env: {
      RESEND_API_KEY: key,
      RESEND_BASE_URL: `http://127.0.0.1:${server.addr.port}`,
      RESEND_WEBHOOK_SECRET: webhookSecret,
      EMAIL_FROM: 'Journal <journal@mail.journal.test>',
    },
    stop: () => server.shutdown(),
  })
}
