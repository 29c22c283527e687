// Resend (e-mail out and in), through the official SDK. The SDK does not throw on API errors:
// every call returns {data, error}, and every call site here checks `error`.
//
// Configuration: RESEND_API_KEY, EMAIL_FROM (the sender, e.g. "Journal <hello@example.com>"),
// RESEND_BASE_URL (the SDK's own variable; tests point it at a local server), and
// RESEND_WEBHOOK_SECRET (whsec_...: the Svix signing secret of the webhook endpoint).
import { Resend } from 'resend'
import { Webhook } from 'svix'
import { z } from 'zod'
import { optionalEnv } from './env.ts'
import { HttpError, unavailable } from './errors.ts'
import { storableText } from './webhooks.ts'

let cached: { key: string; base: string | undefined; client: Resend } | undefined

/** A Resend client and the sender address, or null when either is not configured. */
export function resendClient(): { resend: Resend; from: string } | null {
  const key = optionalEnv('RESEND_API_KEY')
  const from = optionalEnv('EMAIL_FROM')
  if (!key || !from) return null
  const base = optionalEnv('RESEND_BASE_URL')
  if (cached?.key !== key || cached.base !== base) {
    cached = { key, base, client: new Resend(key, base ? { baseUrl: base } : undefined) }
  }
  return { resend: cached.client, from }
}

export function requireResend(): { resend: Resend; from: string } {
  const client = resendClient()
  if (!client) throw unavailable('E-mail is not configured (RESEND_API_KEY and EMAIL_FROM must be set)')
  return client
}

export interface ResendFailure {
  name?: string
  message?: string
  statusCode?: number | null
}

/** A Resend error as the caller's reply: the provider's limit 503, anything else 502. */
export function fromResend(error: ResendFailure): HttpError {
  console.error(`resend ${error.statusCode ?? 'network'} ${error.name ?? ''}: ${error.message ?? ''}`)
  if (error.statusCode === 429) return unavailable('The e-mail provider is busy; try again shortly')
  return new HttpError(
    502,
    `The e-mail provider refused the message${error.message ? `: ${error.message}` : ''}`,
  )
}

export interface OutgoingEmail {
  to: string
  subject: string
  html?: string
  text?: string
  /** Extra headers (List-Unsubscribe and List-Unsubscribe-Post for the digest). */
  headers?: Record<string, string>
}

/** Sends one e-mail; the idempotency key makes a retry of the same request a no-op at Resend. */
export async function sendEmail(
  mail: OutgoingEmail,
  idempotencyKey: string,
): Promise<{ id: string } | { error: ResendFailure }> {
  const { resend, from } = requireResend()
  const payload = resendPayload(from, mail)
  const { data, error } = await resend.emails.send(payload as Parameters<typeof resend.emails.send>[0], {
    idempotencyKey,
  })
  if (error) return { error }
  if (!data?.id) {
    return { error: { name: 'application_error', message: 'no message id in the reply', statusCode: 502 } }
  }
  return { id: data.id }
}

/** The payload Resend takes for one message, from ours. */
function resendPayload(from: string, mail: OutgoingEmail) {
  return {
    from,
    to: [mail.to],
    subject: mail.subject,
    ...(mail.html ? { html: mail.html } : {}),
    ...(mail.text ? { text: mail.text } : {}),
    ...(mail.headers ? { headers: mail.headers } : {}),
  }
}

/** Resend's batch endpoint takes at most this many messages a request. */
export const EMAIL_BATCH_MAX = 100

/**
 * Sends up to 100 e-mails in one request (Resend's batch endpoint), permissive: the valid ones
 * go out and each refused one comes back by its index. The idempotency key covers the whole
 * request: the same key and messages again (a retry after a lost answer) send nothing twice.
 */
export async function sendEmailBatch(
  mails: OutgoingEmail[],
  idempotencyKey: string,
): Promise<{ ids: (string | null)[]; refused: Map<number, string> } | { error: ResendFailure }> {
  if (mails.length === 0) return { ids: [], refused: new Map() }
  if (mails.length > EMAIL_BATCH_MAX) throw new Error(`at most ${EMAIL_BATCH_MAX} e-mails a batch`)
  const { resend, from } = requireResend()
  const payload = mails.map((m) => resendPayload(from, m)) as Parameters<typeof resend.batch.send>[0]
  const { data, error } = await resend.batch.send(payload, { idempotencyKey, batchValidation: 'permissive' })
  if (error) return { error }
  const refused = new Map((data?.errors ?? []).map((e) => [e.index, e.message] as const))
  // Resend lists the ids of the accepted messages in order, the refused ones left out.
  const accepted = [...(data?.data ?? [])]
  const ids = mails.map((_, i) => (refused.has(i) ? null : accepted.shift()?.id ?? null))
  ids.forEach((id, i) => {
    if (id === null && !refused.has(i)) refused.set(i, 'no message id in the reply')
  })
  return { ids, refused }
}

/**
 * The body of an inbound e-mail (webhook events carry metadata only), or null without a key.
 * Made storable like the event (NUL and lone surrogates replaced): the mail is kept, not lost.
 */
export async function inboundBody(
  emailId: string,
): Promise<{ text: string | null; html: string | null } | null> {
  const client = resendClient()
  if (!client) return null
  const { data, error } = await client.resend.emails.receiving.get(emailId)
  if (error) throw fromResend(error)
  const storable = (v: unknown) => (typeof v === 'string' ? storableText(v) : null)
  return { text: storable(data?.text), html: storable(data?.html) }
}

/** Svix's headers: all three present, or null. */
export function svixHeaders(get: (name: string) => string | undefined) {
  const id = get('svix-id'), timestamp = get('svix-timestamp'), signature = get('svix-signature')
  return id && timestamp && signature
    ? { 'svix-id': id, 'svix-timestamp': timestamp, 'svix-signature': signature }
    : null
}

/**
 * Verifies a Resend webhook's Svix signature (over id, timestamp and raw body; ±5 minutes);
 * throws when it does not hold. The body is parsed only after, by planEmailEvent.
 */
export function verifySvixSignature(rawBody: string, headers: Record<string, string>, secret: string): void {
  new Webhook(secret).verify(rawBody, headers)
}

// ---------------------------------------------------------------------------------------
// The shapes this code reads (zod): only the fields the webhook uses, per event type.
// ---------------------------------------------------------------------------------------

const TIME =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?)?\s*(Z|z|[+-]\d{2}(?::?\d{2})?)?$/

/**
 * A time as Resend writes it (ISO 8601, or Postgres' `2024-02-22 23:41:11.894719+00`): a real
 * calendar date and clock time, from 2000-01-01 to a day from now.
 */
export function isWebhookTime(value: string): boolean {
  const m = TIME.exec(value)
  if (!m) return false
  const [year, month, day, hour = 0, minute = 0, second = 0] = m.slice(1, 7).map((
    p,
  ) => (p === undefined ? undefined : Number(p))) as number[]
  if (month < 1 || month > 12 || day < 1 || day > new Date(Date.UTC(year, month, 0)).getUTCDate()) {
    return false
  }
  if (hour > 23 || minute > 59 || second > 59) return false
  const zone = m[7]
  let offsetMinutes = 0
  if (zone && !/^z$/i.test(zone)) {
    const digits = zone.slice(1).replace(':', '')
    offsetMinutes = (zone[0] === '-' ? -1 : 1) *
      (Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2) || 0))
  }
  const at = Date.UTC(year, month - 1, day, hour, minute, second) - offsetMinutes * 60_000
  return at >= Date.UTC(2000, 0, 1) && at <= Date.now() + 86_400_000
}

const Time = z.string().max(64).refine(isWebhookTime, 'not a valid time (ISO 8601, from 2000 to now)')
const EmailId = z.string().regex(/^[A-Za-z0-9._:@<>+=-]{1,255}$/, 'must be a Resend e-mail id')
const Recipients = z.array(z.string().min(1).max(320)).max(50)

/** Delivery events: the message they are about, its recipients (suppressions), the bounce type. */
const DeliveryData = z.looseObject({
  email_id: EmailId,
  to: Recipients.nullish(),
  bounce: z.looseObject({ type: z.string().max(100).nullish() }).nullish(),
})
const DELIVERY_EVENTS = [
  'email.sent',
  'email.delivered',
  'email.delivery_delayed',
  'email.bounced',
  'email.complained',
  'email.failed',
]

const ReceivedEvent = z.looseObject({
  created_at: Time.nullish(),
  data: z.looseObject({
    // Fetched from Resend by id: only one of Resend's (UUIDs) is worth asking for.
    email_id: z.uuid('must be a Resend e-mail id (a UUID)'),
    from: z.string().min(1).max(1000),
    to: Recipients,
    subject: z.string().max(2000).nullish(),
    created_at: Time.nullish(),
  }),
})

/**
 * How deep an event's objects and arrays may nest (Resend's go about 4 levels). Deeper, the event
 * is ignored and kept as its raw text: copying it would overflow the stack here, and Postgres
 * refuses JSON deeper than its own stack allows.
 */
export const MAX_EVENT_DEPTH = 64

class TooDeep extends Error {}

/**
 * A copy the database can store as jsonb: no NUL character and no lone surrogate, in keys or
 * values. Throws TooDeep past MAX_EVENT_DEPTH levels.
 */
function storableJson(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return storableText(value)
  if (!value || typeof value !== 'object') return value
  if (depth >= MAX_EVENT_DEPTH) throw new TooDeep()
  if (Array.isArray(value)) return value.map((v) => storableJson(v, depth + 1))
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [storableText(k), storableJson(v, depth + 1)]),
  )
}

/** The raw body as the payload of an ignored event (a JSON string), at most 100,000 characters. */
export const rawPayload = (rawBody: string) => storableText(rawBody, 100_000)

const reasonOf = (error: z.ZodError) =>
  error.issues.slice(0, 3).map((i) => `${i.path.map(String).join('.') || 'event'}: ${i.message}`).join('; ')

/** What the webhook does with a verified body. */
export type EmailEventPlan =
  | { action: 'ignore'; type: string | null; payload: unknown; reason: string }
  | { action: 'store'; type: string; event: Record<string, unknown>; inboundEmailId: string | null }

/** Validates a verified body (the fields the webhook uses for its type) and says what to do. */
export function planEmailEvent(rawBody: string): EmailEventPlan {
  let body: unknown
  try {
    body = JSON.parse(rawBody)
  } catch {
    return { action: 'ignore', type: null, payload: rawPayload(rawBody), reason: 'body: not JSON' }
  }
  const fields = (body && typeof body === 'object' && !Array.isArray(body) ? body : null) as
    | Record<string, unknown>
    | null
  const type = typeof fields?.type === 'string' ? storableText(fields.type, 100) : null
  let payload: unknown
  try {
    payload = storableJson(body)
  } catch (e) {
    if (!(e instanceof TooDeep)) throw e
    return {
      action: 'ignore',
      type,
      payload: rawPayload(rawBody),
      reason: `event: nested deeper than ${MAX_EVENT_DEPTH} levels`,
    }
  }
  const ignore = (reason: string): EmailEventPlan => ({ action: 'ignore', type, payload, reason })
  if (!fields) return ignore('event: must be an object')
  if (type === null || !/^[a-z_]+(\.[a-z_]+){1,5}$/.test(type)) return ignore('type: not a Resend event type')
  if (
    fields.data !== undefined && fields.data !== null &&
    (typeof fields.data !== 'object' || Array.isArray(fields.data))
  ) {
    return ignore('data: must be an object')
  }
  if (DELIVERY_EVENTS.includes(type)) {
    const parsed = DeliveryData.safeParse(fields.data ?? {})
    if (!parsed.success) return ignore(`data.${reasonOf(parsed.error)}`)
  }
  if (type === 'email.received') {
    const parsed = ReceivedEvent.safeParse(fields)
    if (!parsed.success) return ignore(reasonOf(parsed.error))
    return {
      action: 'store',
      type,
      event: payload as Record<string, unknown>,
      inboundEmailId: parsed.data.data.email_id,
    }
  }
  return { action: 'store', type, event: payload as Record<string, unknown>, inboundEmailId: null }
}
