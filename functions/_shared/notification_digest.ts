// The daily e-mail digest: unread notifications (of types whose e-mail channel is on) for users
// who opted in, at their digest hour in their time zone, through Resend (email.ts). Each carries
// a one-click unsubscribe (RFC 8058: List-Unsubscribe with an https URL and
// List-Unsubscribe-Post), as Gmail and Yahoo require of bulk senders.
import type { Db } from './db.ts'
import { resendClient, sendEmail } from './email.ts'
import { requiredEnv } from './env.ts'
import { unwrap } from './errors.ts'
import { notificationText } from './notification_texts.ts'

export interface DigestReport {
  configured: boolean
  claimed: number
  sent: number
  failed: number
  errors: { user_id: string; error: string }[]
}

interface DigestRow {
  user_id: string
  email: string
  unsubscribe_token: string
  local_date: string
  total: number
  notifications: {
    id: string
    type: string
    payload: Record<string, unknown>
    created_at: string
    context: Record<string, string> | null
  }[]
}

/** The link in the digest's List-Unsubscribe header and footer. */
export const unsubscribeUrl = (token: string) =>
  `${requiredEnv('SUPABASE_URL')}/functions/v1/api/notifications/unsubscribe?token=${
    encodeURIComponent(token)
  }`

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

export function digestEmail(row: DigestRow) {
  const items = row.notifications.map((n) => notificationText(n))
  const more = Number(row.total) - items.length
  const subject = `${row.total} new notification${Number(row.total) === 1 ? '' : 's'}`
  const link = unsubscribeUrl(row.unsubscribe_token)
  const text = [
    'What happened since your last digest:',
    '',
    ...items.map((t) => `- ${t.title}: ${t.body}`),
    ...(more > 0 ? [`...and ${more} more in the app.`] : []),
    '',
    `You get this because you turned on the daily digest. Unsubscribe: ${link}`,
  ].join('\n')
  const html = `<p>What happened since your last digest:</p><ul>${
    items.map((t) => `<li><strong>${escapeHtml(t.title)}</strong>: ${escapeHtml(t.body)}</li>`).join('')
  }</ul>${
    more > 0 ? `<p>...and ${more} more in the app.</p>` : ''
  }<p style="color:#666">You get this because you turned on the daily digest. <a href="${
    escapeHtml(link)
  }">Unsubscribe</a></p>`
  return {
    to: row.email,
    subject,
    text,
    html,
    headers: { 'List-Unsubscribe': `<${link}>`, 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' },
  }
}

export async function runDigests(
  db: Db,
  options: { limit?: number; at?: string } = {},
): Promise<DigestReport> {
  const report: DigestReport = { configured: !!resendClient(), claimed: 0, sent: 0, failed: 0, errors: [] }
  console.log(JSON.stringify({ job: 'notification-digests', event: 'start', configured: report.configured }))
  if (!report.configured) return report
  const at = options.at ?? new Date().toISOString()
  const rows = unwrap(
    await db.rpc('claim_notification_digests', { max_users: options.limit ?? 100, at }),
  ) as unknown as DigestRow[]
  report.claimed = rows.length
  for (const row of rows) {
    const mail = digestEmail(row)
    // One digest per user and local day: a retried send of the same day is a no-op at Resend.
    const result = await sendEmail(mail, `digest-${row.user_id}-${row.local_date}`).catch((e) => ({
      error: { message: String(e) },
    }))
    const sent = 'id' in result
    if (sent) report.sent++
    else {
      report.failed++
      report.errors.push({ user_id: row.user_id, error: result.error.message ?? 'send failed' })
    }
    unwrap(
      await db.rpc('record_notification_digest', {
        user_id: row.user_id,
        local_date: row.local_date,
        sent,
        at,
      }),
    )
  }
  console.log(
    JSON.stringify({ job: 'notification-digests', event: 'done', ...report, errors: report.errors.length }),
  )
  return report
}
