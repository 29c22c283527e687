// Goals and check-ins (SPEC "Goal and goal check-in"): each user's own.
import { z } from '@hono/zod-openapi'
import { refuseWrite } from '../../_shared/access.ts'
import type { Db } from '../../_shared/db.ts'
import { badRequest, notFound, unwrap } from '../../_shared/errors.ts'
import { ifMatchOf, ifStillCurrent, sendETag } from '../../_shared/etag.ts'
import { newestFirstPage, pageQuery } from '../../_shared/pagination.ts'
import { clientChosenId, idParams, isoDate } from '../../_shared/validation.ts'
import { insertOnce } from '../../_shared/create_once.ts'
import { endpoint, Message, NextCursor, routeModule } from '../openapi.ts'

const COLUMNS = 'id, user_id, title, description, target_date, status, created_at, updated_at, row_version'
const CHECK_IN_COLUMNS = 'id, goal_id, user_id, status, notes, created_at'

const status = () => z.string().trim().min(1).max(30)
const goalFields = {
  title: z.string().trim().min(1).max(200),
  description: z.string().max(5000),
  target_date: isoDate().nullable(),
  status: status(),
}

const NewGoal = z.object({
  title: goalFields.title,
  description: goalFields.description.optional(),
  target_date: goalFields.target_date.optional(),
  status: goalFields.status.optional(),
}).strict()
const GoalPatch = NewGoal.partial().strict()
const NewGoalWithId = NewGoal.extend({ id: clientChosenId() }).strict()
const NewCheckIn = z.object({
  status: status().default('completed'),
  notes: z.string().max(5000).default(''),
  id: clientChosenId(),
}).strict()
const ListQuery = z.object({ ...pageQuery, status: status().optional() }).strict()

const Goal = z.object({
  id: z.string(),
  user_id: z.string(),
  title: z.string(),
  description: z.string().nullable(),
  target_date: z.string().nullable(),
  status: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
  row_version: z.string().describe(
    "The goal's version (its ETag): changes with every write of the goal (not with its check-ins); send it as If-Match to write only over what was read",
  ),
}).openapi('Goal')
const CheckIn = z.object({
  id: z.string(),
  goal_id: z.string(),
  user_id: z.string(),
  status: z.string(),
  notes: z.string(),
  created_at: z.string(),
}).openapi('GoalCheckIn')

const tag = 'Goals'
const goalId = idParams('id')
const versioned = { field: 'goal', schema: Goal }

/** A goal the caller may see, or null. */
const readGoal = async (db: Db, id: string) => unwrap(await db.from('goals').select(COLUMNS).eq('id', id).maybeSingle())

export const goalRoutes = routeModule()
  .openapi(
    endpoint({
      method: 'get',
      path: '/goals',
      tag,
      auth: 'bearer',
      query: ListQuery,
      summary: "The caller's goals, newest first",
      response: z.object({ goals: z.array(Goal), next_cursor: NextCursor }),
    }),
    async (c) => {
      const q = c.req.valid('query')
      let query = c.var.db.from('goals').select(COLUMNS).eq('user_id', c.var.caller.id)
      if (q.status) query = query.eq('status', q.status)
      const { items, next_cursor } = await newestFirstPage(query, q)
      return c.json({ goals: items, next_cursor })
    },
  )
  .openapi(
    endpoint({
      method: 'get',
      path: '/goals/{id}',
      tag,
      auth: 'bearer',
      params: goalId,
      summary: 'A goal with its check-ins',
      response: Goal.extend({ check_ins: z.array(CheckIn) }),
      versioned,
    }),
    async (c) => {
      const { id } = c.req.valid('param')
      const goal = unwrap(
        await c.var.db.from('goals').select(`${COLUMNS}, check_ins:goal_check_ins(${CHECK_IN_COLUMNS})`).eq(
          'id',
          id,
        )
          .order('created_at', { referencedTable: 'goal_check_ins', ascending: false }).maybeSingle(),
      )
      if (!goal) throw notFound('Goal not found')
      return c.json(sendETag(c, goal))
    },
  )
  .openapi(
    endpoint({
      method: 'post',
      path: '/goals',
      tag,
      auth: 'bearer',
      body: NewGoalWithId,
      status: 201,
      response: Goal,
      replayable: true,
      summary: 'Create a goal',
      versioned,
    }),
    async (c) => {
      const { row, made } = await insertOnce(c.var.db, 'goals', c.req.valid('json'), COLUMNS)
      return c.json(sendETag(c, row as typeof row & { row_version: unknown }), made ? 201 : 200)
    },
  )
  .openapi(
    endpoint({
      method: 'put',
      path: '/goals/{id}',
      tag,
      auth: 'bearer',
      params: goalId,
      body: GoalPatch,
      response: Goal,
      errors: [403],
      summary: 'Change a goal',
      versioned,
    }),
    async (c) => {
      const { id } = c.req.valid('param')
      const patch = c.req.valid('json')
      const ifMatch = ifMatchOf(c.req.header('if-match'))
      if (Object.keys(patch).length === 0) throw badRequest('Nothing to update')
      const rows = unwrap(
        await ifStillCurrent(
          c.var.db.from('goals').update(patch).eq('id', id).select(COLUMNS),
          ifMatch,
          'goal',
          () => readGoal(c.var.db, id),
        ),
      )
      if (!rows.length) await refuseWrite(c.var.db, 'goals', { id }, 'goal')
      return c.json(sendETag(c, rows[0]))
    },
  )
  .openapi(
    endpoint({
      method: 'delete',
      path: '/goals/{id}',
      tag,
      auth: 'bearer',
      params: goalId,
      response: Message,
      errors: [403],
      summary: 'Delete a goal',
      versioned,
    }),
    async (c) => {
      const { id } = c.req.valid('param')
      const ifMatch = ifMatchOf(c.req.header('if-match'))
      const rows = unwrap(
        await ifStillCurrent(
          c.var.db.from('goals').delete().eq('id', id).select('id'),
          ifMatch,
          'goal',
          () => readGoal(c.var.db, id),
        ),
      )
      if (!rows.length) await refuseWrite(c.var.db, 'goals', { id }, 'goal')
      return c.json({ message: 'Goal deleted' })
    },
  )
  .openapi(
    endpoint({
      method: 'post',
      path: '/goals/{id}/check-ins',
      tag,
      auth: 'bearer',
      params: goalId,
      body: NewCheckIn,
      bodyRequired: false,
      status: 201,
      response: CheckIn,
      replayable: true,
      errors: [403],
      summary: 'Record a check-in on a goal',
    }),
    async (c) => {
      const { id } = c.req.valid('param')
      const body = c.req.valid('json')
      const goal = unwrap(await c.var.db.from('goals').select('user_id').eq('id', id).maybeSingle())
      if (!goal) throw notFound('Goal not found')
      if (goal.user_id !== c.var.caller.id) await refuseWrite(c.var.db, 'goals', { id }, 'goal')
      const { row, made } = await insertOnce(c.var.db, 'goal_check_ins', { goal_id: id, ...body }, CHECK_IN_COLUMNS)
      return made ? c.json(row, 201) : c.json(row, 200)
    },
  )
