// Teams (SPEC "Teams"): organization members see them; team admins manage them; only
// organization owners change admin_id. All of it enforced in the database.
import { Hono } from 'hono'
import { z } from 'zod'
import { refuseWrite } from '../../_shared/access.ts'
import { badRequest, notFound, unwrap } from '../../_shared/errors.ts'
import { memberDirectory } from '../../_shared/members.ts'
import { newestFirstPage, pageQuery } from '../../_shared/pagination.ts'
import { pathUuid, readJson, readQuery, uuid } from '../../_shared/validation.ts'
import { type ApiEnv, bearer } from '../credentials.ts'
import { groupFields } from './organizations.ts'

const COLUMNS = 'id, name, description, org_id, admin_id, settings, created_at, updated_at, organizations(id, name)'

const NewTeam = z.object({
  name: groupFields.name,
  description: groupFields.description.optional(),
  org_id: uuid('org_id'),
  admin_id: uuid('admin_id').optional(),
  settings: groupFields.settings.optional(),
}).strict()
const TeamPatch = z.object({
  name: groupFields.name.optional(),
  description: groupFields.description.optional(),
  admin_id: uuid('admin_id').optional(),
  settings: groupFields.settings.optional(),
}).strict()
const teamRole = z.enum(['admin', 'member'], { errorMap: () => ({ message: 'role must be one of admin, member' }) })
const NewMember = z.object({ user_id: uuid('user_id'), role: teamRole }).strict()
const RoleChange = z.object({ role: teamRole }).strict()
const ListQuery = z.object({ ...pageQuery, org_id: uuid('org_id').optional() }).strict()

const members = memberDirectory('list_team_members', 'target_team')

export const teamRoutes = new Hono<ApiEnv>()
  .get('/teams', bearer, async (c) => {
    const q = readQuery(c, ListQuery)
    let query = c.var.db.from('teams').select(COLUMNS)
    if (q.org_id) query = query.eq('org_id', q.org_id)
    const { items, next_cursor } = await newestFirstPage(query, q)
    return c.json({ teams: items, next_cursor })
  })
  .post('/teams', bearer, async (c) => {
    const body = await readJson(c, NewTeam)
    const { data, error } = await c.var.db.from('teams')
      .insert({ ...body, admin_id: body.admin_id ?? c.var.caller.id }).select(COLUMNS).single()
    if (error?.code === '42501') throw notFound('Organization not found')
    return c.json(unwrap({ data, error }), 201)
  })
  .get('/teams/:id', bearer, async (c) => {
    const teamId = pathUuid(c)
    const team = unwrap(await c.var.db.from('teams').select(COLUMNS).eq('id', teamId).maybeSingle())
    if (!team) throw notFound('Team not found')
    const mine = unwrap<{ role: string } | null>(
      await c.var.db.from('team_members').select('role').eq('team_id', teamId).eq('user_id', c.var.caller.id).maybeSingle(),
    )
    return c.json({ team, user_role: mine?.role ?? null })
  })
  .put('/teams/:id', bearer, async (c) => {
    const teamId = pathUuid(c)
    const patch = await readJson(c, TeamPatch)
    if (Object.keys(patch).length === 0) throw badRequest('Nothing to update')
    const rows = unwrap(await c.var.db.from('teams').update(patch).eq('id', teamId).select(COLUMNS))
    if (!rows.length) await refuseWrite(c.var.db, 'teams', { id: teamId }, 'team')
    return c.json(rows[0])
  })
  .delete('/teams/:id', bearer, async (c) => {
    const teamId = pathUuid(c)
    const rows = unwrap(await c.var.db.from('teams').delete().eq('id', teamId).select('id'))
    if (!rows.length) await refuseWrite(c.var.db, 'teams', { id: teamId }, 'team')
    return c.json({ message: 'Team deleted' })
  })
  .get('/teams/:id/members', bearer, async (c) => {
    const teamId = pathUuid(c)
    return c.json({ members: await members.list(c.var.db, teamId) })
  })
  .post('/teams/:id/members', bearer, async (c) => {
    const teamId = pathUuid(c)
    const body = await readJson(c, NewMember)
    const { error } = await c.var.db.from('team_members').insert({ team_id: teamId, ...body })
    if (error?.code === '42501') await refuseWrite(c.var.db, 'teams', { id: teamId }, 'team')
    unwrap({ data: null, error })
    return c.json(await members.one(c.var.db, teamId, body.user_id), 201)
  })
  .put('/teams/:id/members/:userId', bearer, async (c) => {
    const teamId = pathUuid(c), userId = pathUuid(c, 'userId')
    const body = await readJson(c, RoleChange)
    const rows = unwrap(
      await c.var.db.from('team_members').update(body).eq('team_id', teamId).eq('user_id', userId).select('user_id'),
    )
    if (!rows.length) await refuseWrite(c.var.db, 'team_members', { team_id: teamId, user_id: userId }, 'member')
    return c.json(await members.one(c.var.db, teamId, userId))
  })
  .delete('/teams/:id/members/:userId', bearer, async (c) => {
    const teamId = pathUuid(c), userId = pathUuid(c, 'userId')
    const rows = unwrap(
      await c.var.db.from('team_members').delete().eq('team_id', teamId).eq('user_id', userId).select('user_id'),
    )
    if (!rows.length) await refuseWrite(c.var.db, 'team_members', { team_id: teamId, user_id: userId }, 'member')
    return c.json({ message: 'Member removed' })
  })
