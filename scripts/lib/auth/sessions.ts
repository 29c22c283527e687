// Sessions as GoTrue keeps them: a row in auth.sessions, its sign-in methods in
// auth.mfa_amr_claims (the `amr` claim), and a chain of refresh tokens in auth.refresh_tokens
// that rotates on every refresh, with GoTrue's reuse detection.
import { jwtVerify, SignJWT } from 'jose'
import type postgres from 'postgres'
import { hookedClaims } from '../tokens.ts'
import type { AuthConfig } from './config.ts'
import { AuthError, badRequest, forbidden } from './errors.ts'
import { isBanned, refuseBanned, type Sql, userById, userJson, type UserRow } from './users.ts'

export interface AuthContext {
  sql: postgres.Sql // as supabase_auth_admin, as GoTrue connects
  config: AuthConfig
  apiUrl: string // the gateway's URL; Auth is at apiUrl + /auth/v1
  jwtSecret: string
  anonKey: string
  serviceRoleKey: string
  inboxSender: string
}

const ALPHANUMERIC = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'

/** A random string of letters and digits, without modulo bias. */
export function randomAlphanumeric(length: number): string {
  let out = ''
  while (out.length < length) {
    for (const b of crypto.getRandomValues(new Uint8Array(length * 2))) {
      if (b < 248 && out.length < length) out += ALPHANUMERIC[b % 62]
    }
  }
  return out
}

/** Where the request came from (the gateway passes the peer address). */
export const clientIp = (req: Request) => req.headers.get('x-local-client-ip') ?? ''

/** A signed access token with hosted Auth's claims, passed through the custom access-token hook. */
async function accessToken(ctx: AuthContext, sql: Sql, user: UserRow, sessionId: string, method: string) {
  const now = Math.floor(Date.now() / 1000)
  const exp = now + ctx.config.jwtExpiry
  const amr = await sql`select authentication_method, updated_at from auth.mfa_amr_claims
                        where session_id = ${sessionId} order by updated_at desc`
  const claims: Record<string, unknown> = {
    iss: `${ctx.apiUrl}/auth/v1`,
    sub: user.id,
    aud: user.aud || 'authenticated',
    exp,
    iat: now,
    email: user.email ?? '',
    phone: user.phone ?? '',
    app_metadata: user.raw_app_meta_data ?? {},
    user_metadata: user.raw_user_meta_data ?? {},
    role: user.role || 'authenticated',
    aal: 'aal1',
    amr: amr.map((a) => ({
      method: a.authentication_method,
      timestamp: Math.floor(a.updated_at.getTime() / 1000),
    })),
    session_id: sessionId,
    is_anonymous: user.is_anonymous ?? false,
  }
  const hooked = await hookedClaims(sql, user.id, claims, method, ctx.config.customAccessTokenHook)
  const token = await new SignJWT(hooked).setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .sign(new TextEncoder().encode(ctx.jwtSecret))
  return { token, expiresAt: Number(hooked.exp ?? exp) }
}

async function tokenResponse(
  ctx: AuthContext,
  sql: Sql,
  user: UserRow,
  sessionId: string,
  refreshToken: string,
  method: string,
) {
  const { token, expiresAt } = await accessToken(ctx, sql, user, sessionId, method)
  return {
    access_token: token,
    token_type: 'bearer',
    expires_in: ctx.config.jwtExpiry,
    expires_at: expiresAt,
    refresh_token: refreshToken,
    user: await userJson(sql, user),
  }
}

async function insertRefreshToken(sql: Sql, userId: string, sessionId: string, parent: string | null) {
  const token = randomAlphanumeric(12)
  await sql`insert into auth.refresh_tokens (instance_id, token, user_id, revoked, created_at, updated_at, parent, session_id)
            values ('00000000-0000-0000-0000-000000000000', ${token}, ${userId}, false, now(), now(), ${parent}, ${sessionId})`
  return token
}

/** Signs the user in: a new session, its first refresh token, last_sign_in_at, and the token response. */
export async function issueSession(ctx: AuthContext, sql: Sql, user: UserRow, method: string, req: Request) {
  refuseBanned(user) // the last line of defence: each sign-in path refuses a ban first, with its own code
  const sessionId = crypto.randomUUID()
  const ip = clientIp(req) || null
  await sql`insert into auth.sessions (id, user_id, created_at, updated_at, aal, user_agent, ip)
            values (${sessionId}, ${user.id}, now(), now(), 'aal1', ${
    req.headers.get('user-agent')
  }, ${ip}::inet)`
  await sql`insert into auth.mfa_amr_claims (session_id, created_at, updated_at, authentication_method, id)
            values (${sessionId}, now(), now(), ${method}, ${crypto.randomUUID()})`
  const refreshToken = await insertRefreshToken(sql, user.id, sessionId, null)
  const [signedIn] =
    await sql`update auth.users set last_sign_in_at = now() where id = ${user.id} returning *`
  await sql`update auth.identities set last_sign_in_at = now() where user_id = ${user.id}`
  return tokenResponse(ctx, sql, signedIn as UserRow, sessionId, refreshToken, method)
}

/** POST /token?grant_type=refresh_token: rotation, and GoTrue's reuse detection. */
export async function refreshGrant(ctx: AuthContext, refreshToken: unknown, req: Request) {
  if (typeof refreshToken !== 'string' || !refreshToken) {
    throw new AuthError(400, 'validation_failed', 'refresh_token required')
  }
  // A reuse found outside the interval revokes the session's tokens, and that must be
  // committed even though the request fails: the transaction returns the error to throw.
  const result = await ctx.sql.begin(async (tx) => {
    const [rt] = await tx`select * from auth.refresh_tokens where token = ${refreshToken} for update`
    if (!rt) return badRequest('refresh_token_not_found', 'Invalid Refresh Token: Refresh Token Not Found')
    const user = await userById(tx, rt.user_id, true)
    if (!user) return badRequest('refresh_token_not_found', 'Invalid Refresh Token: Refresh Token Not Found')
    if (isBanned(user)) {
      return badRequest('user_banned', 'Invalid Refresh Token: User Banned')
    }
    const [session] = rt.session_id
      ? await tx`select * from auth.sessions where id = ${rt.session_id} for update`
      : []
    if (!session) return badRequest('session_not_found', 'Invalid Refresh Token: No Valid Session Found')
    if (session.not_after && session.not_after < new Date()) {
      return badRequest('session_expired', 'Invalid Refresh Token: Session Expired')
    }
    let issued: string | null = null
    if (rt.revoked) {
      const [active] =
        await tx`select * from auth.refresh_tokens where session_id = ${session.id} and revoked = false
                                order by id desc limit 1`
      if (active && active.parent === rt.token) {
        // The client lost the answer to its last refresh: hand back the token it was given.
        issued = active.token
      } else {
        const reuseUntil = rt.updated_at.getTime() + ctx.config.refreshTokenReuseInterval * 1000
        if (Date.now() > reuseUntil) {
          if (ctx.config.refreshTokenRotation) {
            // GoTrue's RevokeTokenFamily: every token of the session, updated_at left as it was.
            await tx`update auth.refresh_tokens set revoked = true where session_id = ${session.id} and revoked = false`
          }
          return badRequest('refresh_token_already_used', 'Invalid Refresh Token: Already Used')
        }
      }
    }
    if (!issued) {
      await tx`update auth.refresh_tokens set revoked = true, updated_at = now() where id = ${rt.id}`
      issued = await insertRefreshToken(tx, user.id, session.id, rt.token)
    }
    await tx`update auth.sessions set refreshed_at = (now() at time zone 'utc'), updated_at = now(),
               user_agent = ${req.headers.get('user-agent')}, ip = ${clientIp(req) || null}::inet
             where id = ${session.id}`
    return tokenResponse(ctx, tx, user, session.id, issued, 'token_refresh')
  })
  if (result instanceof AuthError) throw result
  return result
}

export interface Caller {
  claims: Record<string, any>
  user: UserRow
  sessionId: string | null
}

/** The verified claims of the request's bearer token (GoTrue's requireAuthentication). */
export async function verifiedClaims(ctx: AuthContext, req: Request): Promise<Record<string, any>> {
  const m = (req.headers.get('authorization') ?? '').match(/^Bearer\s+(\S+)\s*$/i)
  if (!m) throw new AuthError(401, 'no_authorization', 'This endpoint requires a valid Bearer token')
  try {
    const { payload } = await jwtVerify(m[1], new TextEncoder().encode(ctx.jwtSecret), {
      algorithms: ['HS256'],
    })
    return payload as Record<string, any>
  } catch (e) {
    const why = (e as { code?: string }).code === 'ERR_JWT_EXPIRED'
      ? 'token has invalid claims: token is expired'
      : (e as Error).message
    throw forbidden('bad_jwt', `invalid JWT: unable to parse or verify signature, ${why}`)
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const NIL_UUID = '00000000-0000-0000-0000-000000000000'

/**
 * The signed-in user behind the bearer token, and the session it belongs to (GoTrue's
 * maybeLoadUserOrSession). A session_id claim must name a row of auth.sessions: that is what
 * refuses a signed-out session's token, and an impersonation token, whose session_id is the
 * impersonation session's and never an Auth session. A token without one is taken as the user.
 */
export async function requireUser(ctx: AuthContext, req: Request): Promise<Caller> {
  const claims = await verifiedClaims(ctx, req)
  if (typeof claims.sub !== 'string' || !claims.sub) {
    throw forbidden('bad_jwt', 'invalid claim: missing sub claim')
  }
  if (!UUID.test(claims.sub)) throw badRequest('bad_jwt', 'invalid claim: sub claim must be a UUID')
  const user = await userById(ctx.sql, claims.sub)
  if (!user) throw forbidden('user_not_found', 'User from sub claim in JWT does not exist')
  const claimed = claims.session_id
  const sessionId = typeof claimed === 'string' && claimed && claimed !== NIL_UUID ? claimed : null
  if (sessionId) {
    if (!UUID.test(sessionId)) throw forbidden('bad_jwt', 'invalid claim: session_id claim must be a UUID')
    const [s] = await ctx.sql`select id from auth.sessions where id = ${sessionId}::uuid`
    if (!s) throw forbidden('session_not_found', 'Session from session_id claim in JWT does not exist')
  }
  refuseBanned(user) // a token issued before the ban (GoTrue's requireAuthentication)
  return { claims, user, sessionId }
}

/** The service role (or supabase_admin) as GoTrue's admin routes require. */
export async function requireAdmin(ctx: AuthContext, req: Request) {
  const claims = await verifiedClaims(ctx, req)
  if (!['service_role', 'supabase_admin'].includes(claims.role)) {
    throw forbidden('not_admin', 'User not allowed')
  }
  return claims
}
