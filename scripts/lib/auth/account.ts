// Sign-up (e-mail and anonymous), the password and refresh-token grants, GET/PUT /user and
// logout: GoTrue's signup.go, anonymous.go, token.go, user.go and logout.go.
import { AuthError, badRequest, unprocessable, validationFailed } from './errors.ts'
import { checkMaxFrequency, sendAuthMail } from './mail.ts'
import { newOtp } from './otp.ts'
import { type Pkce, pkceGrant, pkceOf, startFlow } from './pkce.ts'
import { FIVE_MINUTES, ONE_HOUR, takeToken } from './ratelimit.ts'
import { redirectTarget } from './redirects.ts'
import { type AuthContext, clientIp, issueSession, refreshGrant, requireUser } from './sessions.ts'
import {
  checkPassword,
  dummyPasswordHash,
  hashPassword,
  insertEmailIdentity,
  insertUser,
  isBanned,
  mergeMetadata,
  normalizeEmail,
  passwordMatches,
  replacePassword,
  type Sql,
  userByEmail,
  userById,
  userJson,
  type UserRow,
} from './users.ts'

type Body = Record<string, any>

const signInLimit = (ctx: AuthContext, sql: Sql, req: Request) =>
  takeToken(sql, 'sign_in_sign_ups', clientIp(req), ctx.config.rateLimit.signInSignUps, FIVE_MINUTES)

/** Sends (or re-sends) the sign-up confirmation: a new code in confirmation_token. */
export async function sendConfirmation(
  ctx: AuthContext,
  sql: Sql,
  user: UserRow,
  redirectTo: string,
  pkce: Pkce | null = null,
) {
  checkMaxFrequency(ctx, user.confirmation_sent_at)
  const prefix = await startFlow(sql, user.id, pkce, 'email/signup')
  const { otp, hash } = newOtp(user.email!, ctx.config.email.otpLength)
  await sql`update auth.users set confirmation_token = ${
    prefix + hash
  }, confirmation_sent_at = now() where id = ${user.id}`
  await sendAuthMail(ctx, sql, { kind: 'signup', to: user.email!, tokenHash: prefix + hash, otp, redirectTo })
}

/** GoTrue's answer to signing up an address that is already confirmed, when confirmations are on. */
function obfuscatedUser(email: string, data: unknown) {
  const now = new Date().toISOString()
  return {
    id: crypto.randomUUID(),
    aud: 'authenticated',
    role: '',
    email,
    phone: '',
    confirmation_sent_at: now,
    app_metadata: { provider: 'email', providers: ['email'] },
    user_metadata: data && typeof data === 'object' ? data : {},
    identities: [],
    created_at: now,
    updated_at: now,
    is_anonymous: false,
  }
}

export async function signup(ctx: AuthContext, req: Request, body: Body) {
  const { config } = ctx
  if (!config.enableSignup) throw unprocessable('signup_disabled', 'Signups not allowed for this instance')
  if (!body.email && !body.phone) return anonymousSignIn(ctx, req, body)
  if (body.phone && !body.email) throw unprocessable('phone_provider_disabled', 'Phone signups are disabled')
  if (!config.email.enableSignup) throw unprocessable('email_provider_disabled', 'Email signups are disabled')
  if (typeof body.password !== 'string' || !body.password) {
    throw unprocessable('validation_failed', 'Signup requires a valid password')
  }
  const password = checkPassword(body.password, config)
  const email = normalizeEmail(body.email)
  const data = body.data && typeof body.data === 'object' && !Array.isArray(body.data) ? body.data : {}
  const redirectTo = redirectTarget(ctx, new URL(req.url).searchParams.get('redirect_to') ?? body.redirect_to)
  const pkce = pkceOf(body)
  return await ctx.sql.begin(async (tx) => {
    await signInLimit(ctx, tx, req)
    // Hashed whatever the address, so a taken one answers in the time a new one takes (hosted
    // Auth hashes only for a new user: docs/local_stack.md, "What tells an address has an account").
    const passwordHash = await hashPassword(tx, password)
    let user = await userByEmail(tx, email)
    if (user?.email_confirmed_at) {
      if (!config.email.enableConfirmations) {
        throw unprocessable('user_already_exists', 'User already registered')
      }
      return obfuscatedUser(email, data) // no hint to a stranger that the address is registered
    }
    // An unconfirmed sign-up is left as it is and its confirmation sent again (GoTrue's signup.go:
    // "we can't be sure of their claimed identity"); the database then voids its password
    // (private.void_unconfirmed_password), so neither sign-up's password survives the link.
    // Without confirmations GoTrue would confirm that pending account and sign this caller in
    // with no password checked; here it is refused as taken (unreachable with config.toml's
    // confirmations on).
    if (user && !config.email.enableConfirmations) {
      throw unprocessable('user_already_exists', 'User already registered')
    }
    user ??= await insertUser(tx, {
      email,
      passwordHash,
      userMetadata: data,
      confirmed: !config.email.enableConfirmations,
    })
    if (config.email.enableConfirmations) {
      await sendConfirmation(ctx, tx, user, redirectTo, pkce)
      return userJson(tx, (await userById(tx, user.id))!)
    }
    return issueSession(ctx, tx, user, 'password', req)
  })
}

async function anonymousSignIn(ctx: AuthContext, req: Request, body: Body) {
  if (!ctx.config.enableAnonymousSignIns) {
    throw unprocessable('anonymous_provider_disabled', 'Anonymous sign-ins are disabled')
  }
  const data = body.data && typeof body.data === 'object' && !Array.isArray(body.data) ? body.data : {}
  return await ctx.sql.begin(async (tx) => {
    await takeToken(tx, 'anonymous_users', clientIp(req), ctx.config.rateLimit.anonymousUsers, ONE_HOUR)
    const user = await insertUser(tx, { email: null, userMetadata: data, confirmed: false, anonymous: true })
    return issueSession(ctx, tx, user, 'anonymous', req)
  })
}

export async function token(ctx: AuthContext, req: Request, body: Body) {
  const grant = new URL(req.url).searchParams.get('grant_type')
  if (grant === 'password') return passwordGrant(ctx, req, body)
  if (grant === 'pkce') return pkceGrant(ctx, req, body)
  if (grant === 'refresh_token') {
    await takeToken(ctx.sql, 'token_refresh', clientIp(req), ctx.config.rateLimit.tokenRefresh, FIVE_MINUTES)
    return refreshGrant(ctx, body.refresh_token, req)
  }
  throw badRequest('validation_failed', 'unsupported_grant_type')
}

async function passwordGrant(ctx: AuthContext, req: Request, body: Body) {
  if (body.email && body.phone) {
    throw validationFailed('Only an email address or phone number should be provided on login.')
  }
  if (!body.email) throw badRequest('invalid_credentials', 'Invalid login credentials')
  await signInLimit(ctx, ctx.sql, req)
  const email = typeof body.email === 'string' ? body.email.trim().toLowerCase() : ''
  const user = await userByEmail(ctx.sql, email)
  const password = typeof body.password === 'string' ? body.password : ''
  // An unknown address (or one without a password) is checked against a dummy hash, so the
  // answer takes as long as a wrong password's (hosted Auth answers those at once).
  const stored = user?.encrypted_password || await dummyPasswordHash(ctx.sql)
  if (!(await passwordMatches(ctx.sql, password, stored)) || !user?.encrypted_password) {
    throw badRequest('invalid_credentials', 'Invalid login credentials')
  }
  if (isBanned(user)) throw badRequest('user_banned', 'User is banned') // GoTrue's 400 on this path
  if (!user.email_confirmed_at) throw badRequest('email_not_confirmed', 'Email not confirmed')
  return ctx.sql.begin((tx) => issueSession(ctx, tx, user, 'password', req))
}

export async function getUser(ctx: AuthContext, req: Request) {
  const { user } = await requireUser(ctx, req)
  return userJson(ctx.sql, user)
}

export async function updateUser(ctx: AuthContext, req: Request, body: Body) {
  const caller = await requireUser(ctx, req)
  // GoTrue's User limiter (per IP, [auth.rate_limit] sign_in_sign_ups): it bounds how fast
  // email_exists answers can be collected.
  await takeToken(ctx.sql, 'user_update', clientIp(req), ctx.config.rateLimit.signInSignUps, FIVE_MINUTES)
  const redirectTo = redirectTarget(ctx, new URL(req.url).searchParams.get('redirect_to') ?? body.redirect_to)
  const pkce = pkceOf(body)
  return await ctx.sql.begin(async (tx) => {
    let user = (await userById(tx, caller.user.id, true))!
    if (body.data !== undefined) {
      if (body.data !== null && (typeof body.data !== 'object' || Array.isArray(body.data))) {
        throw validationFailed('data must be an object')
      }
      await tx`update auth.users set raw_user_meta_data = ${
        tx.json(mergeMetadata(user.raw_user_meta_data, body.data) as any)
      }
               where id = ${user.id}`
    }
    if (body.password !== undefined) {
      const password = checkPassword(body.password, ctx.config)
      if (await passwordMatches(tx, password, user.encrypted_password)) {
        throw unprocessable('same_password', 'New password should be different from the old password.')
      }
      // GoTrue's LogoutAllExceptMe: a stolen session ends when its owner changes the password.
      await replacePassword(tx, user.id, await hashPassword(tx, password), caller.sessionId)
    }
    if (body.email !== undefined && body.email !== null && body.email !== '') {
      const email = normalizeEmail(body.email)
      if (email !== (user.email ?? '').toLowerCase()) {
        const taken = await userByEmail(tx, email)
        if (taken && taken.id !== user.id) {
          throw unprocessable('email_exists', 'A user with this email address has already been registered')
        }
        user = (await userById(tx, user.id))!
        await changeEmail(ctx, tx, user, email, redirectTo, pkce)
      }
    }
    await tx`update auth.users set updated_at = now() where id = ${user.id}`
    return userJson(tx, (await userById(tx, user.id))!)
  })
}

/**
 * Starts an e-mail change: without confirmations the address changes now; otherwise a code goes
 * to the new address and, with double_confirm_changes, another to the current one; /verify
 * with type email_change completes it once every code sent was used.
 */
async function changeEmail(
  ctx: AuthContext,
  tx: Sql,
  user: UserRow,
  email: string,
  redirectTo: string,
  pkce: Pkce | null,
) {
  if (!ctx.config.email.enableConfirmations) {
    const [u] =
      await tx`update auth.users set email = ${email}, email_confirmed_at = coalesce(email_confirmed_at, now()),
                           is_anonymous = false where id = ${user.id} returning *`
    await insertEmailIdentity(tx, u as UserRow)
    return
  }
  checkMaxFrequency(ctx, user.email_change_sent_at)
  const prefix = await startFlow(tx, user.id, pkce, 'email_change')
  const toNew = newOtp(email, ctx.config.email.otpLength)
  const both = ctx.config.email.doubleConfirmChanges && !!user.email
  const toCurrent = both ? newOtp(user.email!, ctx.config.email.otpLength) : null
  await tx`update auth.users set email_change = ${email}, email_change_token_new = ${prefix + toNew.hash},
             email_change_token_current = ${
    toCurrent ? prefix + toCurrent.hash : ''
  }, email_change_confirm_status = 0,
             email_change_sent_at = now()
           where id = ${user.id}`
  const mail = { kind: 'email_change' as const, redirectTo, email: user.email ?? '', newEmail: email }
  await sendAuthMail(ctx, tx, { ...mail, to: email, tokenHash: prefix + toNew.hash, otp: toNew.otp })
  if (toCurrent) {
    await sendAuthMail(ctx, tx, {
      ...mail,
      to: user.email!,
      tokenHash: prefix + toCurrent.hash,
      otp: toCurrent.otp,
    })
  }
}

export async function logout(ctx: AuthContext, req: Request) {
  const scope = new URL(req.url).searchParams.get('scope') ?? 'global'
  if (!['global', 'local', 'others'].includes(scope)) {
    throw validationFailed(`Unsupported logout scope "${scope}"`)
  }
  const { user, sessionId } = await requireUser(ctx, req)
  if (scope === 'global' || !sessionId) await ctx.sql`delete from auth.sessions where user_id = ${user.id}`
  else if (scope === 'local') await ctx.sql`delete from auth.sessions where id = ${sessionId}`
  else await ctx.sql`delete from auth.sessions where user_id = ${user.id} and id <> ${sessionId}`
  return null // 204
}

export { AuthError }
