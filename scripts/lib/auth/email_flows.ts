// Passwordless and e-mail flows: POST /otp (magic link / e-mail code), GET|POST /verify (the
// links and codes of every e-mail), POST /recover, POST /resend. GoTrue's otp.go, magic_link.go,
// verify.go, recover.go and resend.go.
import { AuthError, forbidden, unprocessable, validationFailed } from './errors.ts'
import { checkMaxFrequency, sendAuthMail } from './mail.ts'
import { newOtp, tokenHash } from './otp.ts'
import { issueAuthCode, type Pkce, PKCE_PREFIX, pkceOf, startFlow } from './pkce.ts'
import { FIVE_MINUTES, takeToken } from './ratelimit.ts'
import { redirectTarget } from './redirects.ts'
import { sendConfirmation } from './account.ts'
import { type AuthContext, clientIp, issueSession } from './sessions.ts'
import {
  insertEmailIdentity,
  insertUser,
  normalizeEmail,
  refuseBanned,
  type Sql,
  userByEmail,
  userById,
  type UserRow,
} from './users.ts'

type Body = Record<string, any>
const VERIFY_TYPES = ['signup', 'invite', 'magiclink', 'recovery', 'email_change', 'email'] as const
type VerifyType = typeof VERIFY_TYPES[number]

const redirectOf = (ctx: AuthContext, req: Request, body: Body) =>
  redirectTarget(ctx, new URL(req.url).searchParams.get('redirect_to') ?? body.redirect_to)

/** Sends a magic link (a code in recovery_token, as GoTrue keeps it) to a confirmed user. */
export async function sendMagicLink(
  ctx: AuthContext,
  sql: Sql,
  user: UserRow,
  redirectTo: string,
  kind: 'magiclink' | 'recovery',
  pkce: Pkce | null,
) {
  checkMaxFrequency(ctx, user.recovery_sent_at)
  const prefix = await startFlow(sql, user.id, pkce, kind)
  const { otp, hash } = newOtp(user.email!, ctx.config.email.otpLength)
  await sql`update auth.users set recovery_token = ${
    prefix + hash
  }, recovery_sent_at = now() where id = ${user.id}`
  await sendAuthMail(ctx, sql, { kind, to: user.email!, tokenHash: prefix + hash, otp, redirectTo })
}

/**
 * GoTrue's per-IP limiters of /otp, /recover and /resend ([auth.rate_limit] sign_in_sign_ups,
 * each route its own count), taken before the address is looked at: unknown addresses count
 * as known ones do.
 */
const routeLimit = (ctx: AuthContext, req: Request, route: 'otp' | 'recover' | 'resend') =>
  takeToken(ctx.sql, route, clientIp(req), ctx.config.rateLimit.signInSignUps, FIVE_MINUTES)

export async function otp(ctx: AuthContext, req: Request, body: Body) {
  await routeLimit(ctx, req, 'otp')
  if (!body.email) {
    if (body.phone) throw unprocessable('phone_provider_disabled', 'Unsupported phone provider')
    throw validationFailed('An email address or phone number is required')
  }
  const email = normalizeEmail(body.email)
  const redirectTo = redirectOf(ctx, req, body)
  const createUser = body.create_user !== false
  const pkce = pkceOf(body)
  const data = body.data && typeof body.data === 'object' && !Array.isArray(body.data) ? body.data : {}
  await ctx.sql.begin(async (tx) => {
    let user = await userByEmail(tx, email)
    if (!user) {
      if (!createUser) throw unprocessable('otp_disabled', 'Signups not allowed for otp')
      if (!ctx.config.enableSignup || !ctx.config.email.enableSignup) {
        throw unprocessable('signup_disabled', 'Signups not allowed for this instance')
      }
      await takeToken(tx, 'sign_in_sign_ups', clientIp(req), ctx.config.rateLimit.signInSignUps, FIVE_MINUTES)
      user = await insertUser(tx, {
        email,
        userMetadata: data,
        confirmed: !ctx.config.email.enableConfirmations,
      })
    }
    if (!user.email_confirmed_at) await sendConfirmation(ctx, tx, user, redirectTo, pkce)
    else await sendMagicLink(ctx, tx, user, redirectTo, 'magiclink', pkce)
  })
  return {}
}

export async function recover(ctx: AuthContext, req: Request, body: Body) {
  await routeLimit(ctx, req, 'recover')
  const email = normalizeEmail(body.email)
  const redirectTo = redirectOf(ctx, req, body)
  const pkce = pkceOf(body)
  await ctx.sql.begin(async (tx) => {
    const user = await userByEmail(tx, email)
    if (user) await sendMagicLink(ctx, tx, user, redirectTo, 'recovery', pkce) // unknown addresses get the same answer
  })
  return {}
}

export async function resend(ctx: AuthContext, req: Request, body: Body) {
  await routeLimit(ctx, req, 'resend')
  if (body.type !== 'signup' && body.type !== 'email_change') {
    throw validationFailed('Missing one of these types: signup, email_change, sms, phone_change')
  }
  const email = normalizeEmail(body.email)
  const redirectTo = redirectOf(ctx, req, body)
  await ctx.sql.begin(async (tx) => {
    if (body.type === 'signup') {
      const user = await userByEmail(tx, email)
      // A confirmed address gets the answer an unknown one gets (GoTrue's resend.go).
      if (user && !user.email_confirmed_at) await sendConfirmation(ctx, tx, user, redirectTo)
      return
    }
    const [user] = await tx`select * from auth.users where lower(email_change) = ${email}`
    if (!user) return
    checkMaxFrequency(ctx, user.email_change_sent_at)
    const toNew = newOtp(email, ctx.config.email.otpLength)
    await tx`update auth.users set email_change_token_new = ${toNew.hash}, email_change_sent_at = now() where id = ${user.id}`
    await sendAuthMail(ctx, tx, {
      kind: 'email_change',
      to: email,
      tokenHash: toNew.hash,
      otp: toNew.otp,
      redirectTo,
      email: user.email,
      newEmail: email,
    })
  })
  return {}
}

const expired = () => forbidden('otp_expired', 'Token has expired or is invalid')

/** Which token column a verify type reads, and when its code was sent. */
function candidates(
  type: VerifyType,
  u: UserRow,
): { column: string; value: string | null; sentAt: Date | null }[] {
  const confirmation = {
    column: 'confirmation_token',
    value: u.confirmation_token,
    sentAt: u.confirmation_sent_at,
  }
  const recovery = { column: 'recovery_token', value: u.recovery_token, sentAt: u.recovery_sent_at }
  if (type === 'signup' || type === 'invite') {
    return [{ ...confirmation, sentAt: u.confirmation_sent_at ?? u.invited_at }]
  }
  if (type === 'magiclink' || type === 'recovery') return [recovery]
  if (type === 'email') return [confirmation, recovery]
  return [
    { column: 'email_change_token_new', value: u.email_change_token_new, sentAt: u.email_change_sent_at },
    {
      column: 'email_change_token_current',
      value: u.email_change_token_current,
      sentAt: u.email_change_sent_at,
    },
  ]
}

/**
 * The user and token column a code or token hash belongs to, or otp_expired; a banned user's
 * is refused (403 user_banned) before it is used, as GoTrue's verifyTokenHash and
 * verifyUserAndToken do.
 */
async function findToken(ctx: AuthContext, tx: Sql, type: VerifyType, body: Body) {
  const fresh = (sentAt: Date | null) =>
    !!sentAt && sentAt.getTime() + ctx.config.email.otpExpiry * 1000 > Date.now()
  if (typeof body.token_hash === 'string' && body.token_hash) {
    const h = body.token_hash
    const [u] = await tx`select * from auth.users
      where confirmation_token = ${h} or recovery_token = ${h} or email_change_token_new = ${h}
         or email_change_token_current = ${h} for update`
    const hit = u && candidates(type, u as UserRow).find((c) => c.value === h)
    if (!hit) throw expired()
    refuseBanned(u as UserRow)
    if (!fresh(hit.sentAt)) throw expired()
    return { user: u as UserRow, column: hit.column }
  }
  if (typeof body.token !== 'string' || !body.token || typeof body.email !== 'string') {
    throw validationFailed('Verify requires either a token or a token hash')
  }
  const email = body.email.trim().toLowerCase()
  const hash = tokenHash(email, body.token.trim())
  const ofHash = (column: string) => tx`(${tx(column)} = ${hash} or ${tx(column)} = ${PKCE_PREFIX + hash})`
  // An e-mail change code is found by its hash (GoTrue's FindUserForEmailChange): several users
  // may have the same address pending, and only the code says whose it is.
  const [u] = type === 'email_change'
    ? await tx`select * from auth.users
        where is_sso_user = false and (
          ${
      ctx.config.email.doubleConfirmChanges
        ? tx`(lower(email) = ${email} and ${ofHash('email_change_token_current')}) or`
        : tx``
    }
          (lower(email_change) = ${email} and ${ofHash('email_change_token_new')}))
        order by lower(email) = ${email} desc limit 1 for update`
    : await tx`select * from auth.users where lower(email) = ${email} and is_sso_user = false
               order by created_at limit 1 for update`
  if (!u) throw expired()
  const user = u as UserRow
  refuseBanned(user)
  const hit = candidates(type, user).find((c) => {
    const address = c.column === 'email_change_token_new' ? user.email_change : user.email
    const stored = (c.value ?? '').replace(PKCE_PREFIX, '')
    return !!stored && !!address && address.toLowerCase() === email && stored === hash
  })
  if (!hit || !fresh(hit.sentAt)) throw expired()
  return { user, column: hit.column }
}

export type VerifyOutcome =
  | { kind: 'session'; session: Record<string, any>; type: VerifyType; redirectTo: string }
  | { kind: 'code'; code: string; redirectTo: string }
  | { kind: 'message'; msg: string; redirectTo: string }

/** The flow-state method each verify type's PKCE flow was started with. */
const FLOW_METHOD: Record<string, string> = {
  signup: 'email/signup',
  invite: 'invite',
  magiclink: 'magiclink',
  recovery: 'recovery',
  email_change: 'email_change',
}

/**
 * Uses a code or link: confirms, signs in, or completes (half of) an e-mail change. A link of
 * a PKCE flow (`viaLink`, token "pkce_...") yields the flow's auth code instead of a session.
 */
export async function verify(
  ctx: AuthContext,
  req: Request,
  body: Body,
  viaLink = false,
): Promise<VerifyOutcome> {
  const type = body.type as VerifyType
  if (!VERIFY_TYPES.includes(type)) throw validationFailed(`Verify requires a verification type`)
  const redirectTo = redirectOf(ctx, req, body)
  await takeToken(
    ctx.sql,
    'token_verifications',
    clientIp(req),
    ctx.config.rateLimit.tokenVerifications,
    FIVE_MINUTES,
  )
  const pkceLink = viaLink && String(body.token_hash ?? '').startsWith(PKCE_PREFIX)
  return await ctx.sql.begin(async (tx): Promise<VerifyOutcome> => {
    const { user, column } = await findToken(ctx, tx, type, body)
    const signIn = async (u: UserRow): Promise<VerifyOutcome> =>
      pkceLink
        ? { kind: 'code', code: await issueAuthCode(tx, u.id, FLOW_METHOD[type]), redirectTo }
        : { kind: 'session', session: await issueSession(ctx, tx, u, 'otp', req), type, redirectTo }
    if (type === 'email_change') {
      await tx`update auth.users set ${
        tx(column)
      } = '', email_change_confirm_status = email_change_confirm_status + 1
               where id = ${user.id}`
      const after = (await userById(tx, user.id))!
      if (after.email_change_token_new || after.email_change_token_current) {
        return {
          kind: 'message',
          msg: 'Confirmation link accepted. Please proceed to confirm link sent to the other email',
          redirectTo,
        }
      }
      // The address may have been taken since the change was asked for.
      const [taken] = await tx`select id from auth.users where lower(email) = lower(${after.email_change})
                               and id <> ${user.id} and is_sso_user = false limit 1`
      if (taken) {
        throw unprocessable('email_exists', 'A user with this email address has already been registered')
      }
      const [changed] = await tx`update auth.users set email = email_change, email_change = '',
          email_change_confirm_status = 0, email_confirmed_at = coalesce(email_confirmed_at, now()),
          is_anonymous = false, updated_at = now()
        where id = ${user.id} returning *`
      await insertEmailIdentity(tx, changed as UserRow)
      await tx`update auth.identities set identity_data = identity_data || jsonb_build_object('email', ${changed.email}::text)
               where user_id = ${user.id} and provider = 'email'`
      return signIn(changed as UserRow)
    }
    const [done] = await tx`update auth.users set ${tx(column)} = '',
        email_confirmed_at = coalesce(email_confirmed_at, now()), updated_at = now()
      where id = ${user.id} returning *`
    await tx`update auth.identities set identity_data = identity_data || '{"email_verified": true}'::jsonb
             where user_id = ${user.id} and provider = 'email'`
    return signIn(done as UserRow)
  })
}

/** GET /verify: the link in an e-mail. Redirects with the session (or the error) in the fragment. */
export async function verifyLink(ctx: AuthContext, req: Request): Promise<Response> {
  const q = new URL(req.url).searchParams
  const body = { type: q.get('type'), token_hash: q.get('token'), redirect_to: q.get('redirect_to') }
  const fallback = redirectTarget(ctx, body.redirect_to)
  let location: string
  try {
    const out = await verify(ctx, req, body, true)
    if (out.kind === 'code') {
      const target = new URL(out.redirectTo)
      target.searchParams.set('code', out.code)
      location = target.toString()
    } else if (out.kind === 'message') {
      location = `${out.redirectTo}#${new URLSearchParams({ message: out.msg })}`
    } else {
      const s = out.session
      location = `${out.redirectTo}#${new URLSearchParams({
        access_token: s.access_token,
        expires_at: String(s.expires_at),
        expires_in: String(s.expires_in),
        refresh_token: s.refresh_token,
        token_type: 'bearer',
        type: out.type,
      })}`
    }
  } catch (e) {
    if (!(e instanceof AuthError)) throw e
    const description = e.code === 'otp_expired' ? 'Email link is invalid or has expired' : e.message
    location = `${fallback}#${new URLSearchParams({
      error: 'access_denied',
      error_code: e.code,
      error_description: description,
    })}`
  }
  return new Response(null, { status: 303, headers: { location } })
}
