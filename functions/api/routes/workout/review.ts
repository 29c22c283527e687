// Super admins: the check-ins that did not verify themselves wait here for a verdict; a
// rejected check-in's chips stop counting.
import { z } from '@hono/zod-openapi'
import { idParams } from '../../../_shared/validation.ts'
import { endpoint, routeModule } from '../../openapi.ts'
import { unwrap } from '../../../_shared/errors.ts'
import { base, Checkin, PageQuery, tag, UserCard } from './shared.ts'

const ReviewQuery = z.object({
  status: z.enum(['pending', 'verified', 'rejected']).default('pending'),
  ...PageQuery,
}).strict()
const VerifyBody = z.object({ reason: z.string().trim().min(1).max(500).optional() }).strict()
const RejectBody = z.object({ reason: z.string().trim().min(1).max(500) }).strict()

/** A check-in in the queue (the jsonb items of workout_review_queue), with who made it. */
const QueuedCheckin = Checkin.extend({ user: UserCard })

export const reviewRoutes = routeModule()
  .openapi(
    endpoint({
      method: 'get',
      path: `${base}/admin/checkins`,
      tag,
      auth: 'superAdmin',
      query: ReviewQuery,
      summary: 'Check-ins by review status (pending by default), newest first',
      response: z.object({ checkins: z.array(QueuedCheckin) }),
    }),
    async (c) => {
      const q = c.req.valid('query')
      const checkins = unwrap(
        await c.var.db.rpc('workout_review_queue', {
          review_status: q.status,
          page_size: q.limit,
          before_created_at: q.before ?? null,
        }),
      )
      return c.json({ checkins })
    },
  )
  .openapi(
    endpoint({
      method: 'post',
      path: `${base}/admin/checkins/{id}/verify`,
      tag,
      auth: 'superAdmin',
      params: idParams('id'),
      body: VerifyBody,
      bodyRequired: false,
      summary: 'Verify a check-in',
      response: z.object({ checkin: Checkin }),
    }),
    async (c) => {
      const checkin = unwrap(
        await c.var.db.rpc('review_workout_checkin', {
          checkin_id: c.req.valid('param').id,
          verdict: 'verified',
          reason: c.req.valid('json')?.reason ?? null,
        }),
      )
      return c.json({ checkin })
    },
  )
  .openapi(
    endpoint({
      method: 'post',
      path: `${base}/admin/checkins/{id}/reject`,
      tag,
      auth: 'superAdmin',
      params: idParams('id'),
      body: RejectBody,
      summary: 'Reject a check-in (its chips stop counting)',
      response: z.object({ checkin: Checkin }),
    }),
    async (c) => {
      const checkin = unwrap(
        await c.var.db.rpc('review_workout_checkin', {
          checkin_id: c.req.valid('param').id,
          verdict: 'rejected',
          reason: c.req.valid('json').reason,
        }),
      )
      return c.json({ checkin })
    },
  )
