// Badges: each user's level on the badge ladder (from successful drops, success rate and
// consecutive days), the milestones reached, the ladder itself and the leaderboard of
// encouragers. One SQL function recalculates a badge.
import { z } from '@hono/zod-openapi'
import { type Db, givenArgs } from '../../../_shared/db.ts'
import { notFound, unwrap } from '../../../_shared/errors.ts'
import { idParams, uuid } from '../../../_shared/validation.ts'
import { endpoint, routeModule } from '../../openapi.ts'
import { tag } from './shared.ts'

const Badge = z.object({
  user_id: z.string(),
  full_name: z.string().nullable(),
  avatar_url: z.string().nullable(),
  level: z.number().int(),
  name: z.string(),
  emoji: z.string(),
  color: z.string(),
  total_sent: z.number().int(),
  engagement_increases: z.number().int().openapi({
    description: 'Successful drops: the recipient engaged within the window',
  }),
  success_rate: z.number().openapi({ description: 'Percent of sent drops that were successful' }),
  bonus_earned: z.number().int(),
  consecutive_days: z.number().int(),
  progress_to_next: z.number().openapi({
    description: 'Percent of the way to the next level (100 at the top)',
  }),
  next_level: z.number().int().nullable(),
  next_level_name: z.string().nullable(),
  next_level_min_successful_drops: z.number().int().nullable(),
  updated_at: z.string().nullable(),
}).openapi('EncouragementBadge')

const Definition = z.object({
  level: z.number().int(),
  name: z.string(),
  emoji: z.string(),
  color: z.string(),
  min_successful_drops: z.number().int(),
  min_success_rate: z.number().nullable(),
  min_consecutive_days: z.number().int().nullable(),
}).openapi('EncouragementBadgeDefinition')

const Milestone = z.object({
  id: z.number().int(),
  user_id: z.string(),
  level: z.number().int(),
  achieved_at: z.string(),
  stats: z.record(z.string(), z.unknown()),
}).openapi('EncouragementBadgeMilestone')

const LeaderboardRow = z.object({
  rank: z.number().int(),
  user_id: z.string(),
  full_name: z.string().nullable(),
  avatar_url: z.string().nullable(),
  level: z.number().int(),
  name: z.string(),
  emoji: z.string(),
  color: z.string(),
  engagement_increases: z.number().int(),
  success_rate: z.number(),
  total_sent: z.number().int(),
  bonus_earned: z.number().int(),
}).openapi('EncouragementLeaderboardRow')

type BadgeRow = z.infer<typeof Badge>
const numeric = (b: BadgeRow) => ({
  ...b,
  success_rate: Number(b.success_rate),
  progress_to_next: Number(b.progress_to_next),
})

async function badgesOf(db: Db, ids: string[]) {
  return (unwrap(await db.rpc('encouragement_badges_of', { user_ids: ids }))).map(numeric)
}

export const badgeRoutes = routeModule()
  .openapi(
    endpoint({
      method: 'get',
      path: '/encouragement-drops/badge',
      tag,
      auth: 'bearer',
      summary: "The caller's badge",
      response: z.object({ badge: Badge }),
    }),
    async (c) => c.json({ badge: (await badgesOf(c.var.db, [c.var.caller.id]))[0] }),
  )
  .openapi(
    endpoint({
      method: 'get',
      path: '/encouragement-drops/badge/milestones',
      tag,
      auth: 'bearer',
      summary: "The caller's milestones, highest level first",
      response: z.object({ milestones: z.array(Milestone) }),
    }),
    async (c) => {
      const milestones = unwrap(
        await c.var.db.from('encouragement_badge_milestones').select('id, user_id, level, achieved_at, stats')
          .eq('user_id', c.var.caller.id).order('level', { ascending: false }),
      )
      return c.json({ milestones })
    },
  )
  .openapi(
    endpoint({
      method: 'get',
      path: '/encouragement-drops/badge/{userId}',
      tag,
      auth: 'bearer',
      params: idParams('userId'),
      summary: "A user's badge",
      response: z.object({ badge: Badge }),
    }),
    async (c) => {
      const [badge] = await badgesOf(c.var.db, [c.req.valid('param').userId])
      if (!badge) throw notFound('User not found')
      return c.json({ badge })
    },
  )
  .openapi(
    endpoint({
      method: 'post',
      path: '/encouragement-drops/badge/update',
      tag,
      auth: 'bearer',
      summary: "Recalculate the caller's badge",
      response: z.object({ badge: Badge }),
    }),
    async (c) => {
      unwrap(await c.var.db.rpc('update_my_encouragement_badge'))
      return c.json({ badge: (await badgesOf(c.var.db, [c.var.caller.id]))[0] })
    },
  )
  .openapi(
    endpoint({
      method: 'post',
      path: '/encouragement-drops/badges/bulk',
      tag,
      auth: 'bearer',
      body: z.object({ user_ids: z.array(uuid()).min(1).max(100) }).strict().openapi('BulkBadgesRequest'),
      summary: 'Badges of up to 100 users (unknown ids are left out)',
      response: z.object({ badges: z.array(Badge) }),
    }),
    async (c) => c.json({ badges: await badgesOf(c.var.db, c.req.valid('json').user_ids) }),
  )
  .openapi(
    endpoint({
      method: 'get',
      path: '/encouragement-drops/leaderboard',
      tag,
      auth: 'bearer',
      query: z.object({
        limit: z.coerce.number().int().min(1).max(100).default(50),
        org_id: uuid().optional().openapi({
          description: "Only this organization's members; the caller must be one (else 403)",
        }),
      }).strict(),
      errors: [403],
      summary: 'Top encouragers: engagement increases, then success rate (both descending; ties by user id)',
      description: 'The whole platform, or with org_id one organization the caller belongs to ' +
        '(PostgREST: rpc("encouragement_leaderboard", {max_rows, org_id})).',
      response: z.object({ leaderboard: z.array(LeaderboardRow) }),
    }),
    async (c) => {
      const { limit, org_id } = c.req.valid('query')
      const rows = unwrap(
        await c.var.db.rpc('encouragement_leaderboard', givenArgs({ max_rows: limit, org_id })),
      ) as z.infer<typeof LeaderboardRow>[]
      return c.json({ leaderboard: rows.map((r) => ({ ...r, success_rate: Number(r.success_rate) })) })
    },
  )
  .openapi(
    endpoint({
      method: 'get',
      path: '/encouragement-drops/badge-definitions',
      tag,
      auth: 'bearer',
      summary: 'The badge ladder',
      response: z.object({ definitions: z.array(Definition) }),
    }),
    async (c) => {
      const rows = unwrap(await c.var.db.from('encouragement_badge_definitions').select('*').order('level'))
      return c.json({
        definitions: rows.map((d) => ({
          ...d,
          min_success_rate: d.min_success_rate === null ? null : Number(d.min_success_rate),
        })),
      })
    },
  )
