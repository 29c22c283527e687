// Super admins: the user list with balances and this month's AI usage, role changes, and the
// tokens-to-drops conversion rate (SPEC "Token tracking and conversion (super admin)"). The
// database decides every rule (admin_list_users, set_user_role, RLS on the rates).
import { z } from '@hono/zod-openapi'
import { badRequest, notFound, unwrap } from '../../_shared/errors.ts'
import { decodeCursor, encodeCursor, page, pageQuery } from '../../_shared/pagination.ts'
import { idParams } from '../../_shared/validation.ts'
import { endpoint, NextCursor, orNull, routeModule } from '../openapi.ts'
import { UsageSummary } from './ai.ts'

const ROLES = ['user', 'super_admin'] as const

const UsersQuery = z.object({
  ...pageQuery,
  q: z.string().trim().min(1).max(200).optional().openapi({
    description:
      'Part of the e-mail address or the name (case-insensitive); a term with an @ after its first ' +
      'character is an address or its start ("sam@ex" finds sam@example.com, not tosam@example.com)',
  }),
}).strict()

const AdminUser = z.object({
  id: z.string(),
  email: z.string().nullable(),
  full_name: z.string().nullable(),
  role: z.enum(ROLES),
  is_ai: z.boolean(),
  is_active: z.boolean(),
  drops_balance: z.number().int(),
  created_at: z.string(),
  token_usage: UsageSummary.openapi({ description: 'This calendar month (UTC)' }),
}).openapi('AdminUser')

const RoleChangeRow = z.object({
  id: z.number().int(),
  user_id: z.string(),
  old_role: z.string(),
  new_role: z.string(),
  changed_by: z.string().nullable(),
  changed_via: z.string(),
  created_at: z.string(),
}).openapi('RoleChangeAudit')
/** How many of a user's role changes GET /admin/users/{id} carries (newest first). */
const ROLE_CHANGES_SHOWN = 20

const RoleBody = z.object({ role: z.enum(ROLES) }).strict()
const RoleChange = z.object({
  id: z.string(),
  role: z.enum(ROLES),
  previous_role: z.enum(ROLES),
  changed: z.boolean().openapi({ description: 'false when the user already had the role (nothing audited)' }),
}).openapi('RoleChange')

const Rate = z.object({
  id: z.number().int(),
  tokens_per_drop: z.number(),
  effective_at: z.string(),
  created_by: z.string().nullable(),
  created_at: z.string(),
}).openapi('ConversionRate')
const NewRate = z.object({
  tokens_per_drop: z.number().min(0.0001).max(1e15)
    .openapi({ description: 'How many AI tokens make one drop (positive; 4 decimals kept)' }),
  effective_at: z.iso.datetime({ offset: true }).optional()
    .openapi({ description: 'Default now; a later moment schedules the rate; the past is refused' }),
}).strict()

const RATE_COLUMNS = 'id, tokens_per_drop, effective_at, created_by, created_at'
const tag = 'Admin'

export const adminUserRoutes = routeModule()
  .openapi(
    endpoint({
      method: 'get',
      path: '/admin/users',
      tag,
      auth: 'superAdmin',
      query: UsersQuery,
      response: z.object({ users: z.array(AdminUser), next_cursor: NextCursor }),
      summary: "Users, newest first, with drops balance and this month's token usage",
      description: 'Searchable by e-mail or name (`q`); one database query per page.',
    }),
    async (c) => {
      const q = c.req.valid('query')
      const cursor = decodeCursor(q.before)
      const rows = unwrap(
        await c.var.db.rpc('admin_list_users', {
          search: q.q ?? null,
          before_created_at: cursor?.createdAt ?? null,
          before_id: cursor?.id ?? null,
          page_size: q.limit + 1,
        }),
      )
      const { items, next_cursor } = page(rows, q.limit)
      return c.json({ users: items, next_cursor })
    },
  )
  .openapi(
    endpoint({
      method: 'get',
      path: '/admin/users/{id}',
      tag,
      auth: 'superAdmin',
      params: idParams('id'),
      errors: [404],
      response: z.object({ user: AdminUser, role_changes: z.array(RoleChangeRow) }),
      summary: "One user as the list shows them, with their latest role changes (the console's user page)",
      description: `The user's row of GET /admin/users and their last ${ROLE_CHANGES_SHOWN} role changes, newest first ` +
        '(who changed it and through which role). 404 when there is no such user.',
    }),
    async (c) => {
      const { id } = c.req.valid('param')
      const [user, changes] = await Promise.all([
        c.var.db.rpc('admin_get_user', { target_user_id: id }).maybeSingle(),
        c.var.db.from('role_changes').select('id, user_id, old_role, new_role, changed_by, changed_via, created_at')
          .eq('user_id', id).order('created_at', { ascending: false }).order('id', { ascending: false })
          .limit(ROLE_CHANGES_SHOWN),
      ])
      const row = unwrap(user)
      if (!row) throw notFound('No such user')
      return c.json({ user: row as z.infer<typeof AdminUser>, role_changes: unwrap(changes) })
    },
  )
  .openapi(
    endpoint({
      method: 'put',
      path: '/admin/users/{id}/role',
      tag,
      auth: 'superAdmin',
      params: idParams('id'),
      body: RoleBody,
      response: RoleChange,
      errors: [409],
      summary: "Change a user's role (user or super_admin)",
      description:
        'Audited in role_changes (who, whom, old and new role, when). The last super admin cannot be ' +
        "demoted (409). Takes effect on the user's next request.",
    }),
    async (c) => {
      const { id } = c.req.valid('param')
      const { role } = c.req.valid('json')
      return c.json(unwrap(await c.var.db.rpc('set_user_role', { user_id: id, role })))
    },
  )
  .openapi(
    endpoint({
      method: 'get',
      path: '/admin/conversion/rates',
      tag,
      auth: 'superAdmin',
      query: z.object(pageQuery).strict(),
      response: z.object({ current: orNull(Rate), history: z.array(Rate), next_cursor: NextCursor }),
      summary: 'The tokens-to-drops rate in force and every rate ever set (newest effective first)',
    }),
    async (c) => {
      const q = c.req.valid('query')
      const cursor = decodeCursor(q.before)
      let query = c.var.db.from('token_conversion_rates').select(RATE_COLUMNS)
      if (cursor) {
        const t = JSON.stringify(cursor.createdAt)
        if (!/^\d+$/.test(cursor.id)) throw badRequest('before: not a valid cursor')
        query = query.or(`effective_at.lt.${t},and(effective_at.eq.${t},id.lt.${cursor.id})`)
      }
      const [current, rows] = await Promise.all([
        c.var.db.rpc('current_token_conversion_rate').select(RATE_COLUMNS).maybeSingle(),
        query.order('effective_at', { ascending: false }).order('id', { ascending: false }).limit(
          q.limit + 1,
        ),
      ])
      const rates = unwrap(rows)
      const history = rates.slice(0, q.limit)
      const last = history[history.length - 1]
      return c.json({
        current: unwrap(current),
        history,
        next_cursor: rates.length > q.limit
          ? encodeCursor({ created_at: last.effective_at, id: last.id })
          : null,
      })
    },
  )
  .openapi(
    endpoint({
      method: 'post',
      path: '/admin/conversion/rates',
      tag,
      auth: 'superAdmin',
      body: NewRate,
      status: 201,
      response: z.object({ rate: Rate, current: orNull(Rate) }),
      summary: 'Set a new tokens-to-drops rate',
      description: 'In force at once (or from effective_at); earlier rates stay in the history unchanged.',
    }),
    async (c) => {
      const body = c.req.valid('json')
      const rate = unwrap(
        await c.var.db.from('token_conversion_rates').insert(body).select(RATE_COLUMNS).single(),
      )
      const current = unwrap(
        await c.var.db.rpc('current_token_conversion_rate').select(RATE_COLUMNS).maybeSingle(),
      )
      return c.json({ rate, current: current as z.infer<typeof Rate> | null }, 201)
    },
  )
