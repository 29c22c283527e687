// Organizations (SPEC "Organizations"): who may do what is enforced by RLS and SQL functions;
// these routes validate, call the database as the caller and shape the reply.
import { Hono } from 'hono'
import { z } from 'zod'
import { refuseWrite } from '../../_shared/access.ts'
import { badRequest, notFound, unwrap } from '../../_shared/errors.ts'
import { memberDirectory } from '../../_shared/members.ts'
import { newestFirstPage, pageQuery } from '../../_shared/pagination.ts'
import { pathUuid, readJson, readQuery, uuid } from '../../_shared/validation.ts'
import { type ApiEnv, bearer } from '../credentials.ts'

const COLUMNS = 'id, name, description, owner_id, settings, created_at, updated_at'

export const groupFields = {
  name: z.string({ required_error: 'name is required', invalid_type_error: 'name must be a string' })
    .trim().min(1, 'name must not be empty').max(200, 'name must be at most 200 characters'),
  description: z.string({ invalid_type_error: 'description must be a string' })
    .max(2000, 'description must be at most 2000 characters').nullable(),
  settings: z.record(z.unknown(), { invalid_type_error: 'settings must be an object' }),
}

const NewOrganization = z.object({
  name: groupFields.name,
  description: groupFields.description.optional(),
  settings: groupFields.settings.optional(),
}).strict()
const OrganizationPatch = NewOrganization.partial().strict()
const role = (allowed: readonly [string, ...string[]]) =>
  z.enum(allowed as [string, ...string[]], { errorMap: () => ({ message: `role must be one of ${allowed.join(', ')}` }) })
const NewMember = z.object({ user_id: uuid('user_id'), role: role(['owner', 'admin', 'member']) }).strict()
const RoleChange = z.object({ role: role(['admin', 'member']) }).strict()
const Transfer = z.object({ new_owner_id: uuid('new_owner_id') }).strict()

const members = memberDirectory('list_organization_members', 'target_org')

export const organizationRoutes = new Hono<ApiEnv>()
  .get('/organizations', bearer, async (c) => {
    const q = readQuery(c, z.object(pageQuery).strict())
    const query = c.var.db.from('organizations').select(COLUMNS)
    const { items, next_cursor } = await newestFirstPage(query, q)
    return c.json({ organizations: items, next_cursor })
  })
  .post('/organizations', bearer, async (c) => {
    const body = await readJson(c, NewOrganization)
    const organization = unwrap(
      await c.var.db.from('organizations').insert({ ...body, owner_id: c.var.caller.id }).select(COLUMNS).single(),
    )
    return c.json({ organization }, 201)
  })
  .get('/organizations/:id', bearer, async (c) => {
    const orgId = pathUuid(c)
    const organization = unwrap(await c.var.db.from('organizations').select(COLUMNS).eq('id', orgId).maybeSingle())
    if (!organization) throw notFound('Organization not found')
    const mine = unwrap<{ role: string } | null>(
      await c.var.db.from('organization_members').select('role').eq('org_id', orgId).eq('user_id', c.var.caller.id).maybeSingle(),
    )
    return c.json({ organization, user_role: mine?.role ?? null })
  })
  .put('/organizations/:id', bearer, async (c) => {
    const orgId = pathUuid(c)
    const patch = await readJson(c, OrganizationPatch)
    if (Object.keys(patch).length === 0) throw badRequest('Nothing to update')
    const rows = unwrap(await c.var.db.from('organizations').update(patch).eq('id', orgId).select(COLUMNS))
    if (!rows.length) await refuseWrite(c.var.db, 'organizations', { id: orgId }, 'organization')
    return c.json(rows[0])
  })
  .delete('/organizations/:id', bearer, async (c) => {
    const orgId = pathUuid(c)
    const rows = unwrap(await c.var.db.from('organizations').delete().eq('id', orgId).select('id'))
    if (!rows.length) await refuseWrite(c.var.db, 'organizations', { id: orgId }, 'organization')
    return c.json({ message: 'Organization deleted' })
  })
  .get('/organizations/:id/members', bearer, async (c) => {
    const orgId = pathUuid(c)
    return c.json({ members: await members.list(c.var.db, orgId) })
  })
  .post('/organizations/:id/members', bearer, async (c) => {
    const orgId = pathUuid(c)
    const body = await readJson(c, NewMember)
    if (body.role === 'owner') {
      // Adding someone as owner hands them the organization (the old owner stays as admin).
      unwrap(await c.var.db.rpc('transfer_organization_ownership', { target_org: orgId, new_owner_id: body.user_id }))
    } else {
      const { error } = await c.var.db.from('organization_members').insert({ org_id: orgId, ...body })
      if (error?.code === '23503') throw badRequest('user_id: no such user')
      if (error?.code === '42501') await refuseWrite(c.var.db, 'organizations', { id: orgId }, 'organization')
      unwrap({ data: null, error })
    }
    return c.json(await members.one(c.var.db, orgId, body.user_id), 201)
  })
  .put('/organizations/:id/members/:userId', bearer, async (c) => {
    const orgId = pathUuid(c), userId = pathUuid(c, 'userId')
    const body = await readJson(c, RoleChange)
    const rows = unwrap(
      await c.var.db.from('organization_members').update(body).eq('org_id', orgId).eq('user_id', userId).select('user_id'),
    )
    if (!rows.length) await refuseWrite(c.var.db, 'organization_members', { org_id: orgId, user_id: userId }, 'member')
    return c.json(await members.one(c.var.db, orgId, userId))
  })
  .delete('/organizations/:id/members/:userId', bearer, async (c) => {
    const orgId = pathUuid(c), userId = pathUuid(c, 'userId')
    const rows = unwrap(
      await c.var.db.from('organization_members').delete().eq('org_id', orgId).eq('user_id', userId).select('user_id'),
    )
    if (!rows.length) await refuseWrite(c.var.db, 'organization_members', { org_id: orgId, user_id: userId }, 'member')
    return c.json({ message: 'Member removed' })
  })
  .post('/organizations/:id/transfer-ownership', bearer, async (c) => {
    const orgId = pathUuid(c)
    const { new_owner_id } = await readJson(c, Transfer)
    unwrap(await c.var.db.rpc('transfer_organization_ownership', { target_org: orgId, new_owner_id }))
    return c.json({ message: 'Ownership transferred', owner_id: new_owner_id })
  })
