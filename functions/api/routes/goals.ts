// Goals and check-ins (SPEC "Goal and goal check-in"): each user's own.
import { Hono } from 'hono'
import { z } from 'zod'
import { refuseWrite } from '../../_shared/access.ts'
import { badRequest, notFound, unwrap } from '../../_shared/errors.ts'
import { newestFirstPage, pageQuery } from '../../_shared/pagination.ts'
import { pathUuid, readJson, readQuery } from '../../_shared/validation.ts'
import { type ApiEnv, bearer } from '../credentials.ts'

const COLUMNS = 'id, user_id, title, description, target_date, status, created_at, updated_at'
const CHECK_IN_COLUMNS = 'id, goal_id, user_id, status, notes, created_at'

const isoDate = z.string({ invalid_type_error: 'target_date must be a string' })
  .regex(/^\d{4}-\d{2}-\d{2}$/, 'target_date must be YYYY-MM-DD')
  .refine((d) => !isNaN(Date.parse(`${d}T00:00:00Z`)) && new Date(`${d}T00:00:00Z`).toISOString().startsWith(d), 'target_date is not a calendar date')
const status = (field: string) =>
  z.string({ invalid_type_error: `${field} must be a string` }).trim().min(1, `${field} must not be empty`).max(30, `${field} must be at most 30 characters`)

const goalFields = {
  title: z.string({ required_error: 'title is required', invalid_type_error: 'title must be a string' })
    .trim().min(1, 'title must not be empty').max(200, 'title must be at most 200 characters'),
  description: z.string({ invalid_type_error: 'description must be a string' }).max(5000, 'description must be at most 5000 characters'),
  target_date: isoDate.nullable(),
  status: status('status'),
}

const NewGoal = z.object({
  title: goalFields.title,
  description: goalFields.description.optional(),
  target_date: goalFields.target_date.optional(),
  status: goalFields.status.optional(),
}).strict()
const GoalPatch = z.object({
  title: goalFields.title.optional(),
  description: goalFields.description.optional(),
  target_date: goalFields.target_date.optional(),
  status: goalFields.status.optional(),
}).strict()
const NewCheckIn = z.object({
  status: status('status').default('completed'),
  notes: z.string({ invalid_type_error: 'notes must be a string' }).max(5000, 'notes must be at most 5000 characters').default(''),
}).strict()
const ListQuery = z.object({ ...pageQuery, status: status('status').optional() }).strict()


export const goalRoutes = new Hono<ApiEnv>()
  .get('/goals', bearer, async (c) => {
    const q = readQuery(c, ListQuery)
    let query = c.var.db.from('goals').select(COLUMNS).eq('user_id', c.var.caller.id)
    if (q.status) query = query.eq('status', q.status)
    const { items, next_cursor } = await newestFirstPage(query, q)
    return c.json({ goals: items, next_cursor })
  })
  .get('/goals/:id', bearer, async (c) => {
    const id = pathUuid(c)
    const goal = unwrap(
      await c.var.db.from('goals').select(`${COLUMNS}, check_ins:goal_check_ins(${CHECK_IN_COLUMNS})`).eq('id', id)
        .order('created_at', { referencedTable: 'goal_check_ins', ascending: false }).maybeSingle(),
    )
    if (!goal) throw notFound('Goal not found')
    return c.json(goal)
  })
  .post('/goals', bearer, async (c) => {
    const body = await readJson(c, NewGoal)
    return c.json(unwrap(await c.var.db.from('goals').insert(body).select(COLUMNS).single()), 201)
  })
  .put('/goals/:id', bearer, async (c) => {
    const id = pathUuid(c)
    const patch = await readJson(c, GoalPatch)
    if (Object.keys(patch).length === 0) throw badRequest('Nothing to update')
    const rows = unwrap(await c.var.db.from('goals').update(patch).eq('id', id).select(COLUMNS))
    if (!rows.length) await refuseWrite(c.var.db, 'goals', { id }, 'goal')
    return c.json(rows[0])
  })
  .delete('/goals/:id', bearer, async (c) => {
    const id = pathUuid(c)
    const rows = unwrap(await c.var.db.from('goals').delete().eq('id', id).select('id'))
    if (!rows.length) await refuseWrite(c.var.db, 'goals', { id }, 'goal')
    return c.json({ message: 'Goal deleted' })
  })
  .post('/goals/:id/check-ins', bearer, async (c) => {
    const id = pathUuid(c)
    const body = await readJson(c, NewCheckIn)
    const goal = unwrap<{ user_id: string } | null>(await c.var.db.from('goals').select('user_id').eq('id', id).maybeSingle())
    if (!goal) throw notFound('Goal not found')
    if (goal.user_id !== c.var.caller.id) await refuseWrite(c.var.db, 'goals', { id }, 'goal')
    const checkIn = unwrap(await c.var.db.from('goal_check_ins').insert({ goal_id: id, ...body }).select(CHECK_IN_COLUMNS).single())
    return c.json(checkIn, 201)
  })
