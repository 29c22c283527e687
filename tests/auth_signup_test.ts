// Sign-up, confirmation through the local inbox, password sign-in and anonymous sign-in at
// /auth/v1, through supabase-js as an app calls them; the tokens work on /rest/v1 and /api.
import { strict as assert } from 'node:assert'
import { api, createUser, sql, test } from './_helpers.ts'
import {
  appClient,
  claimsOf,
  followLink,
  freshEmail,
  lastMailTo,
  linkIn,
  resetAuthRateLimits,
} from './_auth.ts'

test('signUp with confirmations on: a user, no session, and a confirmation e-mail; the link signs in', async () => {
  await resetAuthRateLimits()
  const client = appClient()
  const email = freshEmail('signup')
  const { data, error } = await client.auth.signUp({
    email,
    password: 'correct horse',
    options: { data: { full_name: 'Sign Up' } },
  })
  assert.equal(error, null)
  assert.equal(data.session, null, 'no session before the address is confirmed')
  assert.equal(data.user?.email, email)
  assert.equal(data.user?.email_confirmed_at, undefined)
  assert.deepEqual(data.user?.user_metadata, { full_name: 'Sign Up' })
  assert.equal(data.user?.identities?.length, 1)

  const [row] = await sql`select encrypted_password, email_confirmed_at from auth.users where id = ${
    data.user!.id
  }`
  assert.match(row.encrypted_password, /^\$2a\$10\$.{53}$/, 'a bcrypt hash, as GoTrue stores')
  assert.equal(row.email_confirmed_at, null)

  const mail = await lastMailTo(email, 'Confirm Your Signup')
  const { status, base, params } = await followLink(linkIn(mail))
  assert.equal(status, 303)
  assert.equal(base, 'http://127.0.0.1:3000', 'back to site_url')
  assert.equal(params.type, 'signup')
  assert.equal(params.token_type, 'bearer')
  assert.ok(params.refresh_token)
  assert.equal(claimsOf(params.access_token).sub, data.user!.id)

  // The link is single-use: a second click lands on the site with GoTrue's error.
  const again = await followLink(linkIn(mail))
  assert.equal(again.params.error_code, 'otp_expired')
  assert.equal(again.params.error, 'access_denied')

  const { data: session } = await client.auth.setSession({
    access_token: params.access_token,
    refresh_token: params.refresh_token,
  })
  assert.equal(session.user?.email_confirmed_at !== undefined, true)
})

test("signInWithPassword: a session whose token carries hosted Auth claims and the hook's user_role", async () => {
  await resetAuthRateLimits()
  const client = appClient()
  const email = freshEmail('signin')
  const { data: up } = await client.auth.signUp({ email, password: 'correct horse' })
  await followLink(linkIn(await lastMailTo(email)))

  const { data, error } = await client.auth.signInWithPassword({ email, password: 'correct horse' })
  assert.equal(error, null)
  const s = data.session!
  assert.equal(s.token_type, 'bearer')
  assert.equal(s.expires_in, 3600, 'config.toml jwt_expiry')
  assert.equal(s.user.id, up.user!.id)
  const c = claimsOf(s.access_token)
  assert.equal(c.sub, up.user!.id)
  assert.equal(c.role, 'authenticated')
  assert.equal(c.aud, 'authenticated')
  assert.equal(c.email, email)
  assert.equal(c.phone, '')
  assert.equal(c.aal, 'aal1')
  assert.equal(c.is_anonymous, false)
  assert.equal(c.user_role, 'user', 'from public.custom_access_token_hook')
  assert.deepEqual(c.app_metadata, { provider: 'email', providers: ['email'] })
  assert.equal(c.amr[0].method, 'password')
  assert.equal(c.exp - c.iat, 3600)
  const [session] = await sql`select user_id from auth.sessions where id = ${c.session_id}`
  assert.equal(session.user_id, up.user!.id, 'session_id names a row of auth.sessions')

  const { data: claims } = await client.auth.getClaims()
  assert.equal(claims?.claims.sub, up.user!.id)
  const { data: got } = await client.auth.getUser()
  assert.equal(got.user?.id, up.user!.id)
  assert.ok(got.user?.last_sign_in_at)
})

test('the session token works on /rest/v1 under RLS and on /functions/v1/api', async () => {
  await resetAuthRateLimits()
  const client = appClient()
  const email = freshEmail('rls')
  const { data: up } = await client.auth.signUp({
    email,
    password: 'correct horse',
    options: { data: { full_name: 'Rls Person' } },
  })
  await followLink(linkIn(await lastMailTo(email)))
  const { data } = await client.auth.signInWithPassword({ email, password: 'correct horse' })

  // RLS: the profiles this user may read through PostgREST are its own (plus what policies share).
  const { data: mine, error } = await client.from('profiles').select('id, full_name, drops_balance').eq(
    'id',
    up.user!.id,
  )
  assert.equal(error, null)
  assert.deepEqual(mine, [{ id: up.user!.id, full_name: 'Rls Person', drops_balance: 50 }])
  const other = await createUser()
  const { data: theirs } = await client.from('drops_transactions').select('id').eq('user_id', other.id)
  assert.deepEqual(theirs, [], "another user's ledger stays hidden")

  const res = await api('/api/user/profile', { token: data.session!.access_token })
  assert.equal(res.status, 200, JSON.stringify(res.body))
  assert.equal(res.body.profile?.id ?? res.body.id, up.user!.id)
})

test('sign-up fires the same profile triggers as users created today (profile, signup bonus)', async () => {
  await resetAuthRateLimits()
  const client = appClient()
  const email = freshEmail('bonus')
  const { data } = await client.auth.signUp({
    email,
    password: 'correct horse',
    options: { data: { full_name: 'Bonus' } },
  })
  const viaAuth = data.user!.id
  const viaSql = (await createUser()).id
  const shape = async (id: string) => {
    const [p] =
      await sql`select role, drops_balance, is_active, is_ai, preferences from public.profiles where id = ${id}`
    const ledger =
      await sql`select amount, type, description from public.drops_transactions where user_id = ${id} order by id`
    return { profile: p, ledger: ledger.map((r) => ({ ...r })) }
  }
  const a = await shape(viaAuth)
  assert.deepEqual(a, await shape(viaSql))
  assert.deepEqual(a.ledger, [{ amount: 50, type: 'signup_bonus', description: 'Welcome bonus' }])
  const [{ full_name }] = await sql`select full_name from public.profiles where id = ${viaAuth}`
  assert.equal(full_name, 'Bonus', 'raw_user_meta_data reaches the profile trigger')
})

test("refusals carry GoTrue's codes: wrong password, unconfirmed e-mail, weak password, taken address", async () => {
  await resetAuthRateLimits()
  const client = appClient()
  const email = freshEmail('refuse')
  await client.auth.signUp({ email, password: 'correct horse' })

  let r = await client.auth.signInWithPassword({ email, password: 'correct horse' })
  assert.equal(r.error?.code, 'email_not_confirmed')
  assert.equal(r.error?.status, 400)
  assert.equal(r.error?.message, 'Email not confirmed')

  await followLink(linkIn(await lastMailTo(email)))
  r = await client.auth.signInWithPassword({ email, password: 'wrong horse' })
  assert.equal(r.error?.code, 'invalid_credentials')
  assert.equal(r.error?.status, 400)
  assert.equal(r.error?.message, 'Invalid login credentials')
  r = await client.auth.signInWithPassword({ email: freshEmail('nobody'), password: 'correct horse' })
  assert.equal(r.error?.code, 'invalid_credentials', 'an unknown address reads the same as a wrong password')

  const weak = await client.auth.signUp({ email: freshEmail('weak'), password: '123' })
  assert.equal(weak.error?.code, 'weak_password')
  assert.equal(weak.error?.status, 422)
  assert.deepEqual((weak.error as any).reasons, ['length'])

  const bad = await client.auth.signUp({ email: 'not-an-address', password: 'correct horse' })
  assert.equal(bad.error?.code, 'validation_failed')
  assert.equal(bad.error?.status, 400)

  // With confirmations on, GoTrue answers a confirmed address with a look-alike user (no
  // identities) and sends nothing, so sign-up does not reveal who is registered.
  const before = (await sql`select count(*)::int as n from auth.users where email = ${email}`)[0].n
  const dup = await client.auth.signUp({ email, password: 'other horse' })
  assert.equal(dup.error, null)
  assert.deepEqual(dup.data.user?.identities, [])
  assert.equal(dup.data.session, null)
  assert.equal((await sql`select count(*)::int as n from auth.users where email = ${email}`)[0].n, before)
  const ok = await client.auth.signInWithPassword({ email, password: 'correct horse' })
  assert.equal(ok.error, null, 'the first password still holds')
})

test('the 2024-01-01 error shape goes to auth-js; the original shape to clients without the header', async () => {
  const url = `${Deno.env.get('SUPABASE_URL')}/auth/v1/token?grant_type=password`
  const headers = { apikey: Deno.env.get('SUPABASE_ANON_KEY')!, 'content-type': 'application/json' }
  const body = JSON.stringify({ email: freshEmail('shape'), password: 'whatever1' })
  await resetAuthRateLimits()
  const legacy = await fetch(url, { method: 'POST', headers, body })
  assert.deepEqual(await legacy.json(), {
    code: 400,
    error_code: 'invalid_credentials',
    msg: 'Invalid login credentials',
  })
  const v2024 = await fetch(url, {
    method: 'POST',
    headers: { ...headers, 'x-supabase-api-version': '2024-01-01' },
    body,
  })
  assert.equal(v2024.headers.get('x-supabase-api-version'), '2024-01-01')
  assert.deepEqual(await v2024.json(), { code: 'invalid_credentials', message: 'Invalid login credentials' })
  const noKey = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
  assert.equal(noKey.status, 401, 'the gateway wants an API key, as Kong does')
  assert.deepEqual(await noKey.json(), { message: 'No API key found in request' })
})

test('signInAnonymously: an anonymous user with a session, authenticated for RLS', async () => {
  await resetAuthRateLimits()
  const client = appClient()
  const { data, error } = await client.auth.signInAnonymously({ options: { data: { nickname: 'guest' } } })
  assert.equal(error, null)
  assert.equal(data.user?.is_anonymous, true)
  assert.equal(data.user?.email, '')
  assert.deepEqual(data.user?.identities, [])
  const c = claimsOf(data.session!.access_token)
  assert.equal(c.is_anonymous, true)
  assert.equal(c.role, 'authenticated')
  assert.equal(c.amr[0].method, 'anonymous')
  const { data: profile } = await client.from('profiles').select('id').eq('id', data.user!.id)
  assert.deepEqual(
    profile,
    [{ id: data.user!.id }],
    'anonymous users are authenticated for RLS, as on hosted',
  )
})

test("CORS: the browser's preflight on /auth/v1 is answered, and answers expose what auth-js reads", async () => {
  const base = `${Deno.env.get('SUPABASE_URL')}/auth/v1`
  const pre = await fetch(`${base}/token?grant_type=password`, {
    method: 'OPTIONS',
    headers: {
      origin: 'http://localhost:3000',
      'access-control-request-method': 'POST',
      'access-control-request-headers':
        'apikey, authorization, content-type, x-client-info, x-supabase-api-version',
    },
  })
  await pre.body?.cancel()
  assert.ok(pre.status === 200 || pre.status === 204, String(pre.status))
  assert.equal(pre.headers.get('access-control-allow-origin'), '*')
  for (const h of ['apikey', 'authorization', 'content-type', 'x-client-info', 'x-supabase-api-version']) {
    assert.match(pre.headers.get('access-control-allow-headers') ?? '', new RegExp(h, 'i'))
  }
  assert.match(pre.headers.get('access-control-allow-methods') ?? '', /POST/)
  const res = await fetch(`${base}/settings`, {
    headers: { apikey: Deno.env.get('SUPABASE_ANON_KEY')!, origin: 'http://localhost:3000' },
  })
  await res.body?.cancel()
  assert.equal(res.headers.get('access-control-allow-origin'), '*')
  assert.match(res.headers.get('access-control-expose-headers') ?? '', /x-supabase-api-version/)
})

test('the seeded demo users sign in with the documented password; the super admin gets user_role', async () => {
  await resetAuthRateLimits()
  const client = appClient()
  const wrong = await client.auth.signInWithPassword({
    email: 'alice@example.com',
    password: 'not-the-password',
  })
  assert.equal(wrong.error?.code, 'invalid_credentials')
  const { data, error } = await client.auth.signInWithPassword({
    email: 'admin@example.com',
    password: 'demo-password',
  })
  assert.equal(error, null)
  assert.equal(data.user?.id, '00000000-0000-4000-a000-000000000003')
  assert.equal(claimsOf(data.session!.access_token).user_role, 'super_admin')
})
