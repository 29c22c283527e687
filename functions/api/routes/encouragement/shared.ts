// What the encouragement modules share: the tag, drop and media types, the configuration and
// template shapes (with the columns that select them), and engagement processing, which super
// admins run by hand and pg_cron runs every hour.
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
    description: 'Drops whose window closed that are still unjudged (a larger backlog than one run takes)',
  }),
  bonus_pairs_pruned: z.number().int().openapi({
    description: 'Old one-bonus-per-pair-and-day records deleted by this run (at most 50,000)',
  }),
  duration_ms: z.number(),
}).openapi('EngagementProcessing')

export async function runEngagement(db: Db) {
  const r = unwrap(await db.rpc('process_encouragement_engagement', {}))
  console.log('process-engagement:', JSON.stringify(r))
  return r
}
