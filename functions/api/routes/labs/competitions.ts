// Competitions: super admins create and open them with a scoring config; users join; scores
// count activity on curated templates and are recomputed on a schedule into a leaderboard.
import { z } from '@hono/zod-openapi'
import type { Db } from '../../../_shared/db.ts'
import { unwrap } from '../../../_shared/errors.ts'
import { newestFirstPage, pageQuery } from '../../../_shared/pagination.ts'
import { endpoint, NextCursor, routeModule } from '../../openapi.ts'
import { Row, tag, text } from './shared.ts'

const RecomputeReply = z.object({
  success: z.literal(true),
  competitions: z.array(
    z.object({ slug: z.string(), participants: z.number().int(), scored_at: z.string() }),
  ),
})

/** The recompute job's work, for the cron route and a super admin's "recompute now" alike. */
async function recompute(db: Db, who: string) {
  console.log(`labs recompute-competitions (${who}): start`)
  const rows = unwrap(await db.rpc('labs_recompute_competitions'))
  console.log(`labs recompute-competitions (${who}): ${rows.length} competitions rescored`)
  return { success: true as const, competitions: rows }
}

/** A competition weight: an integer from 0 to 1000. */
const weight = () => z.number().int().min(0).max(1000)

export const competitionRoutes = routeModule()
  .openapi(
    endpoint({
      method: 'post',
      path: '/labs/admin/competitions',
      tag,
      auth: 'superAdmin',
      status: 201,
      errors: [409],
      body: z.object({
        slug: z.string().regex(
          /^[a-z0-9][a-z0-9-]{0,79}$/,
          'lower-case letters, digits and dashes (at most 80)',
        ),
        title: text(200),
        starts_at: z.iso.datetime({ offset: true }).optional(),
        ends_at: z.iso.datetime({ offset: true }).optional(),
        scoring_config: z.object({
          clone: weight(),
          completion: weight(),
          replication_confirmed: weight(),
          replication_refuted: weight(),
          build: weight(),
        }).partial().strict().optional(),
      }).strict(),
      summary:
        'Create a competition (super admin); scoring_config defaults to clone 1, completion 5, replication_confirmed 25, replication_refuted 5, build 10',
      response: z.object({ competition: Row }),
    }),
    async (c) => {
      const b = c.req.valid('json')
      const row = unwrap(
        await c.var.db.rpc('labs_create_competition', {
          slug: b.slug,
          title: b.title,
          starts_at: b.starts_at ?? null,
          ends_at: b.ends_at ?? null,
          scoring_config: b.scoring_config ?? null,
        }),
      )
      return c.json({ competition: row }, 201)
    },
  )
  .openapi(
    endpoint({
      method: 'patch',
      path: '/labs/admin/competitions/{slug}',
      tag,
      auth: 'superAdmin',
      params: z.object({ slug: z.string().max(80).openapi({ param: { name: 'slug', in: 'path' } }) }),
      body: z.object({ is_active: z.boolean().optional(), entry_open: z.boolean().optional() }).strict(),
      summary: 'Open, close, activate or retire a competition (super admin)',
      response: z.object({ competition: Row }),
    }),
    async (c) => {
      const b = c.req.valid('json')
      const row = unwrap(
        await c.var.db.rpc('labs_update_competition', {
          slug: c.req.valid('param').slug,
          is_active: b.is_active ?? null,
          entry_open: b.entry_open ?? null,
        }),
      )
      return c.json({ competition: row })
    },
  )
  .openapi(
    endpoint({
      method: 'post',
      path: '/labs/competitions/{slug}/join',
      tag,
      auth: 'bearer',
      errors: [409],
      params: z.object({ slug: z.string().max(80).openapi({ param: { name: 'slug', in: 'path' } }) }),
      summary: 'Enter an active competition while entries are open (again: no change)',
      response: z.object({ participant: Row }),
    }),
    async (c) => {
      const row = unwrap(await c.var.db.rpc('labs_join_competition', { slug: c.req.valid('param').slug }))
      return c.json({ participant: row })
    },
  )
  .openapi(
    endpoint({
      method: 'get',
      path: '/labs/competitions/{slug}/leaderboard',
      tag,
      auth: 'bearer',
      params: z.object({ slug: z.string().max(80).openapi({ param: { name: 'slug', in: 'path' } }) }),
      query: z.object({ limit: z.coerce.number().int().min(1).max(100).default(50) }).strict(),
      summary: 'Ranking of a competition as last scored (default 50)',
      response: z.object({
        slug: z.string(),
        leaderboard: z.array(
          z.object({
            rank: z.number().int(),
            user_id: z.string(),
            full_name: z.string().nullable(),
            score: z.number().int(),
          }),
        ),
      }),
    }),
    async (c) => {
      const slug = c.req.valid('param').slug
      const rows = unwrap(
        await c.var.db.rpc('labs_leaderboard', { slug, page_size: c.req.valid('query').limit }),
      )
      return c.json({
        slug,
        leaderboard: rows.map((r) => ({
          rank: Number(r.rank),
          user_id: r.user_id,
          full_name: r.full_name,
          score: r.score,
        })),
      })
    },
  )
  .openapi(
    endpoint({
      method: 'post',
      path: '/cron/labs/recompute-competitions',
      tag,
      auth: { cronBearer: 'frontend' },
      bodyRequired: false,
      summary:
        'Rescore every active, open competition and set last_scored_at (Authorization: Bearer <CRON_SECRET>)',
      response: RecomputeReply,
    }),
    async (c) => c.json(await recompute(c.var.db, 'cron')),
  )
  .openapi(
    endpoint({
      method: 'get',
      path: '/labs/admin/competitions',
      tag,
      auth: 'superAdmin',
      query: z.object(pageQuery).strict(),
      summary: 'Every competition, retired ones too, newest first, with its participant count (super admin)',
      response: z.object({ competitions: z.array(Row), next_cursor: NextCursor }),
    }),
    async (c) => {
      const page = await newestFirstPage(
        c.var.db.from('labs_competitions').select(
          'id, slug, title, is_active, entry_open, starts_at, ends_at, last_scored_at, scoring_config, created_at, labs_competition_participants(count)',
        ),
        c.req.valid('query'),
      )
      return c.json({
        competitions: page.items.map(({ labs_competition_participants: p, ...row }) => ({
          ...row,
          participants: (p as { count: number }[] | null)?.[0]?.count ?? 0,
        })),
        next_cursor: page.next_cursor,
      })
    },
  )
  .openapi(
    endpoint({
      method: 'post',
      path: '/labs/admin/competitions/recompute',
      tag,
      auth: 'superAdmin',
      bodyRequired: false,
      summary:
        'Recompute now (super admin): the recompute-competitions job, run at once with the admin\'s own credential',
      description: 'Same work as POST /api/cron/labs/recompute-competitions: every active, open competition is rescored and gets last_scored_at.',
      response: RecomputeReply,
    }),
    async (c) => c.json(await recompute(c.var.db, `super admin ${c.var.caller.id}`)),
  )
