// Mints access tokens the way Supabase Auth does locally: HS256 with the project's JWT
// secret, claims passed through the custom access-token hook (public.custom_access_token_hook).
// The local Auth stand-in (scripts/lib/auth/) and `npm run token` both mint through here.
import { SignJWT } from 'jose'
import type postgres from 'postgres'

export interface MintOptions {
  secret: string
  expiresInSeconds?: number
}

/** Signs arbitrary claims (tests use this for expired or odd tokens). */
export function signClaims(claims: Record<string, unknown>, secret: string, expiresInSeconds = 3600) {
  const now = Math.floor(Date.now() / 1000)
  return new SignJWT({ iat: now, exp: now + expiresInSeconds, ...claims })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .sign(new TextEncoder().encode(secret))
}

/**
 * The claims after the custom access-token hook, called as Supabase Auth calls it: with
 * `{user_id, claims, authentication_method}`, keeping the `claims` it returns.
 * `hook` is "schema.function" (from config.toml), or null for no hook.
 */
export async function hookedClaims(
  sql: postgres.Sql | postgres.TransactionSql,
  userId: string,
  claims: Record<string, unknown>,
  authenticationMethod: string,
  hook: string | null = 'public.custom_access_token_hook',
): Promise<Record<string, unknown>> {
  if (!hook) return claims
  const [schema, fn] = hook.split('.')
  const event = { user_id: userId, claims, authentication_method: authenticationMethod }
  const [{ result }] = await sql`select ${sql(schema)}.${sql(fn)}(${sql.json(event as any)}) as result`
  return (result as { claims?: Record<string, unknown> })?.claims ?? claims
}

/** A session token for a user, with the claims the access-token hook adds. */
export async function mintUserToken(sql: postgres.Sql, email: string, o: MintOptions) {
  const [user] = await sql`select id, email, raw_app_meta_data, raw_user_meta_data from auth.users where email = ${email}`
  if (!user) throw new Error(`No user with email ${email}`)
  const base = {
    sub: user.id,
    aud: 'authenticated',
    role: 'authenticated',
    email: user.email,
    app_metadata: user.raw_app_meta_data ?? {},
    user_metadata: user.raw_user_meta_data ?? {},
    aal: 'aal1',
    session_id: crypto.randomUUID(),
    is_anonymous: false,
  }
  const claims = await hookedClaims(sql, user.id, base, 'password')
  return { userId: user.id as string, token: await signClaims(claims, o.secret, o.expiresInSeconds ?? 3600) }
}
