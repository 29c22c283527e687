// The push sender: claims chunks of the delivery outbox (private.notification_deliveries, via
// claim_notification_deliveries: for update skip locked, preferences, quiet hours and caps
// applied there), sends them through Expo and Web Push, records each outcome, then asks Expo
// for the receipts of earlier tickets. Runs side by side share the work; each row is marked
// `attempting` just before its provider call, and a row left attempting by a run that died is
// never sent again (at most once per device).
import type { Db } from './db.ts'
import { unwrap } from './errors.ts'
import { expoClient, expoFailure, type ExpoPushMessage, type ExpoPushTicket } from './expo_push.ts'
import { notificationText } from './notification_texts.ts'
import { sendWebPush, type VapidConfig, vapidConfig } from './web_push.ts'

export interface DeliveryOptions {
  /** Rows per claim (default 500). */
  chunk?: number
  /** How long a claim holds its rows (s); a run that dies releases them after this. */
  leaseSeconds?: number
  /** Stop claiming after this long (ms); what is left is `remaining`. */
  timeBudgetMs?: number
  /** Web Push requests in flight at once. */
  webPushConcurrency?: number
  /** Expo requests (100 messages each) in flight at once (the SDK's own limit is 6). */
  expoConcurrency?: number
  /** Ask Expo for receipts of tickets at least this old (s; Expo suggests 15 minutes). */
  receiptDelaySeconds?: number
  /** The moment to act as (tests and backfills; default now). */
  at?: string
}

export interface DeliveryReport {
  channels: { expo: boolean; web_push: boolean }
  claimed: number
  sent: number
  retried: number
  failed: number
  retired: number
  receipts_checked: number
  receipt_errors: number
  remaining: number
}

interface Claimed {
  id: number
  claim_id: string
  channel: 'expo' | 'web_push'
  address: string
  key_p256dh: string | null
  key_auth: string | null
  notification_id: string
  type: string
  payload: Record<string, unknown>
  expires_at: string
  context: { actorName?: string; windowStart?: string } | null
}

interface Outcome {
  id: number
  outcome: 'sent' | 'retry' | 'failed' | 'retired' | 'receipt_ok' | 'receipt_error' | 'receipt_retry'
  ticket_id?: string
  error?: string
  retry_after?: number
  retire?: boolean
}

/** Types a person acts on within minutes: sent with high priority. */
const TIME_SENSITIVE = new Set(['workout.checkin_reminder', 'workout.baton_pass'])

const ttlSeconds = (row: Claimed, now: number) =>
  Math.max(60, Math.floor((Date.parse(row.expires_at) - now) / 1000))

/** Runs `work` over `items` with at most `limit` at a time. */
async function pool<T>(items: T[], limit: number, work: (item: T) => Promise<void>) {
  let next = 0
  const worker = async () => {
    while (next < items.length) await work(items[next++])
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
}

const chunks = <T>(items: T[], size: number) =>
  Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, (i + 1) * size))

export async function runDeliveries(db: Db, options: DeliveryOptions = {}): Promise<DeliveryReport> {
  const expo = expoClient()
  const vapid = vapidConfig()
  const channels = [...(expo ? ['expo'] : []), ...(vapid ? ['web_push'] : [])]
  const report: DeliveryReport = {
    channels: { expo: !!expo, web_push: !!vapid },
    claimed: 0,
    sent: 0,
    retried: 0,
    failed: 0,
    retired: 0,
    receipts_checked: 0,
    receipt_errors: 0,
    remaining: 0,
  }
  const startedAt = Date.now()
  console.log(JSON.stringify({ job: 'notification-deliveries', event: 'start', channels }))
  if (!channels.length) return report

  const record = async (outcomes: Outcome[]) => {
    if (!outcomes.length) return
    unwrap(await db.rpc('record_notification_deliveries', { results: outcomes as never }))
    for (const o of outcomes) {
      if (o.outcome === 'sent') report.sent++
      else if (o.outcome === 'retry') report.retried++
      else if (o.outcome === 'failed') report.failed++
      else if (o.outcome === 'retired') report.retired++
    }
  }
  /** Marks rows attempting; returns those this claim still holds. */
  const start = async (rows: Claimed[]) => {
    if (!rows.length) return rows
    const held = new Set(
      unwrap(
        await db.rpc('start_notification_deliveries', {
          ids: rows.map((r) => r.id),
          claim: rows[0].claim_id,
        }),
      ).map(Number),
    )
    return rows.filter((r) => held.has(r.id))
  }

  const budget = options.timeBudgetMs ?? 40_000
  while (Date.now() - startedAt < budget) {
    const claimed = unwrap(
      await db.rpc('claim_notification_deliveries', {
        max_rows: options.chunk ?? 500,
        lease_seconds: options.leaseSeconds ?? 120,
        channels,
        ...(options.at ? { at: options.at } : {}),
      }),
    ) as unknown as (Claimed & { remaining: number })[]
    report.remaining = claimed.length ? Number(claimed[0].remaining) : 0
    if (!claimed.length) break
    report.claimed += claimed.length
    await Promise.all([
      expo ? sendExpo(claimed.filter((r) => r.channel === 'expo'), options.expoConcurrency ?? 6) : null,
      vapid
        ? sendWeb(vapid, claimed.filter((r) => r.channel === 'web_push'), options.webPushConcurrency ?? 50)
        : null,
    ])
    if (!report.remaining) break
  }
  if (expo) await checkReceipts(options.receiptDelaySeconds ?? 900)
  console.log(
    JSON.stringify({ job: 'notification-deliveries', event: 'done', ms: Date.now() - startedAt, ...report }),
  )
  return report

  async function sendExpo(rows: Claimed[], concurrency: number) {
    const now = Date.now()
    await pool(chunks(rows, 100), concurrency, async (chunk) => {
      const live = await start(chunk)
      if (!live.length) return
      const messages: ExpoPushMessage[] = live.map((r) => {
        const text = notificationText(r)
        return {
          to: r.address,
          title: text.title,
          body: text.body,
          data: { path: text.path, notification_id: r.notification_id, type: r.type },
          sound: 'default',
          priority: TIME_SENSITIVE.has(r.type) ? 'high' : 'default',
          ttl: ttlSeconds(r, now),
        }
      })
      let tickets: ExpoPushTicket[]
      try {
        tickets = await expo!.sendPushNotificationsAsync(messages)
      } catch (e) {
        const f = expoFailure(e)
        const retry = f.status === null || f.status === 429 || f.status >= 500
        await record(
          live.map((r) => ({ id: r.id, outcome: retry ? 'retry' : 'failed', error: `expo: ${f.message}` })),
        )
        return
      }
      await record(live.map((r, i): Outcome => {
        const t = tickets[i]
        if (t.status === 'ok') return { id: r.id, outcome: 'sent', ticket_id: t.id }
        const code = t.details?.error
        if (code === 'DeviceNotRegistered') return { id: r.id, outcome: 'retired', error: `expo: ${code}` }
        if (code === 'MessageRateExceeded') return { id: r.id, outcome: 'retry', error: `expo: ${code}` }
        return { id: r.id, outcome: 'failed', error: `expo: ${code ?? ''} ${t.message}`.trim() }
      }))
    })
  }

  async function sendWeb(vapid: VapidConfig, rows: Claimed[], concurrency: number) {
    const now = Date.now()
    for (const batch of chunks(rows, concurrency)) {
      const live = await start(batch)
      const outcomes = await Promise.all(live.map(async (r): Promise<Outcome> => {
        const text = notificationText(r)
        const payload = JSON.stringify({
          title: text.title,
          body: text.body,
          path: text.path,
          notification_id: r.notification_id,
          type: r.type,
        })
        const res = await sendWebPush(
          vapid,
          { endpoint: r.address, p256dh: r.key_p256dh ?? '', auth: r.key_auth ?? '' },
          payload,
          {
            ttlSeconds: ttlSeconds(r, now),
            urgency: TIME_SENSITIVE.has(r.type) ? 'high' : 'normal',
            topic: r.notification_id.replace(/-/g, ''),
          },
        )
        if (res.ok) return { id: r.id, outcome: 'sent' }
        const error = `web push: ${res.message}`
        if (res.gone) return { id: r.id, outcome: 'retired', error }
        if (res.retry) {
          return {
            id: r.id,
            outcome: 'retry',
            error,
            ...(res.retryAfter ? { retry_after: res.retryAfter } : {}),
          }
        }
        return { id: r.id, outcome: 'failed', error }
      }))
      await record(outcomes)
    }
  }

  async function checkReceipts(delaySeconds: number) {
    for (let round = 0; round < 10; round++) {
      const due = unwrap(await db.rpc('claim_expo_receipts', { max_rows: 3000, delay_seconds: delaySeconds }))
      if (!due.length) return
      await pool(chunks(due, 300), 3, async (part) => {
        let receipts: Record<string, { status: string; message?: string; details?: { error?: string } }>
        try {
          receipts = await expo!.getPushNotificationReceiptsAsync(part.map((d) => d.ticket_id))
        } catch (e) {
          await record(
            part.map((d) => ({
              id: Number(d.id),
              outcome: 'receipt_retry',
              error: `expo receipts: ${expoFailure(e).message}`,
            })),
          )
          return
        }
        await record(part.map((d): Outcome => {
          const r = receipts[d.ticket_id]
          if (!r) return { id: Number(d.id), outcome: 'receipt_retry' }
          report.receipts_checked++
          if (r.status === 'ok') return { id: Number(d.id), outcome: 'receipt_ok' }
          report.receipt_errors++
          const code = r.details?.error
          return {
            id: Number(d.id),
            outcome: 'receipt_error',
            error: `expo receipt: ${code ?? ''} ${r.message ?? ''}`.trim(),
            retire: code === 'DeviceNotRegistered',
          }
        }))
      })
      if (due.length < 3000) return
    }
  }
}
