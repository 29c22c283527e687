// The scheduled jobs: engagement processing (bonus drops for drops the recipient engaged
// with) and the daily assistant drops, each also callable with the cron secret.
import { z } from '@hono/zod-openapi'
import { generateDailyDrops } from './assistant_drops.ts'
import { endpoint, routeModule } from '../../openapi.ts'
import { Engagement, runEngagement, tag } from './shared.ts'

const DailyDropsReply = z.object({
  success: z.boolean(),
  message: z.string(),
  results: z.object({
    total: z.number().int(),
    generated: z.number().int(),
    skipped: z.number().int(),
    failed: z.number().int(),
    errors: z.array(z.string()),
    remaining: z.number().int().openapi({
      description: 'Due users left for later invocations (pg_cron calls again while > 0)',
    }),
  }),
}).openapi('GenerateDailyDropsResult')

export const scheduledRoutes = routeModule()
  .openapi(
    endpoint({
      method: 'post',
      path: '/encouragement-drops/cron/process-engagement',
      tag,
      auth: { cron: 'encouragement-drops/process-engagement' },
      summary:
        'Engagement and bonus drops: walkers side by side over chunks of due drops (pg_cron runs one chunk in SQL every 5 minutes)',
      response: Engagement,
    }),
    async (c) => c.json(await runEngagement(c.var.db)),
  )
  .openapi(
    endpoint({
      method: 'post',
      path: '/encouragement-drops/cron/generate-daily-drops',
      tag,
      auth: { cron: 'encouragement-drops' },
      summary:
        'Daily assistant drops for a chunk of due users (scheduled 0 9 * * *, repeated while users remain)',
      description:
        'Users with read_notes_enabled and check_in_enabled; one per user per UTC day; batches of 5 with 1 s between. ' +
        'Per-user failures are listed in results.errors; the run itself succeeds.',
      response: DailyDropsReply,
    }),
    async (c) => {
      const results = await generateDailyDrops()
      const message =
        `Generated ${results.generated} of ${results.total} daily drops (${results.skipped} skipped, ` +
        `${results.failed} failed, ${results.remaining} remaining)`
      return c.json({ success: true, message, results })
    },
  )
