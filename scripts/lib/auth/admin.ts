// The admin API (service role only): /admin/users (create, list, get, update, delete),
// /admin/generate_link and /invite. GoTrue's admin.go, invite.go and generate_link.go.
import { AuthError, badRequest, notFound, unprocessable, validationFailed } from './errors.ts'
import { sendAuthMail } from './mail.ts'
import { newOtp } from './otp.ts'
import { redirectTarget } from './redirects.ts'
import { type AuthContext, requireAdmin } from './sessions.ts'
import {
  checkPassword,
  hashPassword,
  insertEmailIdentity,
  insertUser,
  mergeMetadata,
  normalizeEmail,
  replacePassword,
  type Sql,
  userByEmail,
  userById,
  userJson,
  type UserRow,
} from './users.ts'

type Body = Record<string, any>
const userNotFound = () => notFound('user_not_found', 'User not found')
const emailExists = () =>
  unprocessable('email_exists', 'A user with this email address has already been registered')
const objectOr = (v: unknown, d: Record<string, unknown> = {}) =>
  v && typeof v === 'object' && !Array.isArray(v) ? v as Record<string, unknown> : d

/** The longest duration Go's time.ParseDuration holds (int64 nanoseconds), in seconds. */
const MAX_GO_DURATION_SECONDS = 9223372036.854775807

/** "none" (lift a ban) or a Go duration such as "24h", "30m", "1h30m", "876000h". */
function banUntil(duration: unknown): Date | null {
  if (duration === 'none') return null
  const invalid = () => badRequest('validation_failed', 'invalid format for ban duration: time: invalid duration')
  if (typeof duration !== 'string' || !/^(?:\d+(?:h|m|s))+$/.test(duration)) throw invalid()
  const seconds = [...duration.matchAll(/(\d+)(h|m|s)/g)].reduce(
    (s, x) => s + Number(x[1]) * ({ h: 3600, m: 60, s: 1 } as Record<string, number>)[x[2]],
    0,
  )
  if (!(seconds <= MAX_GO_DURATION_SECONDS)) throw invalid() // GoTrue: time.ParseDuration overflows
  return new Date(Date.now() + seconds * 1000)
}

/** auth.users.role is a varchar(255): a longer role is refused before Postgres would fail. */
function roleOf(role: unknown): string | undefined {
  if (typeof role !== 'string') return undefined
  if (role.length > 255) throw validationFailed('role: must be at most 255 characters')
  return role
}

export async function adminRoute(
  ctx: AuthContext,
  req: Request,
  path: string,
  body: Body,
): Promise<Response | unknown> {
  await requireAdmin(ctx, req)
  const idMatch = path.match(/^\/admin\/users\/([^/]+)$/)
  if (path === '/admin/users' && req.method === 'GET') return listUsers(ctx, req)
  if (path === '/admin/users' && req.method === 'POST') return createUser(ctx, body)
  if (idMatch && req.method === 'GET') {
    const user = await userById(ctx.sql, idMatch[1])
    if (!user) throw userNotFound()
    return userJson(ctx.sql, user)
  }
  if (idMatch && req.method === 'PUT') return updateUser(ctx, idMatch[1], body)
  if (idMatch && req.method === 'DELETE') return deleteUser(ctx, idMatch[1], body)
  if (path === '/admin/generate_link' && req.method === 'POST') return generateLink(ctx, req, body)
  if (path === '/invite' && req.method === 'POST') return invite(ctx, req, body)
  return undefined
}

async function listUsers(ctx: AuthContext, req: Request) {
  const q = new URL(req.url).searchParams
  const page = Math.max(1, Number.parseInt(q.get('page') ?? '1') || 1)
  const perPage = Math.min(1000, Math.max(1, Number.parseInt(q.get('per_page') ?? '50') || 50))
  // GoTrue reads page as a uint64; an offset past Postgres' bigint would be its 500.
  if (!Number.isSafeInteger((page - 1) * perPage)) throw validationFailed('page: out of range')
  const [{ total }] = await ctx.sql`select count(*)::int as total from auth.users`
  const rows = await ctx.sql`select * from auth.users order by created_at desc, id
                             limit ${perPage} offset ${(page - 1) * perPage}`
  const users = []
  for (const u of rows) users.push(await userJson(ctx.sql, u as UserRow))
  const last = Math.max(1, Math.ceil(total / perPage))
  const links = []
  if (page < last) links.push(`</admin/users?page=${page + 1}&per_page=${perPage}>; rel="next"`)
  links.push(`</admin/users?page=${last}&per_page=${perPage}>; rel="last"`)
  return Response.json({ users, aud: 'authenticated' }, {
    headers: { 'x-total-count': String(total), link: links.join(', ') },
  })
}

async function createUser(ctx: AuthContext, body: Body) {
  if (!body.email && !body.phone) {
    throw badRequest('validation_failed', 'Unable to validate email address: invalid format')
  }
  if (body.phone && !body.email) throw unprocessable('phone_provider_disabled', 'Phone logins are disabled')
  const email = normalizeEmail(body.email)
  return await ctx.sql.begin(async (tx) => {
    if (await userByEmail(tx, email)) throw emailExists()
    const passwordHash = body.password !== undefined
      ? await hashPassword(tx, checkPassword(body.password, ctx.config))
      : ''
    let user = await insertUser(tx, {
      email,
      passwordHash,
      userMetadata: objectOr(body.user_metadata ?? body.data),
      appMetadata: objectOr(body.app_metadata),
      confirmed: body.email_confirm === true,
      role: roleOf(body.role),
    })
    if (body.ban_duration !== undefined) {
      const [u] = await tx`update auth.users set banned_until = ${
        banUntil(body.ban_duration)
      } where id = ${user.id} returning *`
      user = u as UserRow
    }
    return userJson(tx, user)
  })
}

async function updateUser(ctx: AuthContext, id: string, body: Body) {
  return await ctx.sql.begin(async (tx) => {
    const user = await userById(tx, id, true)
    if (!user) throw userNotFound()
    if (body.email !== undefined && body.email !== null && body.email !== '') {
      const email = normalizeEmail(body.email)
      const other = await userByEmail(tx, email)
      if (other && other.id !== id) throw emailExists()
      const [u] =
        await tx`update auth.users set email = ${email}, is_anonymous = false where id = ${id} returning *`
      await insertEmailIdentity(tx, u as UserRow)
      await tx`update auth.identities set identity_data = identity_data || jsonb_build_object('email', ${email}::text)
               where user_id = ${id} and provider = 'email'`
    }
    if (body.password !== undefined) {
      // GoTrue's admin update: every session ends and pending links are voided.
      await replacePassword(tx, id, await hashPassword(tx, checkPassword(body.password, ctx.config)), null)
    }
    if (body.email_confirm === true) {
      await tx`update auth.users set email_confirmed_at = coalesce(email_confirmed_at, now()), confirmation_token = ''
               where id = ${id}`
    }
    if (body.user_metadata !== undefined) {
      await tx`update auth.users set raw_user_meta_data = ${
        tx.json(mergeMetadata(user.raw_user_meta_data, body.user_metadata) as any)
      }
               where id = ${id}`
    }
    if (body.app_metadata !== undefined) {
      await tx`update auth.users set raw_app_meta_data = ${
        tx.json(mergeMetadata(user.raw_app_meta_data, body.app_metadata) as any)
      }
               where id = ${id}`
    }
    const role = roleOf(body.role)
    if (role !== undefined) await tx`update auth.users set role = ${role} where id = ${id}`
    if (body.ban_duration !== undefined) {
      await tx`update auth.users set banned_until = ${banUntil(body.ban_duration)} where id = ${id}`
      if (body.ban_duration !== 'none') await tx`delete from auth.sessions where user_id = ${id}`
    }
    const [after] = await tx`update auth.users set updated_at = now() where id = ${id} returning *`
    return userJson(tx, after as UserRow)
  })
}

async function deleteUser(ctx: AuthContext, id: string, body: Body) {
  return await ctx.sql.begin(async (tx) => {
    const user = await userById(tx, id, true)
    if (!user) throw userNotFound()
    if (body.should_soft_delete === true) {
      // GoTrue's soft delete: the row stays (deleted_at), its address and sessions go.
      await tx`delete from auth.identities where user_id = ${id}`
      await tx`delete from auth.sessions where user_id = ${id}`
      await tx`update auth.users set deleted_at = now(), email = null, phone = null, encrypted_password = '',
                 raw_app_meta_data = '{}'::jsonb, raw_user_meta_data = '{}'::jsonb where id = ${id}`
    } else {
      // A trigger may refuse the delete (an account deletion's 409): GoTrue answers any database
      // error here with this 500 (internal/api/admin.go, adminUserDelete), the cause in its logs.
      await tx`delete from auth.users where id = ${id}`.catch((e) => {
        console.error('auth: deleting user', id, e instanceof Error ? e.message : e)
        throw new AuthError(500, 'unexpected_failure', 'Database error deleting user')
      })
    }
    return {}
  })
}

const LINK_TYPES = ['signup', 'invite', 'magiclink', 'recovery', 'email_change_current', 'email_change_new']

/** A sign-in/confirmation link and code for a user, without sending the e-mail. */
async function generateLink(ctx: AuthContext, req: Request, body: Body) {
  if (!LINK_TYPES.includes(body.type)) throw validationFailed('Invalid email action link type requested')
  const email = normalizeEmail(body.email)
  const redirectTo = redirectTarget(ctx, body.redirect_to ?? new URL(req.url).searchParams.get('redirect_to'))
  return await ctx.sql.begin(async (tx) => {
    let user = await userByEmail(tx, email)
    const data = objectOr(body.data)
    let column: string
    let verificationType: string
    let address = email
    switch (body.type) {
      case 'signup': {
        if (user?.email_confirmed_at) throw emailExists()
        const hash = await hashPassword(tx, checkPassword(body.password, ctx.config))
        user ??= await insertUser(tx, { email, passwordHash: hash, userMetadata: data, confirmed: false })
        column = 'confirmation_token'
        verificationType = 'signup'
        break
      }
      case 'invite': {
        if (user?.email_confirmed_at) throw emailExists()
        user ??= await insertUser(tx, { email, userMetadata: data, confirmed: false })
        await tx`update auth.users set invited_at = now() where id = ${user.id}`
        column = 'confirmation_token'
        verificationType = 'invite'
        break
      }
      case 'magiclink':
        user ??= await insertUser(tx, { email, userMetadata: data, confirmed: false })
        column = 'recovery_token'
        verificationType = 'magiclink'
        break
      case 'recovery':
        if (!user) throw userNotFound()
        column = 'recovery_token'
        verificationType = 'recovery'
        break
      default: {
        if (!user) throw userNotFound()
        const newEmail = normalizeEmail(body.new_email)
        if (await userByEmail(tx, newEmail)) throw emailExists()
        await tx`update auth.users set email_change = ${newEmail}, email_change_confirm_status = 0 where id = ${user.id}`
        const current = body.type === 'email_change_current'
        column = current ? 'email_change_token_current' : 'email_change_token_new'
        address = current ? email : newEmail
        verificationType = 'email_change'
      }
    }
    const { otp, hash } = newOtp(address, ctx.config.email.otpLength)
    const sentAt = column.startsWith('confirmation')
      ? 'confirmation_sent_at'
      : column.startsWith('recovery')
      ? 'recovery_sent_at'
      : 'email_change_sent_at'
    const [after] = await tx`update auth.users set ${tx(column)} = ${hash}, ${tx(sentAt)} = now()
                             where id = ${user.id} returning *`
    const q = new URLSearchParams({ token: hash, type: verificationType, redirect_to: redirectTo })
    return {
      ...(await userJson(tx, after as UserRow)),
      action_link: `${ctx.apiUrl}/auth/v1/verify?${q}`,
      email_otp: otp,
      hashed_token: hash,
      verification_type: verificationType,
      redirect_to: redirectTo,
    }
  })
}

async function invite(ctx: AuthContext, req: Request, body: Body) {
  const email = normalizeEmail(body.email)
  const redirectTo = redirectTarget(ctx, new URL(req.url).searchParams.get('redirect_to') ?? body.redirect_to)
  return await ctx.sql.begin(async (tx: Sql) => {
    let user = await userByEmail(tx, email)
    if (user?.email_confirmed_at) throw emailExists()
    user ??= await insertUser(tx, { email, userMetadata: objectOr(body.data), confirmed: false })
    const { otp, hash } = newOtp(email, ctx.config.email.otpLength)
    const [after] = await tx`update auth.users set invited_at = now(), confirmation_token = ${hash},
                               confirmation_sent_at = now() where id = ${user.id} returning *`
    await sendAuthMail(ctx, tx, { kind: 'invite', to: email, tokenHash: hash, otp, redirectTo })
    return userJson(tx, after as UserRow)
  })
}
