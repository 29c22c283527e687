// The cast of the /api/organizations tests (tests/organizations_*_test.ts) and what they read back.
import { createUser, orgWith, sql, type TestUser } from './_helpers.ts'

export interface Cast {
  owner: TestUser
  admin: TestUser
  member: TestUser
  outsider: TestUser
  superAdmin: TestUser
  orgId: string
}

/** An organization with one user of each role, plus an outsider and a super admin. */
export async function cast(): Promise<Cast> {
  const [owner, admin, member, outsider, superAdmin] = await Promise.all([
    createUser({ prefix: 'owner' }),
    createUser({ prefix: 'admin' }),
    createUser({ prefix: 'member' }),
    createUser({ prefix: 'outsider' }),
    createUser({ prefix: 'super', superAdmin: true }),
  ])
  const orgId = await orgWith(owner, [member], [admin])
  return { owner, admin, member, outsider, superAdmin, orgId }
}

export const orgRow = async (id: string) => {
  const [row] =
    await sql`select name, description, settings, owner_id from public.organizations where id = ${id}`
  return row ? { ...row } : undefined
}
export const roles = async (orgId: string) =>
  Object.fromEntries(
    (await sql`select user_id, role from public.organization_members where org_id = ${orgId}`).map((
      r,
    ) => [r.user_id, r.role]),
  )

export const teamMemberships = async (userId: string) =>
  (await sql`select team_id from public.team_members where user_id = ${userId}`).map((r) =>
    r.team_id as string
  )

export const ORG_FIELDS = ['created_at', 'description', 'id', 'name', 'owner_id', 'settings', 'updated_at']
export const MEMBER_FIELDS = ['avatar_url', 'full_name', 'is_owner', 'joined_at', 'role', 'user_id']
