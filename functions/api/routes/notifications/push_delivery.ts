// The push sender: claims chunks of the delivery outbox (private.notification_deliveries, via
// claim_notification_deliveries: for update skip locked, preferences, quiet hours and caps
// applied there), sends them through Expo and Web Push, records each outcome, then asks Expo
// for the receipts of earlier tickets. Runs side by side share the work; each row is marked
// `attempting` just before its provider call, and a row left attempting by a run that died is
// never sent again (at most once per device).
import { setImmediate } from 'node:timers'
import type { Db } from '../../../_shared/db.ts'
import { unwrap } from '../../../_shared/errors.ts'
import {
  expoClient,
  expoFailure,
  type ExpoPushMessage,
  type ExpoPushTicket,
} from '../../../_shared/expo_push.ts'
import { notificationText } from './texts.ts'
import {
  postWebPush,
  prepareWebPush,
  type VapidConfig,
  vapidConfig,
  type WebPushOutcome,
  type WebPushRequest,
} from '../../../_shared/web_push.ts'

export interface DeliveryOptions {
  /** Rows per claim (default 500). */
  chunk?: number
  /** How long a claim holds its rows (s); a run that dies releases them after this. */
  leaseSeconds?: number
  /** Stop claiming after this long (ms); what is left is `remaining`. */
  timeBudgetMs?: number
  /** Web Push requests in flight at once (default 100: an HTTP/2 connection's usual stream limit). */
  webPushConcurrency?: number
  /** Web Push messages encrypted, then marked attempting, together (default 50). */
  webPushBatch?: number
  /** Web Push rows a run claims (default 1000; the chunk that reaches it may take it past): its CPU share. */
  webPushPerRun?: number
  /** Expo requests (100 messages each) in flight at once (the SDK's own limit is 6). */
  expoConcurrency?: number
  /** Ask Expo for receipts of tickets at least this old (s; Expo suggests 15 minutes). */
  receiptDelaySeconds?: number
  /** The moment to act as (tests and backfills; default now). */
  at?: string
  /** Which of the runs started side by side this is (pg_cron's `invocation`; logged). */
  invocation?: number
  /**
   * Keep claiming until this long after the start, every `pollMs` while nothing is due: a run
   * started by the insert kick takes the rows written after the kick without a request of their
   * own (private.kick_notification_deliveries). Default 0: stop when nothing is due.
   */
  lingerMs?: number
  /** How often a lingering run claims while nothing is due (default 100 ms). */
  pollMs?: number
  /** When the insert kick that started this run was taken (logged). */
  kickedAt?: string
  /**
   * Asks the run to stop (a deploy, a signal, the edge runtime retiring the worker): it claims
   * and marks nothing more, waits for what it marked, and releases the rest of its claims at
   * once, so a stop loses and repeats nothing. Default: stopSignal().
   */
  signal?: AbortSignal
}

let stopping: AbortController | undefined
/**
 * Aborted when the edge runtime is about to retire this worker (its `beforeunload` event, sent at
 * the wall-clock limit and the like). In plain Deno the event comes when the event loop has
 * nothing left, when no run is under way.
 */
export function stopSignal(): AbortSignal {
  if (!stopping) {
    stopping = new AbortController()
    globalThis.addEventListener('beforeunload', () => stopping!.abort())
  }
  return stopping.signal
}

export interface DeliveryReport {
  channels: { expo: boolean; web_push: boolean }
  claimed: number
  sent: number
  retried: number
  failed: number
  retired: number
  /** Claimed and never marked when the run was asked to stop: pending again at once. */
  released: number
  receipts_checked: number
  receipt_errors: number
  remaining: number
  /** Database calls of this run, by function: outcomes are recorded once per claimed chunk. */
  calls: { claim: number; start: number; record: number }
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
  outcome:
    | 'sent'
    | 'retry'
    | 'failed'
    | 'retired'
    | 'released'
    | 'receipt_ok'
    | 'receipt_error'
    | 'receipt_retry'
  ticket_id?: string
  error?: string
  retry_after?: number
  retire?: boolean
  /** The device's retired_reason when it is retired: fixed words, never a provider's answer. */
  reason?: string
  /** A release hands back only what this claim still holds. */
  claim_id?: string
}

/**
 * Types a person acts on within minutes: sent with high priority, and exempt from the daily cap
 * (private.notification_time_sensitive names the same types).
 */
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

/** Lets the event loop run (I/O, timers) before going on; setTimeout(0) would be clamped to ms. */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve))

const chunks = <T>(items: T[], size: number) =>
  Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, (i + 1) * size))

function webOutcome(id: number, res: WebPushOutcome): Outcome {
  if (res.ok) return { id, outcome: 'sent' }
  const error = `web push: ${res.message}`
  if (res.gone) return { id, outcome: 'retired', error, reason: res.reason ?? 'gone' }
  if (res.retry) {
    return { id, outcome: 'retry', error, ...(res.retryAfter ? { retry_after: res.retryAfter } : {}) }
  }
  return { id, outcome: 'failed', error }
}

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
    released: 0,
    receipts_checked: 0,
    receipt_errors: 0,
    remaining: 0,
    calls: { claim: 0, start: 0, record: 0 },
  }
  const startedAt = Date.now()
  const signal = options.signal ?? stopSignal()
  const stopped = () => signal.aborted
  /** Rows claimed and not marked when the run was asked to stop: recorded with the chunk. */
  const released: Outcome[] = []
  const release = (rows: Claimed[]) => {
    for (const r of rows) released.push({ id: r.id, outcome: 'released', claim_id: r.claim_id })
  }
  const run = {
    ...(options.invocation ? { invocation: options.invocation } : {}),
    ...(options.kickedAt ? { kicked_at: options.kickedAt } : {}),
  }
  console.log(JSON.stringify({ job: 'notification-deliveries', event: 'start', ...run, channels }))
  if (!channels.length) return report

  /** One statement for a whole chunk's answers. */
  const record = async (outcomes: Outcome[]) => {
    if (!outcomes.length) return
    // The answers are in hand: a conflict with a run beside this one is tried again, not lost.
    for (let attempt = 1;; attempt++) {
      report.calls.record++
      const reply = await db.rpc('record_notification_deliveries', { results: outcomes as never })
      if (!reply.error || attempt === 3) {
        unwrap(reply)
        break
      }
    }
    for (const o of outcomes) {
      if (o.outcome === 'sent') report.sent++
      else if (o.outcome === 'retry') report.retried++
      else if (o.outcome === 'failed') report.failed++
      else if (o.outcome === 'retired') report.retired++
      else if (o.outcome === 'released') report.released++
    }
  }
  /** Marks rows attempting (committed) just before their provider call; returns those this claim still holds. */
  const start = async (rows: Claimed[]) => {
    if (!rows.length) return rows
    report.calls.start++
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
  // A row marked attempting must reach its provider at once: a run that dies in between loses it
  // (it is never sent again). So while a mark is on its way, encryption (the one long CPU task)
  // pauses, letting the answer in at once, and resumes only when the marked requests are out:
  // `sent` says when (a Web Push request through fetch is out after a turn of the event loop;
  // an Expo request, made by the SDK through undici, is known to be out when it is answered).
  let marking = 0
  let idle = Promise.resolve()
  let wake = () => {}
  const markThen = async <T>(
    rows: Claimed[],
    send: (live: Claimed[]) => T,
    sent: (sending: T) => Promise<unknown> = () => new Promise((resolve) => setTimeout(resolve, 0)),
  ): Promise<T | null> => {
    if (!rows.length) return null
    if (stopped()) {
      release(rows)
      return null
    }
    if (marking++ === 0) idle = new Promise((resolve) => (wake = resolve))
    try {
      // Once asked for, the mark may be committed: what it returns is sent, stopping or not.
      const live = await start(rows)
      if (!live.length) return null
      const sending = send(live)
      await sent(sending)
      return sending
    } finally {
      if (--marking === 0) wake()
    }
  }
  const pauseForMarks = async () => {
    await nextTurn()
    while (marking) await idle
  }
  // Web Push costs about 0.75 ms of CPU a message, and a hosted edge-function request gets
  // 2 s of CPU: past its share a run claims Expo rows only, and the runs beside it (and the next
  // minute's) take the rest.
  const webShare = options.webPushPerRun ?? 1000
  let webClaimed = 0
  const claimChannels = () => channels.filter((c) => c !== 'web_push' || webClaimed < webShare)
  let claimedExpoOnly = false
  const claim = async (wanted: string[]) => {
    report.calls.claim++
    claimedExpoOnly = wanted.length < channels.length
    return unwrap(
      await db.rpc('claim_notification_deliveries', {
        max_rows: options.chunk ?? 500,
        lease_seconds: options.leaseSeconds ?? 120,
        channels: wanted,
        ...(options.at ? { at: options.at } : {}),
      }),
    ) as unknown as (Claimed & { remaining: number })[]
  }

  // The next chunk is claimed while the current one is sent, so the claim's time in the
  // database overlaps the providers' answers and the encryption.
  const budget = options.timeBudgetMs ?? 40_000
  const lingerUntil = startedAt + (options.lingerMs ?? 0)
  const pollMs = options.pollMs ?? 100
  const lingering = () => Date.now() < lingerUntil && Date.now() - startedAt < budget && !stopped()
  /** A claim after the poll interval, while lingering with nothing due. */
  const claimSoon = async (wanted: string[]) => {
    await new Promise((resolve) => setTimeout(resolve, pollMs))
    return stopped() ? [] : await claim(wanted)
  }
  // A worker already told to stop (the signal outlives the run that saw it) claims nothing.
  let next: ReturnType<typeof claim> | null = stopped() ? null : claim(claimChannels())
  while (next) {
    const claimed = await next
    next = null
    // A claim of Expo rows only (past the Web Push share) counts only those: the last count that
    // covered every channel stands.
    const left = claimed.length ? Number(claimed[0].remaining) : 0
    if (!claimedExpoOnly) report.remaining = left
    if (!claimed.length) {
      const wanted = claimChannels()
      if (wanted.length && lingering()) next = claimSoon(wanted)
      continue
    }
    report.claimed += claimed.length
    webClaimed += claimed.filter((r) => r.channel === 'web_push').length
    const wanted = claimChannels()
    if (wanted.length && Date.now() - startedAt < budget && !stopped()) {
      if (left) next = claim(wanted)
      else if (lingering()) next = claimSoon(wanted)
    }
    // A failed prefetch surfaces when it is awaited; until then it must not count as unhandled.
    next?.catch(() => {})
    const outcomes = (await Promise.all([
      expo ? sendExpo(claimed.filter((r) => r.channel === 'expo'), options.expoConcurrency ?? 6) : [],
      vapid
        ? sendWeb(
          vapid,
          claimed.filter((r) => r.channel === 'web_push'),
          options.webPushConcurrency ?? 100,
          options.webPushBatch ?? 50,
        )
        : [],
    ])).flat()
    await record([...outcomes, ...released.splice(0)])
  }
  if (stopped()) {
    console.log(
      JSON.stringify({ job: 'notification-deliveries', event: 'stopped', ...run, released: report.released }),
    )
  } else if (expo) await checkReceipts(options.receiptDelaySeconds ?? 900)
  console.log(
    JSON.stringify({
      job: 'notification-deliveries',
      event: 'done',
      ...run,
      ms: Date.now() - startedAt,
      ...report,
    }),
  )
  return report

  /**
   * Expo, in requests of 100 messages, `concurrency` at a time (the SDK's own limit is 6), each
   * marked attempting on its own just before it goes. Marking the 6 together was tried: the last
   * of them left the sender later (the SDK serializes and compresses each in turn), so a crash
   * had a longer window to lose in, and lost up to 600 rows instead of 100 (docs/performance.md).
   */
  async function sendExpo(rows: Claimed[], concurrency: number) {
    const now = Date.now()
    const outcomes: Outcome[] = []
    await pool(chunks(rows, 100), concurrency, async (chunk) => {
      const messages = new Map(chunk.map((r): [number, ExpoPushMessage] => {
        const text = notificationText(r)
        return [r.id, {
          to: r.address,
          title: text.title,
          body: text.body,
          data: { path: text.path, notification_id: r.notification_id, type: r.type },
          sound: 'default',
          priority: TIME_SENSITIVE.has(r.type) ? 'high' : 'default',
          ttl: ttlSeconds(r, now),
        }]
      }))
      const sending = await markThen(chunk, (live) => ({
        live,
        answer: expo!.sendPushNotificationsAsync(live.map((r) => messages.get(r.id)!)).then(
          (tickets) => ({ tickets, error: null }),
          (error: unknown) => ({ tickets: [] as ExpoPushTicket[], error }),
        ),
      }), (sending) => sending.answer)
      if (!sending) return
      const { live } = sending
      const { tickets, error } = await sending.answer
      if (error) {
        const f = expoFailure(error)
        const retry = f.status === null || f.status === 429 || f.status >= 500
        for (const r of live) {
          outcomes.push({ id: r.id, outcome: retry ? 'retry' : 'failed', error: `expo: ${f.message}` })
        }
        return
      }
      live.forEach((r, i) => {
        const t = tickets[i]
        if (t.status === 'ok') return outcomes.push({ id: r.id, outcome: 'sent', ticket_id: t.id })
        const code = t.details?.error
        if (code === 'DeviceNotRegistered') {
          return outcomes.push({ id: r.id, outcome: 'retired', error: `expo: ${code}`, reason: code })
        }
        if (code === 'MessageRateExceeded') {
          return outcomes.push({ id: r.id, outcome: 'retry', error: `expo: ${code}` })
        }
        outcomes.push({ id: r.id, outcome: 'failed', error: `expo: ${code ?? ''} ${t.message}`.trim() })
      })
    })
    return outcomes
  }

  /**
   * Web Push, one request per device: each batch is encrypted (about 0.75 ms of CPU a message,
   * pausing while a mark is on its way), then marked attempting, then posted without
   * waiting for the answers; two batches are under way at once, so one is encrypted while the
   * other waits for its mark. At most `concurrency` requests are in flight. The encryption comes
   * before the mark: a run killed while encrypting loses nothing.
   */
  async function sendWeb(vapid: VapidConfig, rows: Claimed[], concurrency: number, batchSize: number) {
    const now = Date.now()
    const outcomes: Outcome[] = []
    const inFlight = new Set<Promise<void>>()
    await pool(chunks(rows, batchSize), 2, async (batch) => {
      const ready: { row: Claimed; request: WebPushRequest }[] = []
      for (const r of batch) {
        if (stopped()) {
          release([r])
          continue
        }
        const text = notificationText(r)
        const request = await prepareWebPush(
          vapid,
          { endpoint: r.address, p256dh: r.key_p256dh ?? '', auth: r.key_auth ?? '' },
          JSON.stringify({
            title: text.title,
            body: text.body,
            path: text.path,
            notification_id: r.notification_id,
            type: r.type,
          }),
          {
            ttlSeconds: ttlSeconds(r, now),
            urgency: TIME_SENSITIVE.has(r.type) ? 'high' : 'normal',
            topic: r.notification_id.replace(/-/g, ''),
          },
        )
        if ('ok' in request) outcomes.push(webOutcome(r.id, request))
        else ready.push({ row: r, request })
        await pauseForMarks()
      }
      while (inFlight.size && inFlight.size + ready.length > concurrency) await Promise.race(inFlight)
      const request = new Map(ready.map((x) => [x.row.id, x.request]))
      await markThen(ready.map((x) => x.row), (live) => {
        for (const row of live) {
          const sending: Promise<void> = postWebPush(request.get(row.id)!).then((res) => {
            outcomes.push(webOutcome(row.id, res))
            inFlight.delete(sending)
          })
          inFlight.add(sending)
        }
      })
    })
    await Promise.all(inFlight)
    return outcomes
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
            ...(code === 'DeviceNotRegistered' ? { reason: code } : {}),
          }
        }))
      })
      if (due.length < 3000) return
    }
  }
}
