// Organizations (SPEC "Organizations"): who may do what is enforced by RLS and SQL functions;
// these routes validate, call the database as the caller and shape the reply.
import { z } from '@hono/zod-openapi'
import { refuseWrite } from '../../_shared/access.ts'
import { badRequest, notFound, unwrap } from '../../_shared/errors.ts'
import { memberDirectory, MemberSchema, membershipWrites, memberView } from '../../_shared/members.ts'
import { newestFirstPage, pageQuery } from '../../_shared/pagination.ts'
import { idParams, uuid } from '../../_shared/validation.ts'
import { endpoint, Message, NextCursor, routeModule } from '../openapi.ts'

const COLUMNS = 'id, name, description, owner_id, settings, created_at, updated_at'

export const groupFields = {
  name: z.string().trim().min(1).max(200),
  description: z.string().max(2000).nullable(),
  settings: z.record(z.string(), z.unknown()),
}

const NewOrganization = z.object({
  name: groupFields.name,
  description: groupFields.description.optional(),
  settings: groupFields.settings.optional(),
}).strict()
const OrganizationPatch = NewOrganization.partial().strict()
const NewMember = z.object({ user_id: uuid(), role: z.enum(['owner', 'admin', 'member']) }).strict()
const RoleChange = z.object({ role: z.enum(['admin', 'member']) }).strict()
const Transfer = z.object({ new_owner_id: uuid() }).strict()

// The member search: a page after the member the cursor names (their user_id).
const MemberSearch = z.object({
  ...pageQuery,
  q: z.string().trim().max(200).optional().openapi({ description: "Part of a member's name, any case" }),
}).strict()
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const ProfileCard = z.object({
  id: z.string(),
  full_name: z.string().nullable(),
  avatar_url: z.string().nullable(),
}).openapi('ProfileCard')

const Organization = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  owner_id: z.string(),
  settings: z.record(z.string(), z.unknown()),
  created_at: z.string(),
  updated_at: z.string(),
}).openapi('Organization')

const memberships = membershipWrites('organization_members', 'org_id')
const members = memberDirectory((db, id) => db.rpc('list_organization_members', { target_org: id }))
const tag = 'Organizations'
const orgId = idParams('id')
const orgMember = idParams('id', 'userId')

export const organizationRoutes = routeModule()
  .openapi(
    endpoint({
      method: 'get',
      path: '/organizations',
      tag,
      auth: 'bearer',
      query: z.object(pageQuery).strict(),
      summary: 'Organizations the caller belongs to (super admins: all)',
      response: z.object({ organizations: z.array(Organization), next_cursor: NextCursor }),
    }),
    async (c) => {
      const { items, next_cursor } = await newestFirstPage(
        c.var.db.from('organizations').select(COLUMNS),
        c.req.valid('query'),
      )
      return c.json({ organizations: items, next_cursor })
    },
  )
  .openapi(
    endpoint({
      method: 'post',
      path: '/organizations',
      tag,
      auth: 'bearer',
      body: NewOrganization,
      status: 201,
      summary: 'Create an organization; the creator becomes owner',
      response: z.object({ organization: Organization }),
    }),
    async (c) => {
      const body = c.req.valid('json')
      const organization = unwrap(
        await c.var.db.from('organizations').insert({ ...body, owner_id: c.var.caller.id }).select(COLUMNS)
          .single(),
      )
      return c.json({ organization }, 201)
    },
  )
  .openapi(
    endpoint({
      method: 'get',
      path: '/organizations/{id}',
      tag,
      auth: 'bearer',
      params: orgId,
      summary: 'An organization (members)',
      response: z.object({
        organization: Organization,
        user_role: z.enum(['owner', 'admin', 'member']).nullable(),
      }),
    }),
    async (c) => {
      const { id } = c.req.valid('param')
      const organization = unwrap(
        await c.var.db.from('organizations').select(COLUMNS).eq('id', id).maybeSingle(),
      )
      if (!organization) throw notFound('Organization not found')
      const mine = unwrap(
        await c.var.db.from('organization_members').select('role').eq('org_id', id).eq(
          'user_id',
          c.var.caller.id,
        ).maybeSingle(),
      )
      return c.json({ organization, user_role: mine?.role ?? null })
    },
  )
  .openapi(
    endpoint({
      method: 'put',
      path: '/organizations/{id}',
      tag,
      auth: 'bearer',
      params: orgId,
      body: OrganizationPatch,
      response: Organization,
      errors: [403],
      summary: 'Change an organization (owners)',
    }),
    async (c) => {
      const { id } = c.req.valid('param')
      const patch = c.req.valid('json')
      if (Object.keys(patch).length === 0) throw badRequest('Nothing to update')
      const rows = unwrap(await c.var.db.from('organizations').update(patch).eq('id', id).select(COLUMNS))
      if (!rows.length) await refuseWrite(c.var.db, 'organizations', { id }, 'organization')
      return c.json(rows[0])
    },
  )
  .openapi(
    endpoint({
      method: 'delete',
      path: '/organizations/{id}',
      tag,
      auth: 'bearer',
      params: orgId,
      response: Message,
      errors: [403],
      summary: 'Delete an organization (owners)',
    }),
    async (c) => {
      const { id } = c.req.valid('param')
      const rows = unwrap(await c.var.db.from('organizations').delete().eq('id', id).select('id'))
      if (!rows.length) await refuseWrite(c.var.db, 'organizations', { id }, 'organization')
      return c.json({ message: 'Organization deleted' })
    },
  )
  .openapi(
    endpoint({
      method: 'get',
      path: '/organizations/{id}/members',
      tag,
      auth: 'bearer',
      params: orgId,
      query: MemberSearch,
      summary: 'Members, or those whose name contains q (members and super admins)',
      description: 'Owner first, then by joining; a page of `limit`, the next after `before` (the previous next_cursor).',
      response: z.object({ members: z.array(MemberSchema), next_cursor: NextCursor }),
    }),
    async (c) => {
      const { id } = c.req.valid('param')
      const { q, limit, before } = c.req.valid('query')
      if (before !== undefined && !UUID.test(before)) throw badRequest('before: not a valid cursor')
      const rows = unwrap(
        await c.var.db.rpc('search_organization_members', {
          target_org: id,
          q: q ?? null,
          after_user_id: before ?? null,
          page_size: limit + 1,
        }),
      )
      const page = rows.slice(0, limit)
      return c.json({
        members: page.map(memberView),
        next_cursor: rows.length > limit ? page[page.length - 1].user_id : null,
      })
    },
  )
  .openapi(
    endpoint({
      method: 'get',
      path: '/profiles/{id}',
      tag,
      auth: 'bearer',
      params: idParams('id'),
      summary: "A person's public profile: the caller's, or of someone who shares an organization with them",
      description: 'As PostgREST serves it (`/rest/v1/profile_cards`); 404 for anyone the caller shares nothing with.',
      response: z.object({ profile: ProfileCard }),
    }),
    async (c) => {
      const { id } = c.req.valid('param')
      const profile = unwrap(
        await c.var.db.from('profile_cards').select('id, full_name, avatar_url').eq('id', id).maybeSingle(),
      )
      if (!profile) throw notFound('Profile not found')
      return c.json({ profile })
    },
  )
  .openapi(
    endpoint({
      method: 'post',
      path: '/organizations/{id}/members',
      tag,
      auth: 'bearer',
      params: orgId,
      body: NewMember,
      status: 201,
      response: MemberSchema,
      errors: [403, 409],
      summary: 'Add a member (owners); role owner hands over ownership',
    }),
    async (c) => {
      const { id } = c.req.valid('param')
      const body = c.req.valid('json')
      if (body.role === 'owner') {
        // Adding someone as owner hands them the organization (the old owner stays as admin).
        const { error } = await c.var.db.rpc('transfer_organization_ownership', {
          target_org: id,
          new_owner_id: body.user_id,
        })
        // Here the new owner is the body's user_id: name that field.
        if (error?.code === '22023') throw badRequest(error.message.replace(/^new_owner_id:/, 'user_id:'))
        unwrap({ data: null, error })
      } else {
        const { error } = await c.var.db.from('organization_members').insert({ org_id: id, ...body })
        if (error?.code === '23503') throw badRequest('user_id: no such user')
        if (error?.code === '42501') await refuseWrite(c.var.db, 'organizations', { id }, 'organization')
        unwrap({ data: null, error })
      }
      return c.json(await members.one(c.var.db, id, body.user_id), 201)
    },
  )
  .openapi(
    endpoint({
      method: 'put',
      path: '/organizations/{id}/members/{userId}',
      tag,
      auth: 'bearer',
      params: orgMember,
      body: RoleChange,
      response: MemberSchema,
      errors: [403],
      summary: "Change a member's role (owners; never the owner's row)",
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
      path: '/organizations/{id}/members/{userId}',
      tag,
      auth: 'bearer',
      params: orgMember,
      response: Message,
      errors: [403],
      summary: 'Remove a member (owners, or the member leaving)',
    }),
    async (c) => {
      const { id, userId } = c.req.valid('param')
      await memberships.remove(c.var.db, id, userId)
      return c.json({ message: 'Member removed' })
    },
  )
  .openapi(
    endpoint({
      method: 'post',
      path: '/organizations/{id}/transfer-ownership',
      tag,
      auth: 'bearer',
      params: orgId,
      body: Transfer,
      response: z.object({ message: z.string(), owner_id: z.string() }),
      errors: [403],
      summary: 'Hand the organization to another member (the current owner)',
    }),
    async (c) => {
      const { id } = c.req.valid('param')
      const { new_owner_id } = c.req.valid('json')
      unwrap(await c.var.db.rpc('transfer_organization_ownership', { target_org: id, new_owner_id }))
      return c.json({ message: 'Ownership transferred', owner_id: new_owner_id })
    },
  )
