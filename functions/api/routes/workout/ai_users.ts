// Super admins: synthetic users, created in bulk with SPEC's distributions (regions,
// activities, windows), who check in with a stock photo; and a date's teams, AI versus real.
import { z } from '@hono/zod-openapi'
import { StorageError, uploadObject } from '../../../_shared/storage.ts'
import { idParams } from '../../../_shared/validation.ts'
import { drawMosaic, layoutMosaic, type Participant } from './mosaic_image.ts'
import { endpoint, Message, routeModule } from '../../openapi.ts'
import { unwrap } from '../../../_shared/errors.ts'
import { base, CHECKIN_BUCKET, DateParams, tag } from './shared.ts'

const AiUser = z.object({
  id: z.string(),
  fullName: z.string().nullable(),
  isAi: z.boolean(),
  isActive: z.boolean(),
  region: z.string(),
  city: z.string(),
  state: z.string().nullable(),
  timezone: z.string(),
  activityType: z.string(),
  windowStartTime: z.string(),
  windowEndTime: z.string(),
  checkInProbability: z.number(),
  createdAt: z.string(),
}).openapi('WorkoutAiUser')

const Weights = z.record(z.string().max(50), z.number().min(0).max(1_000_000))
const AiGenerate = z.object({
  count: z.number().int().min(1).max(1000),
  config: z.object({
    regions: Weights.optional(),
    activities: Weights.optional(),
    windows: Weights.optional().describe('Start time HH:MM to weight; each window is 2 hours'),
    checkInProbability: z.number().min(0).max(1).optional(),
  }).strict().optional(),
}).strict().openapi('WorkoutAiGenerate')
const ToggleBody = z.object({ isActive: z.boolean() }).strict()

/** The stock image synthetic users check in with (stored once; a repeat is refused and ignored). */
async function ensureStockPhoto() {
  const participant: Participant = {
    userId: 'stock',
    userName: 'stock',
    teamColor: 'blue',
    status: 'completed',
  }
  const png = drawMosaic(layoutMosaic([participant]))
  await uploadObject(CHECKIN_BUCKET, 'stock/ai-checkin.png', png, 'image/png').catch((e) => {
    if (!(e instanceof StorageError) || (e.status !== 409 && e.status !== 400)) {
      console.error('stock photo:', e)
    }
  })
}

// The replies below are the jsonb results of the synthetic-user functions, passed on as they are.
const AiUsersCreated = z.object({
  created: z.number().int(),
  failed: z.number().int(),
  users: z.array(AiUser),
  errors: z.array(z.string()),
})
const DayTeams = z.object({ redTeam: z.unknown(), blueTeam: z.unknown() })

export const aiUserRoutes = routeModule()
  .openapi(
    endpoint({
      method: 'post',
      path: `${base}/admin/ai-users/generate`,
      tag,
      auth: 'superAdmin',
      body: AiGenerate,
      status: 201,
      summary:
        'Create 1..1000 synthetic users in bulk (SPEC rule 5 distributions unless config says otherwise)',
      response: AiUsersCreated,
    }),
    async (c) => {
      const b = c.req.valid('json')
      const result = unwrap(
        await c.var.db.rpc('generate_ai_users', { how_many: b.count, config: b.config ?? null }),
      )
      await ensureStockPhoto()
      return c.json(result, 201)
    },
  )
  .openapi(
    endpoint({
      method: 'get',
      path: `${base}/admin/ai-users`,
      tag,
      auth: 'superAdmin',
      query: z.object({
        limit: z.coerce.number().int().min(1).max(1000).default(1000),
        after: z.guid().optional(),
      }).strict(),
      summary: 'Synthetic users with their profiles (by id; pass the last id as after for more)',
      response: z.object({ users: z.array(AiUser) }),
    }),
    async (c) => {
      const q = c.req.valid('query')
      return c.json({
        users: unwrap(await c.var.db.rpc('list_ai_users', { page_size: q.limit, after_id: q.after ?? null })),
      })
    },
  )
  .openapi(
    endpoint({
      method: 'delete',
      path: `${base}/admin/ai-users/{id}`,
      tag,
      auth: 'superAdmin',
      params: idParams('id'),
      summary: 'Remove a synthetic user and all their data (a real user is 404 and untouched)',
      response: Message,
    }),
    async (c) => {
      unwrap(await c.var.db.rpc('delete_ai_user', { target_user: c.req.valid('param').id }))
      return c.json({ message: 'AI user deleted' })
    },
  )
  .openapi(
    endpoint({
      method: 'put',
      path: `${base}/admin/ai-users/{id}/toggle`,
      tag,
      auth: 'superAdmin',
      params: idParams('id'),
      body: ToggleBody,
      summary: 'Activate or pause a synthetic user',
      response: z.object({ user: AiUser }),
    }),
    async (c) => {
      const user = unwrap(
        await c.var.db.rpc('toggle_ai_user', {
          target_user: c.req.valid('param').id,
          active: c.req.valid('json').isActive,
        }),
      )
      return c.json({ user })
    },
  )
  .openapi(
    endpoint({
      method: 'get',
      path: `${base}/admin/teams/{date}`,
      tag,
      auth: 'superAdmin',
      params: DateParams,
      summary: "A date's red and blue teams and squads, AI versus real members",
      response: DayTeams,
    }),
    async (c) =>
      c.json(unwrap(await c.var.db.rpc('admin_workout_teams', { target: c.req.valid('param').date }))),
  )
