// The daily e-mail digest: unread notifications (of types whose e-mail channel is on) for users
// who opted in, at their digest hour in their time zone, through Resend (email.ts). Each carries
// a one-click unsubscribe (RFC 8058: List-Unsubscribe with an https URL and
// List-Unsubscribe-Post), as Gmail and Yahoo require of bulk senders.
import type { Db } from '../../../_shared/db.ts'
import { EMAIL_BATCH_MAX, resendClient, type ResendFailure, sendEmailBatch } from '../../../_shared/email.ts'
import { optionalEnv, requiredEnv } from '../../../_shared/env.ts'
import { unwrap } from '../../../_shared/errors.ts'
import { notificationText } from './texts.ts'

export interface DigestReport {
  configured: boolean
  claimed: number
  sent: number
  failed: number
  /** Resend batch requests made. */
  batches: number
  /** The run stopped (budget spent, or the provider refused) with users still due. */
  more: boolean
  errors: { user_id: string; error: string }[]
}

interface DigestRow {
  user_id: string
  email: string
  unsubscribe_token: string
  local_date: string
  /** Sends refused since the last digest: a new attempt is a new batch key. */
  attempt: number
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

/** What a run may spend (an edge-function run has 150 s) and how fast it may ask Resend. */
export interface DigestRunOptions {
  /** Users a claim takes (and a batch sends): 1-100. */
  limit?: number
  at?: string
  /** Stop claiming after this long (default DIGEST_BUDGET_MS or 100 s). */
  budgetMs?: number
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

async function batchKey(rows: DigestRow[]) {
  const list = rows.map((r) => `${r.user_id}:${r.local_date}:${r.attempt}`).sort().join(',')
  const hash = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(list))
  return `digests-${Array.from(new Uint8Array(hash), (b) => b.toString(16).padStart(2, '0')).join('')}`
}

/**
 * Sends a chunk's digests in one batch request; a 429 waits its Retry-After (at most 5 s) and
 * tries the same request again once. Returns each row's outcome, or the batch's failure.
 */
async function sendChunk(rows: DigestRow[]) {
  const key = await batchKey(rows)
  const mails = rows.map((r) => digestEmail(r))
  const send = () =>
    sendEmailBatch(mails, key).catch((e) => ({ error: { message: String(e) } as ResendFailure }))
  let result = await send()
  if ('error' in result && result.error.statusCode === 429) {
    await sleep(1000)
    result = await send()
  }
  // The key was used with another body: these users' batch of this date and attempt went out
  // before (a run died before recording it) and their unread list has grown since.
  if ('error' in result && result.error.name === 'invalid_idempotent_request') {
    return { ids: rows.map(() => null), refused: new Map<number, string>() }
  }
  return result
}

/**
 * Claims due users a chunk at a time and sends each chunk as one Resend batch (up to 100
 * e-mails a request, the provider's rate limit counting requests), until nothing is due or the
 * budget is spent; `more` says a later run has work left. A batch's idempotency key is made of
 * its users, their local dates and attempts, so when a run dies between the send and the
 * record, the next run claims the same users again (the lowest due ids) and Resend answers the
 * first send (or, the unread list having grown, refuses the key's reuse) instead of sending
 * twice. A refused send counts an attempt: its retry is a new request.
 */
export async function runDigests(db: Db, options: DigestRunOptions = {}): Promise<DigestReport> {
  const report: DigestReport = {
    configured: !!resendClient(),
    claimed: 0,
    sent: 0,
    failed: 0,
    batches: 0,
    more: false,
    errors: [],
  }
  console.log(JSON.stringify({ job: 'notification-digests', event: 'start', configured: report.configured }))
  if (!report.configured) return report
  const at = options.at ?? new Date().toISOString()
  const limit = Math.min(Math.max(options.limit ?? 100, 1), EMAIL_BATCH_MAX)
  const budgetMs = options.budgetMs ?? Number(optionalEnv('DIGEST_BUDGET_MS') ?? 100_000)
  const started = Date.now()
  let lastRequest = 0
  while (Date.now() - started < budgetMs) {
    const rows = unwrap(
      await db.rpc('claim_notification_digests', { max_users: limit, at }),
    ) as unknown as DigestRow[]
    report.claimed += rows.length
    if (rows.length === 0) break
    // Resend's default limit is 2 requests a second.
    await sleep(Math.max(0, lastRequest + 500 - Date.now()))
    lastRequest = Date.now()
    const result = await sendChunk(rows)
    report.batches++
    const outcomes = rows.map((row, i) => {
      const error = 'error' in result ? result.error.message ?? 'send failed' : result.refused.get(i)
      if (error) report.errors.push({ user_id: row.user_id, error })
      return { user_id: row.user_id, local_date: row.local_date, sent: !error }
    })
    const sent = outcomes.filter((o) => o.sent).length
    report.sent += sent
    report.failed += rows.length - sent
    unwrap(await db.rpc('record_notification_digests', { results: outcomes, at }))
    // The provider refused the whole request (down, or still limiting): the rest waits for the next run.
    if ('error' in result) {
      report.more = true
      break
    }
    report.more = Date.now() - started >= budgetMs
  }
  console.log(
    JSON.stringify({ job: 'notification-digests', event: 'done', ...report, errors: report.errors.length }),
  )
  return report
}
