// Access tokens as Supabase Realtime checks them: an HS256/384/512 JWT signed with the project's
// secret, with `role` and an integer `exp` in the future. Errors carry Realtime's own reasons.
import { decodeJwt, decodeProtectedHeader, errors, jwtVerify } from 'jose'

export type Claims = Record<string, unknown> & { role: string; exp: number; sub?: string }

export class TokenError extends Error {}

/** The roles a verified token may act as: those PostgREST's authenticator may assume. */
export const API_ROLES = new Set(['anon', 'authenticated', 'service_role'])

export async function verifyToken(token: unknown, secret: string): Promise<Claims> {
  if (typeof token !== 'string' || !token) {
    throw new TokenError('MalformedJWT: The token provided is not a valid JWT')
  }
  let alg: string | undefined
  try {
    decodeJwt(token)
    alg = decodeProtectedHeader(token).alg
  } catch {
    throw new TokenError('MalformedJWT: The token provided is not a valid JWT')
  }
  if (!alg || !['HS256', 'HS384', 'HS512'].includes(alg)) {
    throw new TokenError(
      'JwtSignerError: Failed to generate JWT signer, check your JWT secret or JWKS configuration',
    )
  }
  let claims: Record<string, unknown>
  try {
    claims = (await jwtVerify(token, new TextEncoder().encode(secret), { algorithms: [alg] })).payload
  } catch (e) {
    if (e instanceof errors.JWTExpired) {
      const exp = Number((e.payload as Record<string, unknown>).exp)
      throw new TokenError(
        `InvalidJWTToken: Token has expired ${Math.floor(Date.now() / 1000) - exp} seconds ago`,
      )
    }
    throw new TokenError('JwtSignatureError: Failed to validate JWT signature')
  }
  if (typeof claims.role !== 'string' || !Number.isInteger(claims.exp)) {
    throw new TokenError('InvalidJWTToken: Fields `role` and `exp` are required in JWT')
  }
  if (!API_ROLES.has(claims.role)) {
    throw new TokenError(`Unauthorized: the role "${claims.role}" is not one the API roles may assume`)
  }
  return claims as Claims
}
