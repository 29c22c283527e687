// Teams (SPEC "Teams"): organization members see them; team admins manage them; only
// organization owners change admin_id. All of it enforced in the database.
import { z } from '@hono/zod-openapi'
import { refuseWrite } from '../../_shared/access.ts'
import { badRequest, notFound, unwrap } from '../../_shared/errors.ts'
import { memberDirectory, MemberSchema, membershipWrites } from '../../_shared/members.ts'
import { newestFirstPage, pageQuery } from '../../_shared/pagination.ts'
import { idParams, uuid } from '../../_shared/validation.ts'
import { endpoint, Message, NextCursor, routeModule } from '../openapi.ts'
import { groupFields } from './organizations.ts'

const COLUMNS =
  'id, name, description, org_id, admin_id, settings, created_at, updated_at, organizations(id, name)'

const NewTeam = z.object({
  name: groupFields.name,
  description: groupFields.description.optional(),
  org_id: uuid(),
  admin_id: uuid().optional(),
  settings: groupFields.settings.optional(),
}).strict()
const TeamPatch = z.object({
  name: groupFields.name.optional(),
  description: groupFields.description.optional(),
  admin_id: uuid().optional(),
  settings: groupFields.settings.optional(),
}).strict()
const teamRole = z.enum(['admin', 'member'])
const NewMember = z.object({ user_id: uuid(), role: teamRole }).strict()
const RoleChange = z.object({ role: teamRole }).strict()
const ListQuery = z.object({ ...pageQuery, org_id: uuid().optional() }).strict()

const Team = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  org_id: z.string(),
  admin_id: z.string(),
  settings: z.record(z.string(), z.unknown()),
  created_at: z.string(),
  updated_at: z.string(),
  organizations: z.object({ id: z.string(), name: z.string() }),
}).openapi('Team')

const memberships = membershipWrites('team_members', 'team_id')
const members = memberDirectory((db, id) => db.rpc('list_team_members', { target_team: id }))
const tag = 'Teams'
const teamId = idParams('id')
const teamMember = idParams('id', 'userId')

export const teamRoutes = routeModule()
  .openapi(
    endpoint({
      method: 'get',
      path: '/teams',
      tag,
      auth: 'bearer',
      query: ListQuery,
      summary: "Teams of the caller's organizations",
      response: z.object({ teams: z.array(Team), next_cursor: NextCursor }),
    }),
    async (c) => {
      const q = c.req.valid('query')
      let query = c.var.db.from('teams').select(COLUMNS)
      if (q.org_id) query = query.eq('org_id', q.org_id)
      const { items, next_cursor } = await newestFirstPage(query, q)
      return c.json({ teams: items, next_cursor })
    },
  )
  .openapi(
    endpoint({
      method: 'post',
      path: '/teams',
      tag,
      auth: 'bearer',
      body: NewTeam,
      status: 201,
      response: Team,
      errors: [404],
      summary: 'Create a team (organization members); admin_id defaults to the caller',
      description: '404 when the organization does not exist or the caller is not one of its members.',
    }),
    async (c) => {
      const body = c.req.valid('json')
      const { data, error } = await c.var.db.from('teams')
        .insert({ ...body, admin_id: body.admin_id ?? c.var.caller.id }).select(COLUMNS).single()
      if (error?.code === '42501') throw notFound('Organization not found')
      return c.json(unwrap({ data, error }), 201)
    },
  )
  .openapi(
    endpoint({
      method: 'get',
      path: '/teams/{id}',
      tag,
      auth: 'bearer',
      params: teamId,
      summary: 'A team (organization members)',
      response: z.object({ team: Team, user_role: z.enum(['admin', 'member']).nullable() }),
    }),
    async (c) => {
      const { id } = c.req.valid('param')
      const team = unwrap(await c.var.db.from('teams').select(COLUMNS).eq('id', id).maybeSingle())
      if (!team) throw notFound('Team not found')
      const mine = unwrap(
        await c.var.db.from('team_members').select('role').eq('team_id', id).eq('user_id', c.var.caller.id)
          .maybeSingle(),
      )
      return c.json({ team, user_role: mine?.role ?? null })
    },
  )
  .openapi(
    endpoint({
      method: 'put',
      path: '/teams/{id}',
      tag,
      auth: 'bearer',
      params: teamId,
      body: TeamPatch,
      response: Team,
      errors: [403],
      summary: 'Change a team (team admins; admin_id: organization owners)',
    }),
    async (c) => {
      const { id } = c.req.valid('param')
      const patch = c.req.valid('json')
      if (Object.keys(patch).length === 0) throw badRequest('Nothing to update')
      const rows = unwrap(await c.var.db.from('teams').update(patch).eq('id', id).select(COLUMNS))
      if (!rows.length) await refuseWrite(c.var.db, 'teams', { id }, 'team')
      return c.json(rows[0])
    },
  )
  .openapi(
    endpoint({
      method: 'delete',
      path: '/teams/{id}',
      tag,
      auth: 'bearer',
      params: teamId,
      response: Message,
      errors: [403],
      summary: 'Delete a team (team admins)',
    }),
    async (c) => {
      const { id } = c.req.valid('param')
      const rows = unwrap(await c.var.db.from('teams').delete().eq('id', id).select('id'))
      if (!rows.length) await refuseWrite(c.var.db, 'teams', { id }, 'team')
      return c.json({ message: 'Team deleted' })
    },
  )
  .openapi(
    endpoint({
      method: 'get',
      path: '/teams/{id}/members',
      tag,
      auth: 'bearer',
      params: teamId,
      summary: 'Members (organization members)',
      response: z.object({ members: z.array(MemberSchema) }),
    }),
    async (c) => c.json({ members: await members.list(c.var.db, c.req.valid('param').id) }),
  )
  .openapi(
    endpoint({
      method: 'post',
      path: '/teams/{id}/members',
      tag,
      auth: 'bearer',
      params: teamId,
      body: NewMember,
      status: 201,
      response: MemberSchema,
      errors: [403, 409],
      summary: 'Add an organization member to the team (team admins)',
    }),
    async (c) => {
      const { id } = c.req.valid('param')
      const body = c.req.valid('json')
      const { error } = await c.var.db.from('team_members').insert({ team_id: id, ...body })
      if (error?.code === '42501') await refuseWrite(c.var.db, 'teams', { id }, 'team')
      unwrap({ data: null, error })
      return c.json(await members.one(c.var.db, id, body.user_id), 201)
    },
  )
  .openapi(
    endpoint({
      method: 'put',
      path: '/teams/{id}/members/{userId}',
      tag,
      auth: 'bearer',
      params: teamMember,
      body: RoleChange,
      response: MemberSchema,
      errors: [403],
      summary: "Change a member's role (team admins; never the team admin's)",
    }),
    async (c) => {
      const { id, userId } = c.req.valid('param')
      await memberships.changeRole(c.var.db, id, userId, c.req.valid('json'))
      return c.json(await members.one(c.var.db, id, userId))
    },
  )
  .openapi(
    endpoint({
      method: 'delete',
      path: '/teams/{id}/members/{userId}',
      tag,
      auth: 'bearer',
      params: teamMember,
      response: Message,
      errors: [403],
      summary: 'Remove a member (team admins, or the member leaving)',
    }),
    async (c) => {
      const { id, userId } = c.req.valid('param')
      await memberships.remove(c.var.db, id, userId)
      return c.json({ message: 'Member removed' })
    },
  )
