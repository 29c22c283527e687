// Notifications (table public.notifications): what a user
// is told (workout baton pass, reminders, chain broken, battle results, memberships). Read
// through the caller's token, so RLS shows only their own; Realtime can push the same rows.
import { z } from '@hono/zod-openapi'
import { unwrap } from '../../../_shared/errors.ts'
import { newestFirstPage, pageQuery } from '../../../_shared/pagination.ts'
import { uuid } from '../../../_shared/validation.ts'
import { endpoint, NextCursor, routeModule } from '../../openapi.ts'

const tag = 'Notifications'

const Notification = z.object({
  id: z.string(),
  user_id: z.string(),
  type: z.string().describe(
    'area.event, e.g. workout.baton_pass, workout.checkin_reminder, workout.chain_broken, workout.battle_result',
  ),
  payload: z.record(z.string(), z.unknown()),
  created_at: z.string(),
  read_at: z.string().nullable(),
}).openapi('Notification')

export const inboxRoutes = routeModule()
  .openapi(
    endpoint({
      method: 'get',
      path: '/notifications',
      tag,
      auth: 'bearer',
      query: z.object({
        ...pageQuery,
        unread: z.enum(['true', 'false']).optional(),
        type: z.string().max(100).optional(),
      }).strict(),
      summary: "The caller's notifications, newest first",
      response: z.object({ notifications: z.array(Notification), next_cursor: NextCursor }),
    }),
    async (c) => {
      const q = c.req.valid('query')
      let query = c.var.db.from('notifications').select('*').eq('user_id', c.var.caller.id)
      if (q.unread === 'true') query = query.is('read_at', null)
      if (q.unread === 'false') query = query.not('read_at', 'is', null)
      if (q.type) query = query.eq('type', q.type)
      const { items, next_cursor } = await newestFirstPage(query, q)
      return c.json({ notifications: items, next_cursor })
    },
  )
  .openapi(
    endpoint({
      method: 'post',
      path: '/notifications/read',
      tag,
      auth: 'bearer',
      bodyRequired: false,
      body: z.object({ ids: z.array(uuid()).min(1).max(500).optional() }).strict(),
      summary: 'Mark the given notifications (or all) read',
      response: z.object({ marked: z.number().int() }),
      description:
        'A notification read is not pushed any more (if it was still waiting) and is left out of the e-mail digest.',
    }),
    async (c) => {
      const ids = c.req.valid('json')?.ids ?? null
      const marked = unwrap(await c.var.db.rpc('mark_notifications_read', { notification_ids: ids }))
      return c.json({ marked })
    },
  )
