// The scheduled sides of notification delivery (pg_cron, NOTIFICATIONS_CRON_SECRET): the push
// sender every minute, the e-mail digest hourly; and the digest's one-click unsubscribe.
import { z } from '@hono/zod-openapi'
import { serviceDb } from '../../../_shared/db.ts'
import { notFound, unwrap } from '../../../_shared/errors.ts'
import { runDigests } from './digest.ts'
import { runDeliveries } from './push_delivery.ts'
import { endpoint, routeModule } from '../../openapi.ts'

const tag = 'Notifications'

const At = z.string().datetime({ offset: true }).optional().describe(
  'Act as of this moment (tests, catching up); default now',
)

const DeliveryReport = z.object({
  channels: z.object({ expo: z.boolean(), web_push: z.boolean() }),
  claimed: z.number().int(),
  sent: z.number().int(),
  retried: z.number().int(),
  failed: z.number().int(),
  retired: z.number().int(),
  released: z.number().int().describe(
    'Claimed but not yet sent when the run was asked to stop (the edge runtime retiring the worker): pending again',
  ),
  receipts_checked: z.number().int(),
  receipt_errors: z.number().int(),
  remaining: z.number().int().describe('Due deliveries still pending after this run, counted up to 1,000'),
  calls: z.object({ claim: z.number().int(), start: z.number().int(), record: z.number().int() }).describe(
    'Database calls of this run: a claim per chunk, a start per provider batch, one record of outcomes per chunk',
  ),
})

const DigestReport = z.object({
  configured: z.boolean(),
  claimed: z.number().int(),
  sent: z.number().int(),
  failed: z.number().int(),
  batches: z.number().int().describe('Resend batch requests (up to 100 e-mails each)'),
  more: z.boolean().describe(
    'Users still due when the run stopped (its time budget, or the provider refused)',
  ),
  errors: z.array(z.object({ user_id: z.string(), error: z.string() })),
})

export const jobRoutes = routeModule()
  .openapi(
    endpoint({
      method: 'post',
      path: '/notifications/cron/deliver',
      tag,
      auth: { cron: 'notifications' },
      bodyRequired: false,
      body: z.object({
        limit: z.number().int().min(1).max(5000).optional().describe('Rows per claim (default 500)'),
        time_budget_ms: z.number().int().min(0).max(300_000).optional().describe(
          'Stop claiming after this long (default 40000)',
        ),
        receipt_delay_seconds: z.number().int().min(0).max(86_400).optional().describe(
          'Ask for Expo receipts of tickets this old (default 900)',
        ),
        at: At,
        scheduled_at: z.string().max(100).optional(),
        web_push_per_run: z.number().int().min(1).max(100_000).optional().describe(
          'Web Push rows this run claims (default 1000: each costs about 0.8 ms of CPU)',
        ),
        invocation: z.number().int().min(1).max(20).optional().describe(
          'Which of the runs pg_cron started side by side this minute (logged)',
        ),
        kicked_at: z.string().datetime({ offset: true }).optional().describe(
          'Set by the insert kick (private.kick_notification_deliveries): when it was taken (logged)',
        ),
        linger_ms: z.number().int().min(0).max(10_000).optional().describe(
          'Keep claiming, every 100 ms while nothing is due, until this long after the start (the insert kick: ' +
            'rows written after it without a request of their own)',
        ),
      }),
      response: z.object({ success: z.boolean(), message: z.string(), results: DeliveryReport }),
      summary: 'Push delivery: due outbox rows to Expo and Web Push (on insert, and pg_cron every minute, 4 runs side by side)',
      description:
        'Claims chunks of due deliveries (skipping rows another run holds, so runs side by side share the work), ' +
        'applies preferences, quiet hours and the daily cap, sends, records each outcome (429/5xx: retried with backoff; ' +
        'DeviceNotRegistered, 404/410: the device is retired), then checks Expo receipts. A channel whose configuration is ' +
        'missing is skipped (results.channels). Started within milliseconds of a write of due rows by the outbox ' +
        "trigger's kick (with linger_ms), and every minute by pg_cron.",
    }),
    async (c) => {
      const b = c.req.valid('json') ?? {}
      const results = await runDeliveries(c.var.db, {
        chunk: b.limit,
        timeBudgetMs: b.time_budget_ms,
        receiptDelaySeconds: b.receipt_delay_seconds,
        at: b.at,
        invocation: b.invocation,
        webPushPerRun: b.web_push_per_run,
        lingerMs: b.linger_ms,
        kickedAt: b.kicked_at,
      })
      return c.json({
        success: true,
        message:
          `Sent ${results.sent} of ${results.claimed} claimed (${results.retried} to retry, ${results.failed} failed, ` +
          `${results.retired} retired; ${results.remaining} remaining)`,
        results,
      })
    },
  )
  .openapi(
    endpoint({
      method: 'post',
      path: '/notifications/cron/digest',
      tag,
      auth: { cron: 'notifications' },
      bodyRequired: false,
      body: z.object({
        limit: z.number().int().min(1).max(100).optional().describe(
          'Users a claim takes and a batch sends (default 100)',
        ),
        budget_ms: z.number().int().min(1).max(140_000).optional().describe(
          'Stop claiming after this long (default DIGEST_BUDGET_MS, else 100,000: inside an edge-function run)',
        ),
        at: At,
        scheduled_at: z.string().max(100).optional(),
      }),
      response: z.object({ success: z.boolean(), message: z.string(), results: DigestReport }),
      summary: 'Scheduled e-mail digests (pg_cron every 10 minutes)',
      description:
        'Users who opted in, at or past their digest hour in their time zone, with unread notifications since ' +
        'their last digest: one e-mail each through Resend (batches of up to 100 a request, chunk after chunk within ' +
        'the time budget), with List-Unsubscribe one-click headers. Skipped (configured: ' +
        'false) while e-mail is not configured. Per-user failures are in results.errors.',
    }),
    async (c) => {
      const b = c.req.valid('json') ?? {}
      const results = await runDigests(c.var.db, { limit: b.limit, at: b.at, budgetMs: b.budget_ms })
      return c.json({
        success: true,
        message: `Sent ${results.sent} of ${results.claimed} digests (${results.failed} failed)`,
        results,
      })
    },
  )
  .openapi(
    endpoint({
      method: 'post',
      path: '/notifications/unsubscribe',
      tag,
      auth: 'none',
      notAWrite: "the e-mail's secret token is the credential; mail providers POST it from a few shared addresses",
      bodyRequired: false,
      query: z.object({ token: z.string().uuid('must be the token from the e-mail') }).strict(),
      response: z.object({ unsubscribed: z.boolean() }),
      errors: [404],
      summary: 'One-click unsubscribe from the e-mail digest (RFC 8058)',
      description: "The URL of the digest's List-Unsubscribe header; mail clients POST it with the body " +
        '`List-Unsubscribe=One-Click`. Turns the digest off (email_digest false). 404 for an unknown token.',
    }),
    async (c) => {
      const { token } = c.req.valid('query')
      const known = unwrap(await serviceDb().rpc('unsubscribe_notification_digest', { token }))
      if (!known) throw notFound('Unknown unsubscribe link')
      // The confirmation form of the GET page posts here from a browser: answer it with a page.
      if (c.req.header('accept')?.includes('text/html')) {
        return c.html(unsubscribePage('You will not get the daily digest any more.', null))
      }
      return c.json({ unsubscribed: true })
    },
  )
  .openapi(
    endpoint({
      method: 'get',
      path: '/notifications/unsubscribe',
      tag,
      auth: 'none',
      query: z.object({ token: z.string().uuid('must be the token from the e-mail') }).strict(),
      responseDescription: 'An HTML page with one button that POSTs the unsubscribe',
      summary: "The page behind the digest's unsubscribe link",
      description:
        'What a person who clicks the link in the e-mail sees. It changes nothing by itself (mail ' +
        'scanners open links; RFC 8058 says a GET must not unsubscribe): its button POSTs the one-click form.',
    }),
    (c) => {
      const { token } = c.req.valid('query')
      return c.html(unsubscribePage('Stop the daily e-mail digest?', token))
    },
  )

/** A small page: the question with its button (token given), or the answer. */
function unsubscribePage(message: string, token: string | null) {
  const form = token === null ? '' : `<form method="post" action="?token=${encodeURIComponent(token)}">` +
    '<input type="hidden" name="List-Unsubscribe" value="One-Click">' +
    '<button type="submit">Unsubscribe</button></form>'
  return '<!doctype html><html lang="en"><head><meta charset="utf-8">' +
    '<meta name="viewport" content="width=device-width, initial-scale=1"><title>Daily digest</title></head>' +
    `<body><h1>Daily digest</h1><p>${message}</p>${form}` +
    '<p>You can turn it on again in the app, under notification settings.</p></body></html>'
}
