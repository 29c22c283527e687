// Who is calling, and running SQL as them. Every row read or write runs as the caller's
// Postgres role with its JWT claims and request headers, so storage RLS policies and triggers
// apply as on Supabase. A token of a stopped or expired impersonation session, or of an account
// being deleted, is refused (401) before anything else.
import type postgres from 'postgres'
import { HttpError } from '../../../functions/_shared/errors.ts'
import { isUserToken, verifyAccessToken } from '../../../functions/_shared/jwt.ts'
import { fail } from './errors.ts'
import type { StorageContext } from './keys.ts'

// The request's headers travel with its claims (a symbol key: never part of the claims' JSON).
const HEADERS = Symbol('request headers')
export type Claims = Record<string, unknown> & { role: string; sub?: string; [HEADERS]?: string }
export type Tx = postgres.TransactionSql

const ROLES = new Set(['anon', 'authenticated', 'service_role'])

/**
 * The caller's verified claims, from `Authorization: Bearer` or else the `apikey` header, by
 * /api's rules (functions/_shared/jwt.ts: HS256 with JWT_SECRET or ES256/RS256 against
 * JWKS_URL, `exp` required), and then: the role is one of the three API roles; a user's token
 * (role authenticated) has a `sub` and the `authenticated` audience; the anon and
 * service-role keys carry no audience.
 */
export async function identify(req: Request, ctx: StorageContext): Promise<Claims> {
  const bearer = req.headers.get('authorization')?.match(/^Bearer\s+(\S+)$/i)?.[1]
  const token = bearer ?? req.headers.get('apikey')
  if (!token) return fail(400, 'Error', "headers must have required property 'authorization'")
  let claims: Record<string, unknown> = {}
  try {
    claims = await verifyAccessToken(token)
  } catch (e) {
    if (!(e instanceof HttpError)) throw e
    fail(403, 'Unauthorized', e.message === 'Token expired' ? 'jwt expired' : e.message)
  }
  // The role becomes `set local role`: only the three API roles, never e.g. postgres.
  if (typeof claims.role !== 'string' || !ROLES.has(claims.role)) {
    fail(403, 'Unauthorized', 'Invalid JWT role')
  }
  if (claims.role === 'authenticated' && !isUserToken(claims)) {
    fail(403, 'Unauthorized', 'A user token needs a sub and the authenticated audience')
  }
  if (claims.role !== 'authenticated' && claims.aud !== undefined) {
    fail(403, 'Unauthorized', `A ${claims.role} token carries no audience`)
  }
  const caller = Object.assign(claims as Claims, {
    [HEADERS]: JSON.stringify(Object.fromEntries(req.headers)),
  })
  // PostgREST's pre-request function, reads included, for every user token: an ended
  // impersonation session or an account being deleted is 401, as at /rest/v1 and /api (one
  // round trip; the keys carry no user).
  if (claims.role === 'authenticated') {
    await asCaller(ctx, caller, (tx) => tx`select private.check_request()`)
  }
  return caller
}

/** Runs fn in a transaction as the caller, the way PostgREST does, so that RLS applies. */
export function asCaller<T>(ctx: StorageContext, c: Claims, fn: (tx: Tx) => Promise<T>): Promise<T> {
  return ctx.sql.begin(async (tx) => {
    await tx.unsafe(`set local role ${c.role}`) // checked against ROLES in identify()
    // As Storage's scope.ts: its own queries may delete rows (storage.protect_delete refuses others).
    await tx`select set_config('request.jwt.claims', ${JSON.stringify(c)}, true),
                    set_config('request.jwt.claim.sub', ${typeof c.sub === 'string' ? c.sub : ''}, true),
                    set_config('request.jwt.claim.role', ${c.role}, true),
                    set_config('request.headers', ${c[HEADERS] ?? '{}'}, true),
                    set_config('storage.allow_delete_query', 'true', true)`
    return await fn(tx)
  }) as Promise<T>
}

/** Runs fn in a transaction that the caller's policies would refuse or allow, then undoes it:
 *  Storage's permission test before work it then does as the superuser. */
export async function testAsCaller(ctx: StorageContext, c: Claims, fn: (tx: Tx) => Promise<unknown>) {
  const undo = new Error('undo')
  await asCaller(ctx, c, async (tx) => {
    await fn(tx)
    throw undo
  }).catch((e) => {
    if (e !== undo) throw e
  })
}

/** Who writes an object row: the runner (the caller, or the superuser for a signed upload)
 *  and the owner recorded on it. */
export interface Writer {
  run<T>(fn: (tx: Tx) => Promise<T>): Promise<T>
  /** owner_id: the token's sub, whatever it is; owner: the same when it is a uuid. */
  sub: string | null
}

const UUID = /^[0-9a-f]{8}-([0-9a-f]{4}-){3}[0-9a-f]{12}$/i
export const ownerUuid = (sub: string | null) => (sub && UUID.test(sub) ? sub : null)

export const callerWriter = (ctx: StorageContext, c: Claims): Writer => ({
  run: (fn) => asCaller(ctx, c, fn),
  sub: typeof c.sub === 'string' ? c.sub : null,
})

/**
 * Writes as the superuser (RLS does not apply), with the service role's claims, as Storage
 * writes for a signed upload URL. `impersonationSession`: the session the URL was made in, sent
 * as the api sends it (x-impersonation-session from the service role), so the write is
 * audited as the session's and refused once it has ended.
 */
export const superuserWriter = (
  ctx: StorageContext,
  sub: string | null,
  impersonationSession?: string,
): Writer => ({
  run: <T>(fn: (tx: Tx) => Promise<T>) =>
    ctx.sql.begin(async (tx) => {
      const headers = impersonationSession ? { 'x-impersonation-session': impersonationSession } : {}
      await tx`select set_config('request.jwt.claims', ${JSON.stringify({ role: 'service_role' })}, true),
                      set_config('request.jwt.claim.role', 'service_role', true),
                      set_config('request.headers', ${JSON.stringify(headers)}, true),
                      set_config('storage.allow_delete_query', 'true', true)`
      return await fn(tx)
    }) as Promise<T>,
  sub,
})
