// Resend (e-mail out and in), through the official SDK. The SDK does not throw on API errors:
// every call returns {data, error}, and every call site here checks `error`.
//
// Configuration: RESEND_API_KEY, EMAIL_FROM (the sender, e.g. "Journal <hello@example.com>"),
// RESEND_BASE_URL (the SDK's own variable; tests point it at a local server), and
// RESEND_WEBHOOK_SECRET (whsec_...: the Svix signing secret of the webhook endpoint).
import { Resend } from 'resend'
import { Webhook } from 'svix'
import { optionalEnv } from './env.ts'
import { HttpError, unavailable } from './errors.ts'

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
  return new HttpError(502, `The e-mail provider refused the message${error.message ? `: ${error.message}` : ''}`)
}

export interface OutgoingEmail {
  to: string
  subject: string
  html?: string
  text?: string
}

/** Sends one e-mail; the idempotency key makes a retry of the same request a no-op at Resend. */
export async function sendEmail(
  mail: OutgoingEmail,
  idempotencyKey: string,
): Promise<{ id: string } | { error: ResendFailure }> {
  const { resend, from } = requireResend()
  const payload = { from, to: [mail.to], subject: mail.subject, ...(mail.html ? { html: mail.html } : {}), ...(mail.text ? { text: mail.text } : {}) }
  const { data, error } = await resend.emails.send(payload as Parameters<typeof resend.emails.send>[0], { idempotencyKey })
  if (error) return { error }
  if (!data?.id) return { error: { name: 'application_error', message: 'no message id in the reply', statusCode: 502 } }
  return { id: data.id }
}

/** The body of an inbound e-mail (webhook events carry metadata only), or null without a key. */
export async function inboundBody(emailId: string): Promise<{ text: string | null; html: string | null } | null> {
  const client = resendClient()
  if (!client) return null
  const { data, error } = await client.resend.emails.receiving.get(emailId)
  if (error) throw fromResend(error)
  return { text: data?.text ?? null, html: data?.html ?? null }
}

/** Svix's headers: all three present, or null. */
export function svixHeaders(get: (name: string) => string | undefined) {
  const id = get('svix-id'), timestamp = get('svix-timestamp'), signature = get('svix-signature')
  return id && timestamp && signature ? { 'svix-id': id, 'svix-timestamp': timestamp, 'svix-signature': signature } : null
}

/**
 * Verifies a Resend webhook (Svix signature over id, timestamp and raw body; ±5 minutes) and
 * only then parses it. svix 2.x's verify() returns nothing, so the body is parsed here.
 */
export function verifiedEmailEvent(rawBody: string, headers: Record<string, string>, secret: string): Record<string, unknown> {
  new Webhook(secret).verify(rawBody, headers)
  const parsed = JSON.parse(rawBody)
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed) || typeof parsed.type !== 'string') {
    throw new Error('not a Resend event')
  }
  return parsed
}
