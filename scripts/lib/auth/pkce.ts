// PKCE as GoTrue does it for e-mail flows: a request with code_challenge records a flow state;
// the e-mailed token gets a "pkce_" prefix; the link then redirects with ?code=<auth code>
// instead of tokens in the fragment, and /token?grant_type=pkce trades the code and the
// code_verifier for a session (auth-js: exchangeCodeForSession).
import { createHash } from 'node:crypto'
import { AuthError, badRequest, notFound, validationFailed } from './errors.ts'
import { type AuthContext, issueSession } from './sessions.ts'
import { refuseBanned, type Sql, userById } from './users.ts'

export const PKCE_PREFIX = 'pkce_'
const FLOW_STATE_EXPIRY_SECONDS = 300

export interface Pkce {
  challenge: string
  method: 's256' | 'plain'
}

/** The request's code challenge, or null for the implicit flow. */
export function pkceOf(body: Record<string, any>): Pkce | null {
  const challenge = body.code_challenge
  if (!challenge) return null
  const method = String(body.code_challenge_method ?? '').toLowerCase()
  if (method !== 's256' && method !== 'plain') throw validationFailed('Code challenge method not supported')
  if (typeof challenge !== 'string' || challenge.length < 43 || challenge.length > 128) {
    throw validationFailed('code challenge has to be between 43 and 128 characters')
  }
  return { challenge, method }
}

/** Records the flow and returns the prefix the e-mailed token carries ("" without PKCE). */
export async function startFlow(sql: Sql, userId: string, pkce: Pkce | null, authenticationMethod: string) {
  if (!pkce) return ''
  await sql`insert into auth.flow_state (id, user_id, auth_code, code_challenge_method, code_challenge, provider_type,
                                         created_at, updated_at, authentication_method)
            values (${crypto.randomUUID()}, ${userId}, ${crypto.randomUUID()}, ${pkce.method}, ${pkce.challenge}, 'email',
                    now(), now(), ${authenticationMethod})`
  return PKCE_PREFIX
}

/** The auth code of the user's latest flow for this method (GoTrue's issueAuthCode). */
export async function issueAuthCode(sql: Sql, userId: string, authenticationMethod: string): Promise<string> {
  const [flow] = await sql`update auth.flow_state set auth_code_issued_at = now(), updated_at = now()
    where id = (select id from auth.flow_state where user_id = ${userId} and authentication_method = ${authenticationMethod}
                order by created_at desc limit 1)
    returning auth_code`
  if (!flow) throw notFound('flow_state_not_found', 'No valid flow state found for user.')
  return flow.auth_code
}

/** POST /token?grant_type=pkce. */
export async function pkceGrant(ctx: AuthContext, req: Request, body: Record<string, any>) {
  const { auth_code: code, code_verifier: verifier } = body
  if (typeof code !== 'string' || !code || typeof verifier !== 'string' || !verifier) {
    throw badRequest(
      'validation_failed',
      'invalid request: both auth code and code verifier should be non-empty',
    )
  }
  return await ctx.sql.begin(async (tx) => {
    const [flow] = await tx`select * from auth.flow_state where auth_code = ${code} for update`
    if (!flow || !flow.user_id) {
      throw notFound('flow_state_not_found', 'invalid flow state, no valid flow state found')
    }
    const since: Date = flow.auth_code_issued_at ?? flow.created_at
    if (since.getTime() + FLOW_STATE_EXPIRY_SECONDS * 1000 < Date.now()) {
      throw new AuthError(422, 'flow_state_expired', 'invalid flow state, flow state has expired')
    }
    const computed = flow.code_challenge_method === 's256'
      ? createHash('sha256').update(verifier).digest('base64url')
      : verifier
    if (computed !== flow.code_challenge) {
      throw badRequest('bad_code_verifier', 'code challenge does not match previously saved code verifier')
    }
    const user = await userById(tx, flow.user_id)
    if (!user) throw notFound('user_not_found', 'User not found')
    refuseBanned(user) // a code issued before a ban
    await tx`delete from auth.flow_state where id = ${flow.id}`
    return issueSession(ctx, tx, user, flow.authentication_method, req)
  })
}
