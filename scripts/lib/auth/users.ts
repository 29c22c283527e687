// auth.users rows as GoTrue reads, writes and serializes them, and the e-mail identity each
// e-mail user has in auth.identities.
import { timingSafeEqual } from 'node:crypto'
import type postgres from 'postgres'
import { type AuthConfig } from './config.ts'
import { AuthError, forbidden, unprocessable, validationFailed, weakPassword } from './errors.ts'

export type Sql = postgres.Sql | postgres.TransactionSql
export type UserRow = Record<string, any> & { id: string; email: string | null }

/** GoTrue's instance_id (uuid.Nil): every user lookup filters on it, so a row without it is never found. */
export const INSTANCE_ID = '00000000-0000-0000-0000-000000000000'

/**
 * Columns GoTrue scans into non-nullable Go types (models.User: string, int, time.Time): a NULL
 * in any fails every read of the user with 500 "Database error querying schema"
 * (supabase/auth#1940). The stand-in reads rows as strictly, so a row written by hand without
 * them fails here as it fails on Supabase.
 */
const GOTRUE_NON_NULL = [
  'aud', 'role', 'confirmation_token', 'recovery_token', 'email_change_token_current', 'email_change_token_new',
  'email_change', 'email_change_confirm_status', 'phone_change_token', 'phone_change', 'reauthentication_token',
  'created_at', 'updated_at',
]

/** A timestamp Go's time.Time cannot hold ('infinity', '-infinity'): its scan fails too. */
const notATime = (v: unknown) => v instanceof Date && !Number.isFinite(v.getTime())

/** The row as GoTrue's scan would take it, or its 500 when a column it needs is NULL (or a time infinite). */
export function scanUser<T extends UserRow | null | undefined>(u: T): T {
  if (u && (GOTRUE_NON_NULL.some((c) => u[c] === null || u[c] === undefined) || Object.values(u).some(notATime))) {
    throw new AuthError(500, 'unexpected_failure', 'Database error querying schema')
  }
  return u
}

const iso = (v: unknown) => (v instanceof Date ? v.toISOString() : v ?? undefined)
const nonEmpty = (v: unknown) => (typeof v === 'string' && v !== '' ? v : undefined)

export async function identitiesOf(sql: Sql, userId: string) {
  const rows = await sql`select * from auth.identities where user_id = ${userId} order by created_at`
  return rows.map((i) => ({
    identity_id: i.id,
    id: i.provider_id,
    user_id: i.user_id,
    identity_data: i.identity_data,
    provider: i.provider,
    last_sign_in_at: iso(i.last_sign_in_at),
    created_at: iso(i.created_at),
    updated_at: iso(i.updated_at),
    email: i.email ?? undefined,
  }))
}

/** The user as GoTrue's JSON shows it (fields GoTrue omits when empty are left out). */
export async function userJson(sql: Sql, u: UserRow) {
  scanUser(u)
  const out: Record<string, unknown> = {
    id: u.id,
    aud: u.aud ?? '',
    role: u.role ?? '',
    email: u.email ?? '',
    email_confirmed_at: iso(u.email_confirmed_at),
    invited_at: iso(u.invited_at),
    phone: u.phone ?? '',
    phone_confirmed_at: iso(u.phone_confirmed_at),
    confirmation_sent_at: iso(u.confirmation_sent_at),
    confirmed_at: iso(u.confirmed_at),
    recovery_sent_at: iso(u.recovery_sent_at),
    new_email: nonEmpty(u.email_change),
    email_change_sent_at: iso(u.email_change_sent_at),
    new_phone: nonEmpty(u.phone_change),
    phone_change_sent_at: iso(u.phone_change_sent_at),
    reauthentication_sent_at: iso(u.reauthentication_sent_at),
    last_sign_in_at: iso(u.last_sign_in_at),
    app_metadata: u.raw_app_meta_data ?? {},
    user_metadata: u.raw_user_meta_data ?? {},
    identities: await identitiesOf(sql, u.id),
    created_at: iso(u.created_at),
    updated_at: iso(u.updated_at),
    banned_until: iso(u.banned_until),
    deleted_at: iso(u.deleted_at),
    is_anonymous: u.is_anonymous ?? false,
  }
  for (const k of Object.keys(out)) if (out[k] === undefined) delete out[k]
  return out
}

export async function userById(sql: Sql, id: string, forUpdate = false): Promise<UserRow | null> {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id)) return null
  const [u] = forUpdate
    ? await sql`select * from auth.users where instance_id = ${INSTANCE_ID} and id = ${id} for update`
    : await sql`select * from auth.users where instance_id = ${INSTANCE_ID} and id = ${id}`
  return scanUser((u as UserRow) ?? null)
}

export async function userByEmail(sql: Sql, email: string): Promise<UserRow | null> {
  const [u] =
    await sql`select * from auth.users where instance_id = ${INSTANCE_ID} and lower(email) = ${email.toLowerCase()}
                and aud = 'authenticated' and is_sso_user = false order by created_at limit 1`
  return scanUser((u as UserRow) ?? null)
}

/** Whether a ban is in force (banned_until in the future). */
export const isBanned = (u: UserRow) => !!u.banned_until && u.banned_until > new Date()

/** GoTrue's refusal of a banned user on every path that would sign them in (403 user_banned). */
export function refuseBanned(u: UserRow) {
  if (isBanned(u)) throw forbidden('user_banned', 'User is banned')
}

/**
 * Sets a new password as GoTrue's UpdatePassword does: every pending e-mailed code or link
 * (confirmation, recovery, e-mail change, reauthentication) is voided, and the user's sessions
 * end, all of them or all but `keepSession` (the session that changed it).
 */
export async function replacePassword(
  sql: Sql,
  userId: string,
  passwordHash: string,
  keepSession: string | null,
) {
  await sql`update auth.users set encrypted_password = ${passwordHash},
              confirmation_token = '', confirmation_sent_at = null,
              recovery_token = '', recovery_sent_at = null,
              email_change_token_current = '', email_change_token_new = '', email_change_sent_at = null,
              phone_change_token = '', phone_change_sent_at = null,
              reauthentication_token = '', reauthentication_sent_at = null
            where id = ${userId}`
  // Refresh tokens and sign-in claims go with their sessions (on delete cascade).
  if (keepSession) await sql`delete from auth.sessions where user_id = ${userId} and id <> ${keepSession}`
  else await sql`delete from auth.sessions where user_id = ${userId}`
}

/** GoTrue's e-mail check: a lower-cased address of a plausible form, at most 255 characters. */
export function normalizeEmail(raw: unknown): string {
  if (typeof raw !== 'string') throw validationFailed('Unable to validate email address: invalid format')
  const email = raw.trim().toLowerCase()
  if (email.length > 255 || !/^[^\s@<>()\[\],;:"]+@[^\s@<>()\[\],;:"]+\.[^\s@<>()\[\],;:".]+$/.test(email)) {
    throw validationFailed('Unable to validate email address: invalid format')
  }
  return email
}

/** The password rules of [auth] minimum_password_length (GoTrue's checkPasswordStrength). */
export function checkPassword(password: unknown, config: AuthConfig): string {
  if (typeof password !== 'string') throw unprocessable('validation_failed', 'Password is required')
  if (password.length > 72) {
    throw unprocessable('validation_failed', 'Password cannot be longer than 72 characters')
  }
  if (password.length < config.minimumPasswordLength) {
    throw weakPassword(`Password should be at least ${config.minimumPasswordLength} characters.`, ['length'])
  }
  return password
}

/** A bcrypt ($2a$, cost 10) hash, as GoTrue stores in encrypted_password. */
export async function hashPassword(sql: Sql, password: string): Promise<string> {
  const [{ hash }] = await sql`select extensions.crypt(${password}, extensions.gen_salt('bf', 10)) as hash`
  return hash
}

let dummyHash: Promise<string> | undefined

/** A bcrypt hash of a random password, to check a sign-in against when there is no real one. */
export function dummyPasswordHash(sql: Sql): Promise<string> {
  dummyHash ??= hashPassword(sql, crypto.randomUUID()).catch((e) => {
    dummyHash = undefined
    throw e
  })
  return dummyHash
}

/** Whether the password matches the stored bcrypt hash, compared in constant time. */
export async function passwordMatches(sql: Sql, password: string, stored: string | null): Promise<boolean> {
  if (!stored || !stored.startsWith('$2')) return false
  const [{ hash }] = await sql`select extensions.crypt(${password}, ${stored}) as hash`
  const a = new TextEncoder().encode(hash ?? '')
  const b = new TextEncoder().encode(stored)
  return a.length === b.length && timingSafeEqual(a, b)
}

/** Inserts an e-mail user (or an anonymous one) with GoTrue's defaults and its identity. */
export async function insertUser(sql: Sql, o: {
  email: string | null
  passwordHash?: string
  userMetadata?: Record<string, unknown>
  appMetadata?: Record<string, unknown>
  confirmed: boolean
  anonymous?: boolean
  role?: string
}): Promise<UserRow> {
  const provider = o.anonymous ? null : 'email'
  const appMeta = { ...(provider ? { provider, providers: [provider] } : {}), ...(o.appMetadata ?? {}) }
  // Every column GoTrue's Create writes (models.NewUser): '' for each token and change column.
  const [u] = await sql`
    insert into auth.users (instance_id, id, aud, role, email, encrypted_password, email_confirmed_at,
                            confirmation_token, recovery_token, email_change_token_new, email_change,
                            email_change_token_current, email_change_confirm_status, phone_change,
                            phone_change_token, reauthentication_token, raw_app_meta_data, raw_user_meta_data,
                            is_sso_user, is_anonymous, created_at, updated_at)
    values (${INSTANCE_ID}, ${crypto.randomUUID()}, 'authenticated', ${o.role ?? 'authenticated'}, ${o.email},
            ${o.passwordHash ?? ''}, ${o.confirmed ? sql`now()` : null}, '', '', '', '', '', 0, '', '', '',
            ${sql.json(appMeta as any)}, ${sql.json((o.userMetadata ?? {}) as any)}, false, ${o.anonymous ?? false},
            now(), now())
    returning *`
  if (o.email) await insertEmailIdentity(sql, u as UserRow)
  return u as UserRow
}

export async function insertEmailIdentity(sql: Sql, u: UserRow) {
  const data = {
    sub: u.id,
    email: u.email,
    email_verified: !!u.email_confirmed_at,
    phone_verified: false,
  }
  await sql`insert into auth.identities (provider_id, user_id, identity_data, provider, created_at, updated_at)
            values (${u.id}, ${u.id}, ${sql.json(data)}, 'email', now(), now())
            on conflict (provider_id, provider) do update
              set identity_data = excluded.identity_data, updated_at = now()`
  // app_metadata names the user's providers (an anonymous user has none until now).
  await sql`update auth.users set raw_app_meta_data = coalesce(raw_app_meta_data, '{}'::jsonb) || jsonb_build_object(
              'provider', coalesce(raw_app_meta_data ->> 'provider', 'email'),
              'providers', (select jsonb_agg(distinct p) from (
                 select jsonb_array_elements_text(coalesce(raw_app_meta_data -> 'providers', '[]'::jsonb)) as p
                 union select 'email') providers))
            where id = ${u.id}`
}

/** Merges a metadata patch as GoTrue does: top-level keys replaced, a null value removes the key. */
export function mergeMetadata(current: Record<string, unknown> | null, patch: unknown) {
  const out: Record<string, unknown> = { ...(current ?? {}) }
  if (!patch || typeof patch !== 'object' || Array.isArray(patch)) return out
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k]
    else out[k] = v
  }
  return out
}
