// Verifies Supabase access tokens: HS256 against the project's JWT secret, or ES256/RS256
// against the project's JWKS when JWKS_URL is configured. Anything else is refused
// (including alg "none").
import { createRemoteJWKSet, decodeProtectedHeader, errors, type JWTPayload, jwtVerify } from 'jose'
import { optionalEnv } from './env.ts'
import { unauthorized } from './errors.ts'

export interface Claims extends JWTPayload {
  sub?: string
  email?: string
  role?: string
  /** profiles.role, added by the custom access-token hook (for UIs; the database decides). */
  user_role?: string
}

let hsKey: Uint8Array | undefined
let jwks: ReturnType<typeof createRemoteJWKSet> | undefined

function hmacKey() {
  if (!hsKey) {
    const secret = optionalEnv('JWT_SECRET') ?? optionalEnv('SUPABASE_JWT_SECRET')
    if (!secret) throw new Error('JWT_SECRET is not configured')
    hsKey = new TextEncoder().encode(secret)
  }
  return hsKey
}

function keySet() {
  const url = optionalEnv('JWKS_URL')
  if (!url) return undefined
  jwks ??= createRemoteJWKSet(new URL(url))
  return jwks
}

// Verified tokens, remembered briefly: a client sends the same token with every request, and
// verifying it again costs more than the rest of a small request's work in this process. An
// entry is kept at most VERIFIED_TTL_MS and never past the token's own exp/nbf window, so a
// rotated JWKS key stops being honoured within that time.
const VERIFIED_TTL_MS = 60_000
const VERIFIED_MAX = 10_000
const verified = new Map<string, { claims: Claims; until: number }>()

function remember(token: string, claims: Claims) {
  const until = Math.min(Date.now() + VERIFIED_TTL_MS, (claims.exp as number) * 1000)
  if (typeof claims.nbf === 'number' && claims.nbf * 1000 > Date.now()) return
  if (verified.size >= VERIFIED_MAX) verified.delete(verified.keys().next().value!) // the oldest
  verified.set(token, { claims, until })
}

/** Returns the token's claims, or throws a 401 HttpError saying why it was refused. */
export async function verifyAccessToken(token: string): Promise<Claims> {
  const hit = verified.get(token)
  if (hit && hit.until > Date.now()) return { ...hit.claims }
  if (hit) verified.delete(token)
  const claims = await verifySignature(token)
  remember(token, claims)
  return { ...claims }
}

async function verifySignature(token: string): Promise<Claims> {
  let alg: string | undefined
  try {
    alg = decodeProtectedHeader(token).alg
  } catch {
    throw unauthorized('Malformed token')
  }
  try {
    if (alg === 'HS256') {
      return (await jwtVerify(token, hmacKey(), { algorithms: ['HS256'], requiredClaims: ['exp'] }))
        .payload as Claims
    }
    const set = keySet()
    if ((alg === 'ES256' || alg === 'RS256') && set) {
      return (await jwtVerify(token, set, { algorithms: ['ES256', 'RS256'], requiredClaims: ['exp'] }))
        .payload as Claims
    }
  } catch (e) {
    if (e instanceof errors.JWTExpired) throw unauthorized('Token expired')
    if (e instanceof errors.JOSEError) throw unauthorized('Invalid token signature or claims')
    throw e
  }
  throw unauthorized(`Unsupported token algorithm ${alg}`)
}

/** A signed-in user's session token (not the anon or service-role key, not another audience). */
export function isUserToken(claims: Claims): claims is Claims & { sub: string } {
  const aud = Array.isArray(claims.aud) ? claims.aud : [claims.aud]
  return !!claims.sub && claims.role === 'authenticated' && aud.includes('authenticated')
}

/** The claims of a signed-in user's token, or a 401. */
export async function userClaims(token: string): Promise<Claims & { sub: string }> {
  const claims = await verifyAccessToken(token)
  if (!isUserToken(claims)) throw unauthorized('The token does not identify a signed-in user')
  return claims
}

/** The bearer token of an Authorization header, or null. */
export function bearerToken(header: string | null | undefined): string | null {
  const m = header?.match(/^Bearer\s+(\S+)$/i)
  return m ? m[1] : null
}
