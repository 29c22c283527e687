// The kit waitlist: one signup per address (the same answer either way), and the super admins'
// view of whether the launch gate is met.
import { z } from '@hono/zod-openapi'
import { userDb } from '../../../_shared/db.ts'
import { optionalEnv, requiredEnv } from '../../../_shared/env.ts'
import { badRequest, unwrap } from '../../../_shared/errors.ts'
import { newestFirstPage, pageQuery } from '../../../_shared/pagination.ts'
import { isoDate } from '../../../_shared/validation.ts'
import { endpoint, NextCursor, routeModule } from '../../openapi.ts'
import { email, tag } from './shared.ts'

export const kitWaitlistRoutes = routeModule()
  .openapi(
    endpoint({
      method: 'post',
      path: '/labs/kit-waitlist',
      tag,
      auth: 'none',
      status: 202,
      body: z.object({ email }).strict(),
      summary: 'Join the kit waitlist (one signup per address; the reply is the same either way)',
      response: z.object({ message: z.string() }),
    }),
    async (c) => {
      // A plain insert as anonymous, as any PostgREST client makes it: the table's trigger skips
      // an address already listed, so the answer is the same either way.
      unwrap(
        await userDb(requiredEnv('SUPABASE_ANON_KEY')).from('labs_kit_waitlist').insert({
          email: c.req.valid('json').email,
        }),
      )
      return c.json({ message: 'You are on the kit waitlist' }, 202)
    },
  )
  .openapi(
    endpoint({
      method: 'get',
      path: '/labs/admin/kit-waitlist',
      tag,
      auth: 'superAdmin',
      query: z.object({
        ...pageQuery,
        launch_date: isoDate().optional().openapi({
          description: 'Overrides LABS_KIT_LAUNCH_DATE (for what-if views)',
        }),
      }).strict(),
      summary:
        'Kit waitlist signups and whether the gate is met: more than 200 signups within 30 days of launch (super admin)',
      response: z.object({
        signups: z.array(z.object({ id: z.string(), email: z.string(), created_at: z.string() })),
        next_cursor: NextCursor,
        total: z.number().int(),
        launch_date: z.string().nullable(),
        signups_within_30_days_of_launch: z.number().int().nullable(),
        gate_met: z.boolean().nullable(),
      }),
    }),
    async (c) => {
      const q = c.req.valid('query')
      const launch = q.launch_date ?? optionalEnv('LABS_KIT_LAUNCH_DATE') ?? null
      if (launch && !isoDate().safeParse(launch).success) {
        throw badRequest('LABS_KIT_LAUNCH_DATE: not a date (YYYY-MM-DD)')
      }
      const [gate, signups] = await Promise.all([
        c.var.db.rpc('labs_kit_waitlist_gate', { launch_date: launch }).single(),
        newestFirstPage(c.var.db.from('labs_kit_waitlist').select('id, email, created_at'), q),
      ])
      const g = unwrap(gate)
      return c.json({
        signups: signups.items,
        next_cursor: signups.next_cursor,
        total: g.total,
        launch_date: launch,
        signups_within_30_days_of_launch: g.within_launch_window,
        gate_met: g.gate_met,
      })
    },
  )
