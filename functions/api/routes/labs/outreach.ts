// Reaching out: step prompts to users with an unfinished clone, messages to approved sponsors,
// and each sponsor's weekly e-mail digest of the messages sent to them.
import { z } from '@hono/zod-openapi'
import { fromResend, resendClient, sendEmail } from '../../../_shared/email.ts'
import { unavailable, unwrap } from '../../../_shared/errors.ts'
import { newestFirstPage, pageQuery } from '../../../_shared/pagination.ts'
import { idParams } from '../../../_shared/validation.ts'
import { endpoint, NextCursor, routeModule } from '../../openapi.ts'
import { Row, tag, text } from './shared.ts'

const JobResults = z.object({
  total: z.number().int(),
  prompted: z.number().int(),
  skipped: z.number().int(),
  failed: z.number().int(),
  errors: z.array(z.string()),
  remaining: z.number().int(),
})

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`)
function digestEmail(
  d: {
    sponsor_name: string
    contact_name: string
    week_start: string
    messages: Array<{ body: string; sent_at: string }>
  },
) {
  const subject = `${d.messages.length} message${
    d.messages.length === 1 ? '' : 's'
  } for ${d.sponsor_name} this week`
  const text =
    `Hello ${d.contact_name},\n\nMessages sent to ${d.sponsor_name} in the week before ${d.week_start}:\n\n` +
    d.messages.map((m) => `— ${m.sent_at}\n${m.body}`).join('\n\n')
  const html =
    `<p>Hello ${escapeHtml(d.contact_name)},</p><p>Messages sent to ${
      escapeHtml(d.sponsor_name)
    } in the week before ${d.week_start}:</p>` +
    d.messages.map((m) =>
      `<blockquote><small>${escapeHtml(m.sent_at)}</small><br>${escapeHtml(m.body)}</blockquote>`
    ).join('')
  return { subject, text, html }
}

export const outreachRoutes = routeModule()
  .openapi(
    endpoint({
      method: 'post',
      path: '/labs/cron/process-step-prompts',
      tag,
      auth: { cron: 'labs' },
      bodyRequired: false,
      summary:
        'Prompt users with an unfinished clone not prompted in 3 or more days (at most once per user per day)',
      response: z.object({ success: z.literal(true), message: z.string(), results: JobResults }),
    }),
    async (c) => {
      console.log('labs process-step-prompts: start')
      const results = unwrap(await c.var.db.rpc('labs_process_step_prompts', {}))
      console.log(
        `labs process-step-prompts: ${results.prompted} prompted, ${results.failed} failed, ${results.remaining} remaining`,
      )
      return c.json({ success: true as const, message: `${results.prompted} users prompted`, results })
    },
  )
  .openapi(
    endpoint({
      method: 'post',
      path: '/labs/sponsors/{id}/messages',
      tag,
      auth: 'bearer',
      params: idParams('id'),
      status: 201,
      errors: [429],
      body: z.object({ body: text(4000) }).strict(),
      summary:
        'Message an approved sponsor (at most 5 per 24 hours per sponsor); only sender and sponsor read it',
      response: z.object({ message: Row }),
    }),
    async (c) => {
      const row = unwrap(
        await c.var.db.rpc('labs_send_sponsor_message', {
          sponsor_id: c.req.valid('param').id,
          body: c.req.valid('json').body,
        }),
      )
      return c.json({ message: row }, 201)
    },
  )
  .openapi(
    endpoint({
      method: 'get',
      path: '/labs/messages',
      tag,
      auth: 'bearer',
      query: z.object(pageQuery).strict(),
      summary: 'Outreach messages the caller sent or received, newest first',
      response: z.object({ messages: z.array(Row), next_cursor: NextCursor }),
    }),
    async (c) => {
      const { items, next_cursor } = await newestFirstPage(
        c.var.db.from('labs_sponsor_messages').select('*'),
        c.req.valid('query'),
      )
      return c.json({ messages: items, next_cursor })
    },
  )
  .openapi(
    endpoint({
      method: 'post',
      path: '/cron/labs/sponsor-outreach-digest',
      tag,
      auth: { cronBearer: 'frontend' },
      bodyRequired: false,
      summary:
        "E-mail each sponsor the digest of last week's messages, once per sponsor per week (Authorization: Bearer <CRON_SECRET>)",
      description: 'Scheduled Mondays. Without RESEND_API_KEY and EMAIL_FROM: 503 and nothing claimed.',
      response: z.object({
        success: z.literal(true),
        results: z.object({
          total: z.number().int(),
          sent: z.number().int(),
          failed: z.number().int(),
          errors: z.array(z.string()),
        }),
      }),
    }),
    async (c) => {
      if (!resendClient()) {
        throw unavailable('E-mail is not configured (RESEND_API_KEY and EMAIL_FROM must be set)')
      }
      console.log('labs sponsor-outreach-digest: start')
      const results = { total: 0, sent: 0, failed: 0, errors: [] as string[] }
      // Failed sends are released for the next run, not retried within this one.
      const failedSponsors: string[] = []
      for (let round = 0; round < 20; round++) {
        const due = unwrap(
          await c.var.db.rpc('labs_claim_outreach_digests', {
            batch_size: 50,
            skip_sponsors: failedSponsors,
          }),
        )
        if (due.length === 0) break
        for (const d of due) {
          results.total++
          const mail = digestEmail(d)
          let emailId: string | null = null
          try {
            const sent = await sendEmail(
              { to: d.contact_email, ...mail },
              `labs-digest-${d.sponsor_id}-${d.week_start}`,
            )
            if ('id' in sent) emailId = sent.id
            else results.errors.push(`${d.sponsor_id}: ${fromResend(sent.error).message}`)
          } catch (e) {
            results.errors.push(`${d.sponsor_id}: ${e instanceof Error ? e.message : String(e)}`)
          }
          unwrap(
            await c.var.db.rpc('labs_finish_outreach_digest', {
              sponsor_id: d.sponsor_id,
              week_start: d.week_start,
              email_id: emailId,
              message_count: d.messages.length,
            }),
          )
          if (emailId) results.sent++
          else {
            results.failed++
            failedSponsors.push(d.sponsor_id)
          }
        }
      }
      console.log(`labs sponsor-outreach-digest: ${results.sent} sent, ${results.failed} failed`)
      return c.json({ success: true as const, results })
    },
  )
