// The cast of the /api/teams tests (tests/teams_*_test.ts) and what they read back.
import { createUser, orgWith, sql, teamWith, type TestUser } from './_helpers.ts'

export interface Cast {
  orgOwner: TestUser
  teamAdmin: TestUser
  teamMember: TestUser
  orgMember: TestUser
  outsider: TestUser
  superAdmin: TestUser
  orgId: string
  teamId: string
}

/** An organization with a team: its admin and a member, an organization member outside the team, and others. */
export async function cast(): Promise<Cast> {
  const [orgOwner, teamAdmin, teamMember, orgMember, outsider, superAdmin] = await Promise.all([
    createUser({ prefix: 'orgowner' }),
    createUser({ prefix: 'teamadmin' }),
    createUser({ prefix: 'teammember' }),
    createUser({ prefix: 'orgmember' }),
    createUser({ prefix: 'outsider' }),
    createUser({ prefix: 'super', superAdmin: true }),
  ])
  const orgId = await orgWith(orgOwner, [teamAdmin, teamMember, orgMember])
  const teamId = await teamWith(orgId, teamAdmin, [teamMember])
  return { orgOwner, teamAdmin, teamMember, orgMember, outsider, superAdmin, orgId, teamId }
}

export const TEAM_FIELDS = [
  'admin_id',
  'created_at',
  'description',
  'id',
  'name',
  'org_id',
  'organizations',
  'settings',
  'updated_at',
]
export const MEMBER_FIELDS = ['avatar_url', 'full_name', 'is_admin', 'joined_at', 'role', 'user_id']

export const teamRow = async (id: string) => {
  const [row] =
    await sql`select name, description, admin_id, settings, org_id from public.teams where id = ${id}`
  return row ? { ...row } : undefined
}
export const teamRoles = async (teamId: string) =>
  Object.fromEntries(
    (await sql`select user_id, role from public.team_members where team_id = ${teamId}`).map((
      r,
    ) => [r.user_id, r.role]),
  )
