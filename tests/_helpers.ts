// Shared pieces for the HTTP end-to-end tests. `npm test` starts a throw-away stack and
// passes its addresses and keys in the environment.
import postgres from 'postgres'
import { createClient } from '@supabase/supabase-js'
import { SignJWT } from 'jose'
import { mintUserToken, signClaims } from '../scripts/lib/tokens.ts'
import { checkReply } from './_contract.ts'

const need = (k: string) => {
  const v = Deno.env.get(k)
  if (!v) throw new Error(`${k} is not set: run the tests with \`npm test\``)
  return v
}

export const API_URL = need('SUPABASE_URL')
export const ANON_KEY = need('SUPABASE_ANON_KEY')
export const SERVICE_ROLE_KEY = need('SUPABASE_SERVICE_ROLE_KEY')
export const JWT_SECRET = need('JWT_SECRET')
export const env = (k: string) => need(k)
/** A valid profiles.avatar_url: the public URL of an object in the user's own avatars folder. */
export const avatarUrl = (userId: string, name = 'avatar.png') => `${API_URL}/storage/v1/object/public/avatars/${userId}/${name}`

/** One connection as postgres (not a superuser, as on hosted) for test setup, shared by the tests of a file. */
export const sql = postgres(need('SUPABASE_DB_URL'), { max: 4, onnotice: () => {} })

export interface TestUser {
  id: string
  email: string
  token: string
}

/**
 * Inserts an auth user as Supabase Auth writes one (private.new_auth_user: every column GoTrue
 * reads, its e-mail identity): hosted auth.users has no defaults for them, nor has the stand-in.
 * `columns` are auth.users columns (email, id, raw_user_meta_data, ...). Returns the id.
 */
export async function insertAuthUser(db: postgres.Sql, columns: Record<string, unknown>): Promise<string> {
  const [{ id }] = await db`select private.new_auth_user(${db.json(columns as postgres.JSONValue)}) as id`
  return id as string
}

/**
 * Runs fn in a transaction as Storage runs its own queries: with storage.allow_delete_query set,
 * which Storage's protect_delete trigger asks of a DELETE on its tables (test cleanup standing
 * in for Storage; the project itself removes objects through the Storage API).
 */
export const asStorage = <T>(db: postgres.Sql, fn: (tx: postgres.TransactionSql) => Promise<T>) =>
  db.begin(async (tx) => {
    await tx`select set_config('storage.allow_delete_query', 'true', true)`
    return await fn(tx)
  }) as Promise<T>

/** Creates an auth user (the profile trigger does the rest) and mints its token. */
export async function createUser(opts: { superAdmin?: boolean; prefix?: string } = {}): Promise<TestUser> {
  const email = `${opts.prefix ?? 'user'}-${crypto.randomUUID().slice(0, 8)}@test.local`
  await insertAuthUser(sql, { email })
  if (opts.superAdmin) {
    await sql`update public.profiles set role = 'super_admin' where id = (select id from auth.users where email = ${email})`
  }
  const { userId, token } = await mintUserToken(sql, email, { secret: JWT_SECRET })
  return { id: userId, email, token }
}

export { signClaims }

export interface ApiResponse<T = any> {
  status: number
  body: T
  headers: Headers
}

const FUNCTIONS_URL = `${API_URL}/functions/v1`

/** Calls an edge-function endpoint through the gateway: api('/api/user/profile', {token}). The
 *  reply must be one the route documents (tests/_contract.ts), or the call throws. */
export async function api<T = any>(
  path: string,
  o: { method?: string; token?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> } =
    {},
): Promise<ApiResponse<T>> {
  const headers: Record<string, string> = { ...o.headers }
  if (o.token) headers.authorization = `Bearer ${o.token}`
  let body: string | undefined
  if (o.rawBody !== undefined) body = o.rawBody
  else if (o.body !== undefined) body = JSON.stringify(o.body)
  if (body !== undefined) headers['content-type'] ??= 'application/json'
  const method = o.method ?? (body === undefined ? 'GET' : 'POST')
  const res = await fetch(`${FUNCTIONS_URL}${path}`, { method, headers, body })
  const text = await res.text()
  if (!res.redirected) {
    await checkReply(FUNCTIONS_URL, method, path, { status: res.status, headers: res.headers, text })
  }
  let parsed: unknown = text
  try {
    parsed = text ? JSON.parse(text) : null
  } catch { /* not JSON */ }
  return { status: res.status, body: parsed as T, headers: res.headers }
}

/** fetch for an edge-function path through the gateway (multipart uploads, binary replies),
 *  its reply checked against the contract as api() does. */
export async function apiFetch(path: string, init: RequestInit = {}): Promise<Response> {
  const res = await fetch(`${FUNCTIONS_URL}${path}`, init)
  if (!res.redirected) {
    const text = await res.clone().text()
    await checkReply(FUNCTIONS_URL, init.method ?? 'GET', path, {
      status: res.status,
      headers: res.headers,
      text,
    })
  }
  return res
}

/** A supabase-js client acting as the given user (or anonymous), talking to PostgREST. */
export function clientAs(token?: string) {
  return createClient(API_URL, ANON_KEY, {
    auth: { persistSession: false, autoRefreshToken: false },
    global: token ? { headers: { Authorization: `Bearer ${token}` } } : undefined,
  })
}

export function assertError(res: ApiResponse, status: number, mention?: string | RegExp) {
  if (res.status !== status) {
    throw new Error(`expected status ${status}, got ${res.status}: ${JSON.stringify(res.body)}`)
  }
  if (typeof res.body?.error !== 'string' || !res.body.error) {
    throw new Error(`expected an {error} body, got ${JSON.stringify(res.body)}`)
  }
  if (
    mention &&
    !(typeof mention === 'string' ? res.body.error.includes(mention) : mention.test(res.body.error))
  ) {
    throw new Error(`error "${res.body.error}" does not mention ${mention}`)
  }
}

/** Deno.test with the shared connection pool allowed to outlive a single test. */
export function test(name: string, fn: () => Promise<void> | void) {
  Deno.test({ name, fn, sanitizeOps: false, sanitizeResources: false })
}

/** An unsigned token (alg "none"), which every endpoint must refuse. */
export function unsignedToken(claims: Record<string, unknown>) {
  const b64 = (o: unknown) =>
    btoa(JSON.stringify(o)).replace(/=+$/, '').replace(/\+/g, '-').replace(/\//g, '_')
  return `${b64({ alg: 'none', typ: 'JWT' })}.${
    b64({ exp: Math.floor(Date.now() / 1000) + 3600, ...claims })
  }.`
}

/** The ways a bearer token can be wrong, each of which must get a 401. */
export async function badTokensFor(user: TestUser) {
  const claims = { sub: user.id, email: user.email, role: 'authenticated', aud: 'authenticated' }
  return {
    expired: await signClaims(claims, JWT_SECRET, -60),
    'wrong secret': await signClaims(claims, 'not-the-project-secret-but-long-enough-to-sign'),
    'alg none': unsignedToken(claims),
    malformed: 'not.a.jwt',
    'anon key (no user)': ANON_KEY,
    'no expiry': await new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).sign(
      new TextEncoder().encode(JWT_SECRET),
    ),
    'another audience': await signClaims({ ...claims, aud: 'some-other-service' }, JWT_SECRET),
  }
}

// ---- Organizations, teams and entries for tests about something else.

/** An organization owned by `owner`, set up directly in SQL, with extra members; returns its id. */
export async function orgWith(
  owner: TestUser,
  members: TestUser[] = [],
  admins: TestUser[] = [],
): Promise<string> {
  const name = `Org ${crypto.randomUUID().slice(0, 8)}`
  const [{ id }] =
    await sql`insert into public.organizations (name, owner_id) values (${name}, ${owner.id}) returning id`
  for (const m of members) {
    await sql`insert into public.organization_members (org_id, user_id, role) values (${id}, ${m.id}, 'member')`
  }
  for (const a of admins) {
    await sql`insert into public.organization_members (org_id, user_id, role) values (${id}, ${a.id}, 'admin')`
  }
  return id as string
}

/** A team of an organization, set up directly in SQL (members must already be in the organization). */
export async function teamWith(orgId: string, admin: TestUser, members: TestUser[] = []): Promise<string> {
  const name = `Team ${crypto.randomUUID().slice(0, 8)}`
  const [{ id }] =
    await sql`insert into public.teams (name, org_id, admin_id) values (${name}, ${orgId}, ${admin.id}) returning id`
  for (const m of members) {
    await sql`insert into public.team_members (team_id, user_id, role) values (${id}, ${m.id}, 'member')`
  }
  return id as string
}

/** POST /api/journal as the user; throws unless it is a 201. Returns the entry. */
export async function postEntry(user: TestUser, body: Record<string, unknown>): Promise<any> {
  const res = await api('/api/journal', { token: user.token, body })
  if (res.status !== 201) throw new Error(`POST /api/journal: ${res.status} ${JSON.stringify(res.body)}`)
  // The entry as a read shows it: mood_pending is the write's (tests/journal_tone_test.ts).
  const { mood_pending: _pending, ...entry } = res.body.entry
  return entry
}

/** POST /api/notebooks as the user; throws unless it is a 201. Returns the notebook. */
export async function postNotebook(user: TestUser, body: Record<string, unknown>): Promise<any> {
  const res = await api('/api/notebooks', { token: user.token, body })
  if (res.status !== 201) throw new Error(`POST /api/notebooks: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body
}

/** Who is who around shared entries: the owner and a teammate in a team of an organization, an
 *  organization member outside the team, a stranger and a super admin. */
export interface SharingWorld {
  owner: TestUser
  teammate: TestUser
  orgmate: TestUser
  stranger: TestUser
  superAdmin: TestUser
  orgId: string
  teamId: string
}

export async function sharingWorld(): Promise<SharingWorld> {
  const [owner, teammate, orgmate, stranger, superAdmin] = await Promise.all([
    createUser({ prefix: 'owner' }),
    createUser({ prefix: 'teammate' }),
    createUser({ prefix: 'orgmate' }),
    createUser({ prefix: 'stranger' }),
    createUser({ prefix: 'super', superAdmin: true }),
  ])
  const orgId = await orgWith(owner, [teammate, orgmate])
  const teamId = await teamWith(orgId, owner, [teammate])
  return { owner, teammate, orgmate, stranger, superAdmin, orgId, teamId }
}

/** mulberry32: a small seeded PRNG, so a failing random run can be replayed from its seed. */
export function prng(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

// ---- Holding a user's write open across another request (removal races).

/** Runs `work` in one transaction on a connection of its own, acting as `user` exactly as
 *  PostgREST does (role authenticated, request.jwt.claims), so a test can keep the user's
 *  write uncommitted while something else happens. */
export async function asUserInTransaction<T>(
  user: TestUser,
  work: (tx: postgres.TransactionSql) => Promise<T>,
): Promise<T> {
  const conn = postgres(need('SUPABASE_DB_URL'), { max: 1, onnotice: () => {} })
  try {
    return await conn.begin(async (tx) => {
      await tx`select set_config('request.jwt.claims', ${
        JSON.stringify({ sub: user.id, role: 'authenticated' })
      }, true),
                      set_config('role', 'authenticated', true)`
      return await work(tx)
    }) as T
  } finally {
    await conn.end()
  }
}

export const pause = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** The member edits their texts in one open transaction, first the text of the entry a removal
 *  cascade reaches last, then (while `removal` is under way) the one it reaches first: the
 *  opposite lock orders that made removals fail with a deadlock. Returns the removal's reply. */
export async function editTextsAcrossRemoval(
  member: TestUser,
  removal: () => Promise<ApiResponse>,
): Promise<ApiResponse> {
  // A cascade updates a user's entries in their physical order.
  const order = await sql`select id from public.journal_entries
                           where user_id = ${member.id} and (team_id is not null or org_id is not null) order by ctid`
  if (order.length < 2) throw new Error('editTextsAcrossRemoval needs two shared entries')
  const first = order[0].id, last = order[order.length - 1].id
  let reply: Promise<ApiResponse> | undefined
  await asUserInTransaction(member, async (tx) => {
    await tx`update public.journal_entry_contents set content = 'edited during removal (last)' where entry_id = ${last}`
    reply = removal()
    await pause(300)
    await tx`update public.journal_entry_contents set content = 'edited during removal (first)' where entry_id = ${first}`
  })
  return await reply!
}
