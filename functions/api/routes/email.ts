// E-mail out and in (SPEC "Goals, profile, email", "Payments and email webhooks"), via Resend.
// Sending is not an open relay: public.begin_email_send decides, as the caller, whether the
// recipient is allowed (ordinary users: only their own verified address; super admins: anyone),
// whether the address is suppressed, and whether the daily cap is reached; it also logs the
// send. The webhook stores each provider event once by svix-id and suppresses bounced and
// complained addresses.
import { z } from '@hono/zod-openapi'
import { serviceDb } from '../../_shared/db.ts'
import {
  fromResend,
  inboundBody,
  planEmailEvent,
  rawPayload,
  requireResend,
  sendEmail,
  svixHeaders,
  verifySvixSignature,
} from '../../_shared/email.ts'
import { optionalEnv } from '../../_shared/env.ts'
import { badRequest, HttpError, unavailable, unwrap } from '../../_shared/errors.ts'
import { newestFirstPage, pageQuery } from '../../_shared/pagination.ts'
import { refusedAsBadData, storableText, webhookDbFailure } from '../../_shared/webhooks.ts'
import { endpoint, NextCursor, routeModule } from '../openapi.ts'

export const EMAIL_LIMITS = { subject: 500, html: 200_000, text: 100_000, idempotencyKey: 200 }

const SendRequest = z.object({
  to: z.email().max(320),
  subject: z.string().trim().min(1).max(EMAIL_LIMITS.subject).regex(/^[^\r\n]*$/, 'must be one line'),
  html: z.string().max(EMAIL_LIMITS.html).optional(),
  text: z.string().max(EMAIL_LIMITS.text).optional(),
}).strict().superRefine((b, ctx) => {
  if (!b.html?.trim() && !b.text?.trim()) {
    ctx.addIssue({ code: 'custom', path: ['text'], message: 'html or text is required' })
  }
}).openapi('EmailSendRequest')

const EmailMessage = z.object({
  id: z.string(),
  user_id: z.string(),
  to_address: z.string(),
  subject: z.string(),
  provider_id: z.string().nullable(),
  status: z.enum(['sending', 'sent', 'failed', 'delivery_delayed', 'delivered', 'bounced', 'complained']),
  error: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
}).openapi('EmailMessage')
type EmailMessageRow = z.infer<typeof EmailMessage>

const COLUMNS = 'id, user_id, to_address, subject, provider_id, status, error, created_at, updated_at'
/** The documented fields of a row; its status is one the table's check constraint allows. */
const shape = (m: Omit<EmailMessageRow, 'status'> & { status: string }): EmailMessageRow => ({
  id: m.id,
  user_id: m.user_id,
  to_address: m.to_address,
  subject: m.subject,
  provider_id: m.provider_id,
  status: m.status as EmailMessageRow['status'],
  error: m.error,
  created_at: m.created_at,
  updated_at: m.updated_at,
})

/** The client's Idempotency-Key (printable ASCII), or a fresh one for a request without it. */
function idempotencyKey(header: string | undefined): string {
  if (header === undefined) return crypto.randomUUID()
  if (!/^[\x21-\x7e]{1,200}$/.test(header)) {
    throw badRequest(`Idempotency-Key: must be 1..${EMAIL_LIMITS.idempotencyKey} printable ASCII characters`)
  }
  return header
}

async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text))
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, '0')).join('')
}

const tag = 'E-mail'

export const emailRoutes = routeModule()
  .openapi(
    endpoint({
      method: 'post',
      path: '/email/send',
      tag,
      auth: 'bearer',
      body: SendRequest,
      summary: 'Send an e-mail (to yourself; super admins to anyone)',
      description: 'Ordinary users may send only to their own verified address; super admins to anyone. ' +
        'At most the daily cap (default 20) per user in any 24 hours (429). Suppressed (bounced/complained) ' +
        'addresses: 422. An optional Idempotency-Key header makes a retried request return the first result ' +
        'instead of sending again (409 if reused for a different e-mail). 503 when RESEND_API_KEY or EMAIL_FROM is not set.',
      response: z.object({ message: z.string(), email: EmailMessage }),
      errors: [403, 409, 422, 429, 502],
      idempotencyKey:
        '1..200 printable ASCII characters. A retry with the same key returns the first result instead ' +
        'of sending again; the same key for a different e-mail is 409.',
    }),
    async (c) => {
      const mail = c.req.valid('json')
      const key = idempotencyKey(c.req.header('idempotency-key'))
      requireResend()
      const hash = await sha256(
        JSON.stringify([mail.to.toLowerCase(), mail.subject, mail.html ?? null, mail.text ?? null]),
      )
      const begun = unwrap(
        await c.var.db.rpc('begin_email_send', {
          to_address: mail.to,
          subject: mail.subject,
          idempotency_key: key,
          request_hash: hash,
        }).single(),
      )
      const logged = begun.message
      if (begun.existing && logged.status !== 'sending' && logged.status !== 'failed') {
        return c.json({ message: 'Already sent (same Idempotency-Key)', email: shape(logged) })
      }
      // Only ever to the logged address, which the database checked against the recipient rule
      // (a retried key was matched to it there), never to an address taken from this request alone.
      const sent = await sendEmail({ ...mail, to: logged.to_address }, `${c.var.caller.id}:${key}`)
      const finish = (provider_id: string | null, status: 'sent' | 'failed', error: string | null) =>
        serviceDb().rpc('finish_email_send', { message_id: logged.id, provider_id, status, error }).single()
      if ('error' in sent && sent.error.name === 'concurrent_idempotent_requests') {
        // The same request is being sent right now (a client retry overlapping the first try).
        throw new HttpError(409, 'Idempotency-Key: the same e-mail is being sent right now; retry shortly')
      }
      if ('error' in sent) {
        const { error } = await finish(
          null,
          'failed',
          sent.error.message ?? sent.error.name ?? 'provider error',
        )
        if (error) console.error(`e-mail ${logged.id}: could not log the failure`, error)
        throw fromResend(sent.error)
      }
      const { data, error } = await finish(sent.id, 'sent', null)
      if (error) {
        // Sent, but the log could not be updated: say so rather than invite a second send.
        console.error(`e-mail ${logged.id} sent as ${sent.id}, log not updated`, error)
        return c.json({
          message: 'E-mail sent',
          email: shape({ ...logged, provider_id: sent.id, status: 'sent' }),
        })
      }
      return c.json({ message: 'E-mail sent', email: shape(data) })
    },
  )
  .openapi(
    endpoint({
      method: 'get',
      path: '/email/messages',
      tag,
      auth: 'bearer',
      query: z.object(pageQuery).strict(),
      summary: "The caller's sent e-mail, newest first",
      response: z.object({ messages: z.array(EmailMessage), next_cursor: NextCursor }),
    }),
    async (c) => {
      const q = c.req.valid('query')
      const query = c.var.db.from('email_messages').select(COLUMNS).eq('user_id', c.var.caller.id)
      const { items, next_cursor } = await newestFirstPage(query, q)
      return c.json({ messages: items.map(shape), next_cursor })
    },
  )
  .openapi(
    endpoint({
      method: 'post',
      path: '/email/webhook',
      tag,
      auth: { signature: 'svix' },
      summary: 'Resend events (Svix-signed): delivery, bounces, complaints, inbound mail',
      description:
        'The body is a Resend webhook event, verified with RESEND_WEBHOOK_SECRET over the raw body and the ' +
        'svix-id/svix-timestamp/svix-signature headers (±5 minutes) before it is parsed. Each event is stored once by ' +
        'svix-id; bounced (not transient) and complained recipients are suppressed; email.received is stored with its ' +
        'body fetched from Resend. A signed event that cannot be applied (malformed, a value the database refuses) is ' +
        'recorded with its payload and answered 200 `ignored` with the reason, so Resend does not retry it. ' +
        'Missing/bad/stale signature: 400. 502 when an inbound body cannot be fetched, 503 when the database is ' +
        'unavailable or RESEND_WEBHOOK_SECRET is not set (Resend retries).',
      response: z.object({
        received: z.literal(true),
        outcome: z.enum(['stored', 'ignored', 'replay']),
        reason: z.string().optional().openapi({ description: 'Why an event was ignored' }),
      }),
      errors: [400, 502],
    }),
    async (c) => {
      const raw = await c.req.text()
      const headers = svixHeaders((n) => c.req.header(n))
      if (!headers) throw badRequest('svix-id, svix-timestamp, svix-signature: headers are required')
      if (headers['svix-id'].length > 255) throw badRequest('svix-id: at most 255 characters')
      const secret = optionalEnv('RESEND_WEBHOOK_SECRET')
      if (!secret) {
        throw unavailable('The e-mail webhook is not configured (RESEND_WEBHOOK_SECRET is not set)')
      }
      try {
        verifySvixSignature(raw, headers, secret)
      } catch (e) {
        throw badRequest(`svix-signature: ${e instanceof Error ? e.message : 'verification failed'}`)
      }
      const svixId = headers['svix-id']
      const db = serviceDb()
      const reply = (outcome: 'stored' | 'ignored' | 'replay', reason?: string) =>
        c.json({ received: true as const, outcome, ...(reason ? { reason } : {}) })
      /** Records the event as ignored, with the payload as received (nothing Resend sent is lost). */
      const ignore = async (type: string | null, payload: unknown, reason: string) => {
        console.error(`resend event ${svixId} (${type ?? 'no type'}) ignored: ${reason}`)
        const record = (payload: unknown, reason: string) =>
          db.rpc('record_ignored_email_event', {
            svix_id: svixId,
            event_type: type,
            payload,
            reason: storableText(reason, 2000),
          })
        let { data, error, status } = await record(payload, reason)
        if (error && refusedAsBadData(error, status)) {
          // The payload itself refused: keep the raw text instead, and say why.
          ;({ data, error, status } = await record(
            rawPayload(raw),
            `${reason} (payload kept as text: ${error.message})`,
          ))
        }
        if (error) throw webhookDbFailure(error, `resend event ${svixId}: recording it as ignored`)
        return reply(data as 'ignored' | 'replay', reason)
      }

      const plan = planEmailEvent(raw)
      if (plan.action === 'ignore') return await ignore(plan.type, plan.payload, plan.reason)
      // Inbound events carry metadata only; the body is fetched (a failure answers 502: Resend retries).
      const inbound = plan.inboundEmailId ? await inboundBody(plan.inboundEmailId) : null
      const { data: outcome, error, status } = await db.rpc('record_email_event', {
        svix_id: svixId,
        payload: plan.event,
        inbound,
      })
      if (error && refusedAsBadData(error, status)) return await ignore(plan.type, plan.event, error.message)
      if (error) throw webhookDbFailure(error, `resend event ${svixId} not stored`)
      return reply(outcome as 'stored' | 'replay')
    },
  )
