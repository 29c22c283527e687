// supabase.auth.admin.* with the service-role key (and only with it), /.well-known/jwks.json,
// /settings, /health, and the rate limits of config.toml's [auth.rate_limit].
import { strict as assert } from 'node:assert'
import { ANON_KEY, API_URL, sql, test } from './_helpers.ts'
import {
  adminClient,
  appClient,
  authStandInSql,
  claimsOf,
  followLink,
  freshEmail,
  lastMailTo,
  linkIn,
  resetAuthRateLimits,
} from './_auth.ts'
import { loadAuthConfig } from '../scripts/lib/auth/config.ts'
import { createClient } from '@supabase/supabase-js'

test('admin.createUser (confirmed, with metadata) makes a user who signs in at once; the profile trigger fires', async () => {
  await resetAuthRateLimits()
  const admin = adminClient()
  const email = freshEmail('admin-made')
  const { data, error } = await admin.auth.admin.createUser({
    email,
    password: 'correct horse',
    email_confirm: true,
    user_metadata: { full_name: 'Made By Admin' },
    app_metadata: { plan: 'gold' },
  })
  assert.equal(error, null)
  assert.ok(data.user?.email_confirmed_at)
  assert.deepEqual(data.user?.app_metadata, { provider: 'email', providers: ['email'], plan: 'gold' })
  const [p] = await sql`select full_name, drops_balance from public.profiles where id = ${data.user!.id}`
  assert.deepEqual({ ...p }, { full_name: 'Made By Admin', drops_balance: 50 })
  const { data: s, error: e2 } = await appClient().auth.signInWithPassword({
    email,
    password: 'correct horse',
  })
  assert.equal(e2, null)
  assert.equal(claimsOf(s.session!.access_token).app_metadata.plan, 'gold')

  const dup = await admin.auth.admin.createUser({ email, password: 'correct horse' })
  assert.equal(dup.error?.code, 'email_exists')
  assert.equal(dup.error?.status, 422)
})

test('admin.getUserById, updateUserById (metadata, password, ban), deleteUser', async () => {
  await resetAuthRateLimits()
  const admin = adminClient()
  const email = freshEmail('admin-edit')
  const { data: made } = await admin.auth.admin.createUser({
    email,
    password: 'correct horse',
    email_confirm: true,
  })
  const id = made.user!.id
  assert.equal((await admin.auth.admin.getUserById(id)).data.user?.email, email)
  const missing = await admin.auth.admin.getUserById(crypto.randomUUID())
  assert.equal(missing.error?.code, 'user_not_found')
  assert.equal(missing.error?.status, 404)

  const { data: upd, error } = await admin.auth.admin.updateUserById(id, {
    user_metadata: { nickname: 'Edited' },
    app_metadata: { tier: 2 },
    password: 'battery staple',
  })
  assert.equal(error, null)
  assert.equal(upd.user?.user_metadata.nickname, 'Edited')
  assert.equal(upd.user?.app_metadata.tier, 2)
  assert.equal(upd.user?.app_metadata.provider, 'email', 'app_metadata is merged')
  const client = appClient()
  assert.equal((await client.auth.signInWithPassword({ email, password: 'battery staple' })).error, null)

  await admin.auth.admin.updateUserById(id, { ban_duration: '24h' })
  const banned = await appClient().auth.signInWithPassword({ email, password: 'battery staple' })
  assert.equal(banned.error?.code, 'user_banned')
  assert.equal(
    (await client.auth.refreshSession()).error?.code,
    'refresh_token_not_found',
    'a ban ends the sessions',
  )
  await admin.auth.admin.updateUserById(id, { ban_duration: 'none' })
  assert.equal((await appClient().auth.signInWithPassword({ email, password: 'battery staple' })).error, null)

  assert.equal((await admin.auth.admin.deleteUser(id)).error, null)
  assert.equal((await sql`select count(*)::int as n from auth.users where id = ${id}`)[0].n, 0)
  assert.equal(
    (await sql`select count(*)::int as n from public.profiles where id = ${id}`)[0].n,
    0,
    'the profile cascades',
  )
})

test('admin.listUsers pages with page/per_page and reports the total', async () => {
  const admin = adminClient()
  for (let i = 0; i < 3; i++) {
    await admin.auth.admin.createUser({ email: freshEmail('list'), email_confirm: true })
  }
  const [{ total }] = await sql`select count(*)::int as total from auth.users`
  // auth-js reads one digit of a page number from the Link header: stay within 9 pages.
  const perPage = Math.max(2, Math.ceil(total / 3))
  const { data, error } = await admin.auth.admin.listUsers({ page: 1, perPage })
  assert.equal(error, null)
  assert.equal(data.users.length, perPage)
  assert.equal((data as any).total, total)
  assert.equal((data as any).nextPage, 2)
  assert.equal((data as any).lastPage, Math.ceil(total / perPage))
  const page2 = await admin.auth.admin.listUsers({ page: 2, perPage })
  assert.ok(page2.data.users.length > 0)
  const first = new Set(data.users.map((u) => u.id))
  assert.ok(page2.data.users.every((u) => !first.has(u.id)), 'pages do not overlap')
})

test('admin.generateLink: a working action link and code, without sending an e-mail', async () => {
  await resetAuthRateLimits()
  const admin = adminClient()
  const email = freshEmail('gen')
  const { data, error } = await admin.auth.admin.generateLink({
    type: 'signup',
    email,
    password: 'correct horse',
  })
  assert.equal(error, null)
  assert.equal(data.user.email, email)
  assert.equal(data.properties.verification_type, 'signup')
  assert.match(data.properties.email_otp, /^\d{6}$/)
  const out = await followLink(data.properties.action_link)
  assert.equal(out.params.type, 'signup')
  assert.equal(claimsOf(out.params.access_token).sub, data.user.id)

  const { data: magic } = await admin.auth.admin.generateLink({ type: 'magiclink', email })
  const { data: s, error: e2 } = await appClient().auth.verifyOtp({
    token_hash: magic.properties!.hashed_token,
    type: 'magiclink',
  })
  assert.equal(e2, null)
  assert.equal(s.user?.id, data.user.id)
  const recovery = await admin.auth.admin.generateLink({ type: 'recovery', email: freshEmail('nobody') })
  assert.equal(recovery.error?.code, 'user_not_found')
})

test("admin routes refuse the anon key and a user's token (not_admin), and a request without a bearer", async () => {
  await resetAuthRateLimits()
  const anonAsAdmin = createClient(API_URL, ANON_KEY, {
    auth: { persistSession: false, autoRefreshToken: false },
  })
  const r = await anonAsAdmin.auth.admin.listUsers()
  assert.equal(r.error?.code, 'not_admin')
  assert.equal(r.error?.status, 403)
  const c = await anonAsAdmin.auth.admin.createUser({
    email: freshEmail('sneaky'),
    password: 'correct horse',
  })
  assert.equal(c.error?.code, 'not_admin')

  const email = freshEmail('plain')
  await adminClient().auth.admin.createUser({ email, password: 'correct horse', email_confirm: true })
  const user = appClient()
  const { data } = await user.auth.signInWithPassword({ email, password: 'correct horse' })
  const res = await fetch(`${API_URL}/auth/v1/admin/users`, {
    headers: {
      apikey: ANON_KEY,
      authorization: `Bearer ${data.session!.access_token}`,
      'x-supabase-api-version': '2024-01-01',
    },
  })
  assert.equal(res.status, 403)
  assert.deepEqual(await res.json(), { code: 'not_admin', message: 'User not allowed' })
  const none = await fetch(`${API_URL}/auth/v1/admin/users`, { headers: { apikey: ANON_KEY } })
  assert.equal(none.status, 401)
  assert.equal((await none.json()).error_code, 'no_authorization')
})

test('/.well-known/jwks.json publishes no key for an HS256 project; /settings and /health answer as GoTrue', async () => {
  const jwks = await fetch(`${API_URL}/auth/v1/.well-known/jwks.json`)
  assert.deepEqual(await jwks.json(), { keys: [] })
  const settings = await (await fetch(`${API_URL}/auth/v1/settings`, { headers: { apikey: ANON_KEY } }))
    .json()
  assert.equal(settings.mailer_autoconfirm, false, 'enable_confirmations = true in config.toml')
  assert.equal(settings.external.email, true)
  assert.equal(settings.disable_signup, false)
  const health = await (await fetch(`${API_URL}/auth/v1/health`, { headers: { apikey: ANON_KEY } })).json()
  assert.equal(health.name, 'GoTrue')
})

test("rate limits of config.toml: sign-ins per IP per 5 minutes, e-mails per hour -> 429 with GoTrue's codes", async () => {
  const config = await loadAuthConfig()
  try {
    await resetAuthRateLimits()
    // The allowance already used up from this address (127.0.0.1), then one more try.
    await authStandInSql`insert into local_auth.rate_limit_hits (kind, key)
              select 'sign_in_sign_ups', '127.0.0.1' from generate_series(1, ${
      config.rateLimit.signInSignUps - 1
    })`
    const client = appClient()
    const last = await client.auth.signInWithPassword({ email: freshEmail('limit'), password: 'whatever1' })
    assert.equal(last.error?.code, 'invalid_credentials', 'the last allowed attempt is still answered')
    const over = await client.auth.signInWithPassword({ email: freshEmail('limit'), password: 'whatever1' })
    assert.equal(over.error?.code, 'over_request_rate_limit')
    assert.equal(over.error?.status, 429)
    const signUp = await client.auth.signUp({ email: freshEmail('limit'), password: 'correct horse' })
    assert.equal(signUp.error?.code, 'over_request_rate_limit', 'sign-ups share the sign-in allowance')

    // An older hit (outside the 5-minute window) no longer counts.
    await authStandInSql`update local_auth.rate_limit_hits set at = now() - interval '6 minutes' where kind = 'sign_in_sign_ups'`
    assert.equal(
      (await client.auth.signInWithPassword({ email: freshEmail('limit'), password: 'whatever1' })).error
        ?.code,
      'invalid_credentials',
    )

    await authStandInSql`insert into local_auth.rate_limit_hits (kind, key)
              select 'email_sent', 'project' from generate_series(1, ${config.rateLimit.emailSent})`
    const email = freshEmail('limit-mail')
    const mail = await client.auth.signUp({ email, password: 'correct horse' })
    assert.equal(mail.error?.code, 'over_email_send_rate_limit')
    assert.equal(mail.error?.status, 429)
    assert.equal(
      (await sql`select count(*)::int as n from auth.users where email = ${email}`)[0].n,
      0,
      'the sign-up is undone with its e-mail, as GoTrue does',
    )
  } finally {
    await resetAuthRateLimits()
  }
})

test('admin.inviteUserByEmail: an invitation e-mail whose link signs the new user in', async () => {
  await resetAuthRateLimits()
  const email = freshEmail('invited')
  const { data, error } = await adminClient().auth.admin.inviteUserByEmail(email, {
    data: { full_name: 'Invited' },
    redirectTo: 'http://localhost:3000/welcome',
  })
  assert.equal(error, null)
  assert.ok(data.user?.invited_at)
  const mail = await lastMailTo(email, 'You have been invited')
  const out = await followLink(linkIn(mail))
  assert.equal(out.base, 'http://localhost:3000/welcome')
  assert.equal(out.params.type, 'invite')
  assert.equal(claimsOf(out.params.access_token).sub, data.user!.id)
  const [p] = await sql`select full_name from public.profiles where id = ${data.user!.id}`
  assert.equal(p.full_name, 'Invited')
})
