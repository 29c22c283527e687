// The credentials a route may declare (see Credential in openapi.ts): bearer (a signed-in
// user), superAdmin, cronSecret / cronBearer (a scheduled job), adminOrCron (either), or
// publicRoute (none). Each sets what the route may use.
//
// An impersonation token (claim impersonation_session) costs one database round trip more per
// request, and only such a token: its session must still be live (401 once stopped or expired,
// whatever the route, also routes that work with the service role), and a mutating request is
// recorded in the session's audit before it runs. The rest of the request then acts for the
// session: service-role calls it makes carry the session (functions/_shared/impersonation.ts).
//
// A mutating request of a user (bearer, superAdmin) or an anonymous caller (publicRoute) is
// counted against the write rate limit before the route runs (functions/_shared/write_limit.ts,
// docs/rate_limits.md); cron routes and signed webhooks are not.
import type { Context, MiddlewareHandler } from 'hono'
import { checkCronSecret, type CronGroup } from '../_shared/cron.ts'
import { type Db, serviceDb, userDb } from '../_shared/db.ts'
import { optionalEnv } from '../_shared/env.ts'
import { forbidden, fromDb, HttpError, unauthorized } from '../_shared/errors.ts'
import { actingFor, impersonationSessionOf } from '../_shared/impersonation.ts'
import { bearerToken, type Claims, userClaims, verifyAccessToken } from '../_shared/jwt.ts'
import { takeApiWrite } from '../_shared/write_limit.ts'

export interface Caller {
  id: string
  email: string | null
  token: string
  claims: Claims
}

export type ApiEnv = {
  Variables: {
    caller: Caller
    /** PostgREST as the caller (RLS applies), or as the service role for cron routes. */
    db: Db
  }
}

/**
 * For an impersonation token: 401 once its session has ended; a mutating request (not GET, HEAD,
 * OPTIONS) is recorded in the session's audit before it runs. Nothing for other tokens.
 */
export async function beginImpersonatedRequest(token: string, claims: Claims, method: string, url: string) {
  if (!impersonationSessionOf(claims)) return
  const { pathname, search } = new URL(url)
  const { error, status } = await userDb(token).rpc('begin_impersonated_request', {
    method,
    path: (pathname + search).slice(0, 2000),
  })
  if (error) throw fromDb(error, status)
}

const READS = new Set(['GET', 'HEAD', 'OPTIONS'])

async function callerFrom(c: Context<ApiEnv>): Promise<Caller> {
  const token = bearerToken(c.req.header('authorization'))
  if (!token) throw unauthorized('Missing bearer token')
  const claims = await userClaims(token)
  if (!READS.has(c.req.method)) {
    // Counted against the user's write rate limit (429 over it). A change may reach a provider
    // or Storage with the service role: an account being deleted is refused here first (reads
    // as the caller meet the pre-request's refusal in every query).
    await takeApiWrite(claims.sub, c.req.raw.headers)
  }
  if (impersonationSessionOf(claims)) {
    await beginImpersonatedRequest(token, claims, c.req.method, c.req.url)
  }
  return { id: claims.sub, email: claims.email ?? null, token, claims }
}

/** The rest of the request, acting for the caller's impersonation session if it has one. */
function continueAs(caller: Caller, next: () => Promise<void>): Promise<void> {
  const session = impersonationSessionOf(caller.claims)
  return session ? actingFor(session, next) : next()
}

/** A signed-in user's bearer token. */
export const bearer: MiddlewareHandler<ApiEnv> = async (c, next) => {
  const caller = await callerFrom(c)
  c.set('caller', caller)
  c.set('db', userDb(caller.token))
  await continueAs(caller, next)
}

async function assertSuperAdmin(db: Db) {
  const { data, error, status } = await db.rpc('is_super_admin')
  if (error) throw fromDb(error, status)
  if (data !== true) throw forbidden('Super admin only')
}

/**
 * Is the caller a super admin? Asked of the database (profiles.role, so a demotion is
 * immediate); only when the database cannot be asked, the token's `user_role` claim (set by the
 * access-token hook) decides, so the health page can still report `degraded` to its readers.
 */
export async function superAdminEvenIfDegraded(caller: Caller): Promise<{ degraded: boolean }> {
  try {
    await assertSuperAdmin(userDb(caller.token))
    return { degraded: false }
  } catch (e) {
    if (!(e instanceof HttpError) || e.status !== 503) throw e
    if (caller.claims.user_role !== 'super_admin') throw forbidden('Super admin only')
    return { degraded: true }
  }
}

/** A signed-in super admin (read from profiles.role now, so a demotion is immediate). */
export const superAdmin: MiddlewareHandler<ApiEnv> = async (c, next) => {
  const caller = await callerFrom(c)
  const db = userDb(caller.token)
  await assertSuperAdmin(db)
  c.set('caller', caller)
  c.set('db', db)
  await continueAs(caller, next)
}

/**
 * A scheduled job: x-cron-secret must match the group's variables. Where the group's secret
 * is optional and unset, a super-admin or service-role bearer is required instead, so an
 * unset secret never opens the endpoint to everyone.
 */
export function cronSecret(group: CronGroup): MiddlewareHandler<ApiEnv> {
  return async (c, next) => {
    const check = checkCronSecret(group, c.req.header('x-cron-secret'), optionalEnv)
    if (!check.ok && check.reason === 'refused') throw unauthorized('Invalid or missing x-cron-secret')
    if (!check.ok && !check.optional) {
      console.error(`cron group ${group}: none of ${check.variables.join(', ')} is configured`)
      throw new HttpError(500, `The ${group} cron secret is not configured`)
    }
    if (!check.ok) {
      const token = bearerToken(c.req.header('authorization'))
      if (!token) throw unauthorized('Missing x-cron-secret or admin bearer token')
      const claims = await verifyAccessToken(token)
      if (claims.role !== 'service_role') await assertSuperAdmin(userDb(token))
    }
    c.set('db', serviceDb())
    await next()
  }
}

/**
 * A frontend-hosted scheduled route (SPEC Authentication 6): `Authorization: Bearer <secret>`
 * where the secret is one of the group's variables, compared in constant time.
 */
export function cronBearer(group: CronGroup): MiddlewareHandler<ApiEnv> {
  return async (c, next) => {
    const check = checkCronSecret(group, bearerToken(c.req.header('authorization')), optionalEnv)
    if (!check.ok && check.reason === 'refused') throw unauthorized('Invalid or missing cron bearer secret')
    if (!check.ok) {
      console.error(`cron group ${group}: none of ${check.variables.join(', ')} is configured`)
      throw new HttpError(503, `The ${group} cron secret is not configured`)
    }
    c.set('db', serviceDb())
    await next()
  }
}

/**
 * Jobs a super admin may also start by hand: with an x-cron-secret header the cron rule
 * applies (service role); otherwise the caller must be a super admin (their own token).
 */
export function adminOrCron(group: CronGroup): MiddlewareHandler<ApiEnv> {
  const cron = cronSecret(group)
  return async (c, next) => {
    if (c.req.header('x-cron-secret') !== undefined) return await cron(c, next)
    return await superAdmin(c, next)
  }
}

/** No credential: the route is public on purpose. A mutating request is counted against the
 *  write rate limit of the caller's address. */
export const publicRoute: MiddlewareHandler<ApiEnv> = async (c, next) => {
  if (!READS.has(c.req.method)) await takeApiWrite(null, c.req.raw.headers)
  await next()
}

/** Not counted against the write rate limit: a provider's signed webhook (the handler verifies
 *  the signature; a provider retries a 429 for days), or a public route that is not a write a
 *  person could flood (endpoint()'s `notAWrite` says why). */
export const notCounted: MiddlewareHandler<ApiEnv> = async (_c, next) => {
  await next()
}
