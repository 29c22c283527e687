// What the encouragement modules share: the tag, drop and media types, the configuration and
// template shapes (with the columns that select them), and engagement processing, which super
// admins run by hand and pg_cron runs one chunk of every 5 minutes.
import { z } from '@hono/zod-openapi'
import type { Db } from '../../../_shared/db.ts'
import { unwrap } from '../../../_shared/errors.ts'

export const tag = 'Encouragement drops'
const DROP_TYPES = ['encouragement', 'media', 'science_tidbit'] as const
export const MEDIA_TYPES = ['image', 'video', 'audio', 'link'] as const
export const dropType = z.enum(DROP_TYPES)

export const Config = z.object({
  daily_allowance: z.number().int(),
  bonus_per_engagement: z.number().int(),
  engagement_window_hours: z.number().int(),
  max_custom_per_day: z.number().int(),
}).openapi('EncouragementConfig')
export const CONFIG_COLUMNS =
  'daily_allowance, bonus_per_engagement, engagement_window_hours, max_custom_per_day'

export const Template = z.object({
  id: z.string(),
  type: dropType,
  title: z.string(),
  content: z.string(),
  media_type: z.enum(MEDIA_TYPES).nullable(),
  thumbnail_url: z.string().nullable(),
  is_approved: z.boolean(),
  usage_count: z.number().int(),
  created_at: z.string(),
  updated_at: z.string(),
}).openapi('EncouragementTemplate')
export const TEMPLATE_COLUMNS =
  'id, type, title, content, media_type, thumbnail_url, is_approved, usage_count, created_at, updated_at'

export const Engagement = z.object({
  judged: z.number().int(),
  engaged: z.number().int(),
  bonuses_awarded: z.number().int(),
  badges_recalculated: z.number().int(),
  remaining: z.number().int().openapi({
    description:
      'Drops whose window closed that are still unjudged, counted up to 10,000 (left when the budget ran out)',
  }),
  bonus_pairs_pruned: z.number().int().openapi({
    description: 'Old one-bonus-per-pair-and-day records deleted by this run (at most 50,000)',
  }),
  duration_ms: z.number(),
}).openapi('EngagementProcessing')

/**
 * Engagement processing: ENGAGEMENT_WALKERS (default 2) walkers side by side, each judging one
 * chunk of ENGAGEMENT_CHUNK (default 10,000) due drops per call (its own transaction of a few
 * seconds; chunks never overlap: skip locked), until nothing is due or ENGAGEMENT_BUDGET_MS
 * (default 100 s) has passed; the reply sums the chunks.
 */
export async function runEngagement(db: Db) {
  const chunk = Math.min(200000, Math.max(1, Number(Deno.env.get('ENGAGEMENT_CHUNK') ?? 10000)))
  const walkers = Math.min(8, Math.max(1, Number(Deno.env.get('ENGAGEMENT_WALKERS') ?? 2)))
  const deadline = Date.now() + Number(Deno.env.get('ENGAGEMENT_BUDGET_MS') ?? 100_000)
  const started = Date.now()
  const sum = {
    judged: 0,
    engaged: 0,
    bonuses_awarded: 0,
    badges_recalculated: 0,
    remaining: 0,
    bonus_pairs_pruned: 0,
  }
  await Promise.all(Array.from({ length: walkers }, async () => {
    do {
      const r = unwrap(await db.rpc('process_encouragement_engagement', { max_drops: chunk })) as Record<
        keyof typeof sum,
        number
      >
      for (
        const k of [
          'judged',
          'engaged',
          'bonuses_awarded',
          'badges_recalculated',
          'bonus_pairs_pruned',
        ] as const
      ) sum[k] += r[k]
      sum.remaining = r.remaining
      if (r.judged === 0) break
    } while (sum.remaining > 0 && Date.now() < deadline)
  }))
  const r = { ...sum, duration_ms: Date.now() - started }
  console.log('process-engagement:', JSON.stringify(r))
  return r
}
