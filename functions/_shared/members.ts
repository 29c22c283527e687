// Member lists of organizations and teams, read through the SQL functions that expose only
// members' public fields (profiles themselves are private).
import { z } from '@hono/zod-openapi'
import type { PostgrestResponse } from '@supabase/postgrest-js'
import { refuseWrite } from './access.ts'
import type { Db } from './db.ts'
import { notFound, unwrap } from './errors.ts'

type Member = { user_id: string; joined_at: string | null }

/** The member view of SPEC (joined_at absent for the owner / the team admin). */
export const MemberSchema = z.object({
  user_id: z.string(),
  full_name: z.string().nullable(),
  avatar_url: z.string().nullable(),
  role: z.string(),
  is_owner: z.boolean().optional(),
  is_admin: z.boolean().optional(),
  joined_at: z.string().optional(),
}).openapi('Member')

/** Drops joined_at where the member view says it is absent (the owner / the team admin). */
export function memberView<T extends Member>(m: T) {
  const { joined_at, ...rest } = m
  return joined_at === null ? rest : m
}

/** list and one over a group's members, as listMembers reads them. */
export function memberDirectory<M extends Member>(
  listMembers: (db: Db, groupId: string) => PromiseLike<PostgrestResponse<M>>,
) {
  const all = async (db: Db, groupId: string) => unwrap(await listMembers(db, groupId))
  return {
    list: async (db: Db, groupId: string) => (await all(db, groupId)).map(memberView),
    one: async (db: Db, groupId: string, userId: string) => {
      const found = (await all(db, groupId)).find((m) => m.user_id === userId)
      if (!found) throw notFound('Member not found')
      return memberView(found)
    },
  }
}

/**
 * Role changes and removals of a group's memberships, as RLS allows them: a row the caller may
 * not change is left alone by the statement, and then told apart as 403 (it exists) or 404.
 */
export function membershipWrites(table: 'organization_members' | 'team_members', groupKey: 'org_id' | 'team_id') {
  const refuse = (db: Db, groupId: string, userId: string) =>
    refuseWrite(db, table, { [groupKey]: groupId, user_id: userId }, 'member')
  return {
    changeRole: async (db: Db, groupId: string, userId: string, change: { role: string }) => {
      const rows = unwrap(
        await db.from(table).update(change as never).eq(groupKey, groupId).eq('user_id', userId).select('user_id'),
      )
      if (!rows.length) await refuse(db, groupId, userId)
    },
    remove: async (db: Db, groupId: string, userId: string) => {
      const rows = unwrap(await db.from(table).delete().eq(groupKey, groupId).eq('user_id', userId).select('user_id'))
      if (!rows.length) await refuse(db, groupId, userId)
    },
  }
}
