// Bad input to Auth is a 4xx in GoTrue's error shape, never a 500: the cases the security
// review found (NUL characters, a long name or a non-http avatar at sign-up, a huge ban), and a
// fuzz over every field of every route the local Auth serves.
import { strict as assert } from 'node:assert'
import { ANON_KEY, API_URL, insertAuthUser, SERVICE_ROLE_KEY, sql, test } from './_helpers.ts'
import { adminClient, appClient, freshEmail, resetAuthRateLimits } from './_auth.ts'

const NUL = '\u0000'

interface Reply {
  status: number
  body: any
}

/** One Auth request with a JSON (or raw) body, as auth-js sends it. */
async function send(
  method: string,
  path: string,
  o: { body?: unknown; raw?: BodyInit; token?: string; key?: string } = {},
): Promise<Reply> {
  const headers: Record<string, string> = { apikey: o.key ?? ANON_KEY, 'x-supabase-api-version': '2024-01-01' }
  if (o.token) headers.authorization = `Bearer ${o.token}`
  const body = o.raw ?? (o.body === undefined ? undefined : JSON.stringify(o.body))
  if (body !== undefined) headers['content-type'] = 'application/json'
  const res = await fetch(`${API_URL}/auth/v1${path}`, { method, headers, body, redirect: 'manual' })
  const text = await res.text()
  let parsed: unknown = text
  try {
    parsed = text ? JSON.parse(text) : null
  } catch { /* not JSON */ }
  return { status: res.status, body: parsed }
}

const admin = (method: string, path: string, body?: unknown) =>
  send(method, path, { body, token: SERVICE_ROLE_KEY, key: SERVICE_ROLE_KEY })

function assertRefused(res: Reply, status: number, code: string, field?: string) {
  assert.equal(res.status, status, JSON.stringify(res.body))
  assert.equal(res.body.code, code, JSON.stringify(res.body))
  if (field) assert.match(res.body.message, new RegExp(`\\b${field.replace('.', '\\.')}\\b`), res.body.message)
}

test('NUL characters and unpaired surrogates are 400 validation_failed naming the field, on every route', async () => {
  await resetAuthRateLimits()
  assertRefused(await send('POST', '/signup', { body: { email: `a${NUL}@test.local`, password: 'fuzz password' } }), 400, 'validation_failed', 'email')
  assertRefused(await send('POST', '/signup', { body: { email: freshEmail(), password: `pass${NUL}word` } }), 400, 'validation_failed', 'password')
  assertRefused(await send('POST', '/signup', { body: { email: freshEmail(), password: 'fuzz password', data: { full_name: `A${NUL}` } } }), 400, 'validation_failed', 'data.full_name')
  assertRefused(await send('POST', '/signup', { body: { email: freshEmail(), password: 'fuzz password', data: { [`k${NUL}`]: 1 } } }), 400, 'validation_failed', 'data')
  assertRefused(await send('POST', '/signup', { body: { email: freshEmail(), password: 'fuzz password', data: { x: '\ud800' } } }), 400, 'validation_failed', 'data.x')
  assertRefused(await send('POST', '/token?grant_type=refresh_token', { body: { refresh_token: `r${NUL}` } }), 400, 'validation_failed', 'refresh_token')
  assertRefused(await send('POST', '/token?grant_type=pkce', { body: { auth_code: `c${NUL}`, code_verifier: 'v' } }), 400, 'validation_failed', 'auth_code')
  assertRefused(await send('POST', '/token?grant_type=password', { body: { email: `a${NUL}@b.co`, password: 'x' } }), 400, 'validation_failed', 'email')
  assertRefused(await send('POST', '/verify', { body: { type: 'magiclink', token_hash: `h${NUL}` } }), 400, 'validation_failed', 'token_hash')
  assertRefused(await send('POST', '/recover', { body: { email: `a${NUL}@b.co` } }), 400, 'validation_failed', 'email')
  assertRefused(await send('POST', '/resend', { body: { type: 'signup', email: `a${NUL}@b.co` } }), 400, 'validation_failed', 'email')
  assertRefused(await send('POST', '/otp', { body: { email: `a${NUL}@b.co` } }), 400, 'validation_failed', 'email')
  // A link's parameters too: refused before the link is followed, as GoTrue refuses a link it
  // cannot validate (JSON, no redirect).
  const link = await fetch(`${API_URL}/auth/v1/verify?token=h%00&type=magiclink`, { redirect: 'manual' })
  const linkBody = await link.json() // the original error shape: a browser sends no API version
  assert.equal(link.status, 400)
  assert.equal(linkBody.error_code, 'validation_failed')
  assert.match(linkBody.msg, /^token: /)
})

test('a long name or a non-http avatar at sign-up: the account is made, the profile keeps what fits', async () => {
  await resetAuthRateLimits()
  const longName = 'Maria '.repeat(60).trim() // 359 characters
  const email = freshEmail('longname')
  const { data, error } = await appClient().auth.signUp({
    email,
    password: 'fuzz password',
    options: { data: { full_name: longName, avatar_url: 'javascript:alert(1)' } },
  })
  assert.equal(error, null)
  const [profile] = await sql`select full_name, avatar_url from public.profiles where id = ${data.user!.id}`
  assert.equal(profile.full_name, longName.slice(0, 200))
  assert.equal(profile.avatar_url, null)

  // The admin API too. An avatar outside the user's own avatars folder is left out (the profile
  // would refuse it: a tracking link shown to strangers).
  const created = await adminClient().auth.admin.createUser({
    email: freshEmail('longname'),
    user_metadata: { full_name: longName, avatar_url: 'https://cdn.example.com/a.png' },
  })
  assert.equal(created.error, null)
  const [adminMade] = await sql`select full_name, avatar_url from public.profiles where id = ${created.data.user!.id}`
  assert.equal(adminMade.full_name.length, 200)
  assert.equal(adminMade.avatar_url, null)
  // An avatar longer than the profile allows is dropped, a name of another JSON type kept as text.
  const odd = await adminClient().auth.admin.createUser({
    email: freshEmail('odd'),
    user_metadata: { full_name: { first: 'Ana' }, avatar_url: `https://e.example/${'a'.repeat(3000)}` },
  })
  assert.equal(odd.error, null)
  const [oddProfile] = await sql`select full_name, avatar_url from public.profiles where id = ${odd.data.user!.id}`
  assert.equal(oddProfile.full_name, '{"first": "Ana"}')
  assert.equal(oddProfile.avatar_url, null)
})

test('admin API: a ban beyond what a Go duration holds, an odd duration, a long role, a huge page are 400', async () => {
  const { data } = await adminClient().auth.admin.createUser({ email: freshEmail('ban') })
  const id = data.user!.id
  for (const ban_duration of ['99999999999999h', '2562048h', '10x', '1h;drop', '', 5]) {
    assertRefused(await admin('PUT', `/admin/users/${id}`, { ban_duration }), 400, 'validation_failed', 'ban duration')
  }
  assert.equal((await admin('PUT', `/admin/users/${id}`, { ban_duration: '2562047h' })).status, 200)
  assert.equal((await admin('PUT', `/admin/users/${id}`, { ban_duration: '1h30m' })).status, 200)
  assertRefused(await admin('PUT', `/admin/users/${id}`, { role: 'r'.repeat(300) }), 400, 'validation_failed', 'role')
  assertRefused(await admin('POST', '/admin/users', { email: freshEmail(), role: 'r'.repeat(300) }), 400, 'validation_failed', 'role')
  assertRefused(await admin('GET', '/admin/users?page=99999999999999999999999&per_page=50'), 400, 'validation_failed', 'page')
})

// ---------------------------------------------------------------------------------------------
// The fuzz
// ---------------------------------------------------------------------------------------------

let deep: unknown = 'bottom'
for (let i = 0; i < 3000; i++) deep = [deep]

const BAD_VALUES: [string, unknown][] = [
  ['NUL', NUL],
  ['NUL inside', `a${NUL}b`],
  ['NUL in an address', `fuzz${NUL}@test.local`],
  ['lone high surrogate', '\ud800'],
  ['lone low surrogate', 'x\udfffy'],
  ['reversed surrogates', '\udc00\ud800'],
  ['huge string', 'a'.repeat(20_000)],
  ['huge address', `${'a'.repeat(20_000)}@test.local`],
  ['number', 123],
  ['negative', -1],
  ['huge number', 1e308],
  ['beyond int64', 2 ** 64],
  ['fraction', 0.5],
  ['true', true],
  ['false', false],
  ['null', null],
  ['empty string', ''],
  ['array', ['a', 1]],
  ['empty object', {}],
  ['nested object', { nested: { deeper: { deepest: [1, { x: 'y' }] } } }],
  ['NUL key', { [`k${NUL}`]: 'v' }],
  ['NUL deep inside', { a: [{ b: `c${NUL}` }] }],
  ['deeply nested', deep],
  ['huge duration', '99999999999999999999h'],
  ['huge digits', '9'.repeat(40)],
]

const BAD_QUERY_VALUES = [
  NUL,
  `a${NUL}b`,
  '\ud800',
  'a'.repeat(4000),
  '99999999999999999999999',
  '-1',
  '1e400',
  '%',
  '',
  'javascript:alert(1)',
]

const RAW_BODIES: [string, Uint8Array | string][] = [
  ['invalid UTF-8', new Uint8Array([0x7b, 0x22, 0x65, 0x6d, 0x61, 0x69, 0x6c, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x40, 0x78, 0x22, 0x7d])],
  ['truncated escape', '{"email": "\\u00"}'],
  ['escaped NUL', '{"email": "a\\u0000@b.co", "password": "x\\u0000y", "data": {"\\u0000": "\\u0000"}}'],
  ['escaped lone surrogate', '{"email": "\\udfff@b.co", "data": {"n": "\\ud800"}, "refresh_token": "\\ud800"}'],
  ['not an object', '[1, 2, 3]'],
  ['a bare string', '"\\u0000"'],
  ['huge number', '{"page": 1e999, "ban_duration": 1e999, "email": 1e999}'],
]

interface Route {
  method: string
  path: () => Promise<string> | string
  body?: () => Record<string, unknown>
  query?: Record<string, string>
  token?: () => string
  admin?: boolean
}

async function userWithSession() {
  const email = freshEmail('fuzz')
  await adminClient().auth.admin.createUser({ email, password: 'fuzz password', email_confirm: true })
  const { data } = await appClient().auth.signInWithPassword({ email, password: 'fuzz password' })
  return { email, token: data.session!.access_token }
}

async function throwawayUserId() {
  return await insertAuthUser(sql, { email: freshEmail('fuzz-target') })
}

test('fuzz: every field of every Auth route, bad values of every kind, never a 5xx; refusals in GoTrue shape', async () => {
  const known = await userWithSession()
  const challenge = 'c'.repeat(43)
  const routes: Route[] = [
    {
      method: 'POST',
      path: () => '/signup',
      body: () => ({
        email: freshEmail('fuzz'),
        password: 'fuzz password',
        data: { full_name: 'Fuzz' },
        phone: undefined,
        code_challenge: challenge,
        code_challenge_method: 's256',
        redirect_to: 'http://localhost:3000/',
      }),
    },
    { method: 'POST', path: () => '/signup', body: () => ({ data: { a: 1 } }) }, // anonymous
    {
      method: 'POST',
      path: () => '/token?grant_type=password',
      body: () => ({ email: known.email, password: 'wrong', phone: undefined }),
    },
    { method: 'POST', path: () => '/token?grant_type=refresh_token', body: () => ({ refresh_token: 'abcdefghijkl' }) },
    { method: 'POST', path: () => '/token?grant_type=pkce', body: () => ({ auth_code: crypto.randomUUID(), code_verifier: 'v'.repeat(43) }) },
    {
      method: 'PUT',
      path: () => '/user',
      token: () => known.token,
      body: () => ({ data: { theme: 'dark' }, email: undefined, password: undefined, code_challenge: undefined, nonce: undefined }),
    },
    {
      method: 'POST',
      path: () => '/otp',
      body: () => ({
        email: freshEmail('fuzz'),
        create_user: true,
        data: {},
        phone: undefined,
        code_challenge: challenge,
        code_challenge_method: 'plain',
      }),
    },
    { method: 'POST', path: () => '/recover', body: () => ({ email: freshEmail('fuzz'), code_challenge: undefined }) },
    { method: 'POST', path: () => '/resend', body: () => ({ type: 'signup', email: freshEmail('fuzz') }) },
    {
      method: 'POST',
      path: () => '/verify',
      body: () => ({ type: 'email', token: '123456', email: known.email, token_hash: undefined, redirect_to: undefined }),
    },
    {
      method: 'POST',
      path: () => '/admin/users',
      admin: true,
      body: () => ({
        email: freshEmail('fuzz'),
        password: 'fuzz password',
        user_metadata: { full_name: 'Fuzz' },
        app_metadata: {},
        email_confirm: true,
        role: undefined,
        ban_duration: undefined,
        phone: undefined,
        data: undefined,
      }),
    },
    {
      method: 'PUT',
      path: async () => `/admin/users/${await throwawayUserId()}`,
      admin: true,
      body: () => ({
        user_metadata: {},
        app_metadata: undefined,
        role: undefined,
        ban_duration: undefined,
        email_confirm: undefined,
        email: undefined,
        password: undefined,
      }),
    },
    {
      method: 'DELETE',
      path: async () => `/admin/users/${await throwawayUserId()}`,
      admin: true,
      body: () => ({ should_soft_delete: false }),
    },
    {
      method: 'POST',
      path: () => '/admin/generate_link',
      admin: true,
      body: () => ({
        type: 'magiclink',
        email: freshEmail('fuzz'),
        password: undefined,
        data: {},
        new_email: undefined,
        redirect_to: 'http://localhost:3000/',
      }),
    },
    {
      method: 'POST',
      path: () => '/admin/generate_link',
      admin: true,
      body: () => ({ type: 'email_change_new', email: known.email, new_email: freshEmail('fuzz') }),
    },
    { method: 'POST', path: () => '/invite', admin: true, body: () => ({ email: freshEmail('fuzz'), data: {} }) },
    { method: 'GET', path: () => '/verify', query: { token: 'abc', type: 'magiclink', redirect_to: 'http://localhost:3000/' } },
    { method: 'GET', path: () => '/admin/users', admin: true, query: { page: '1', per_page: '2' } },
    { method: 'POST', path: () => '/logout', token: () => known.token, query: { scope: 'nonsense' } },
  ]

  const failures: string[] = []
  const check = (what: string, res: Reply) => {
    if (res.status >= 500) failures.push(`${what}: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`)
    else if (res.status >= 400 && !(typeof res.body?.code === 'string' && typeof res.body?.message === 'string')) {
      failures.push(`${what}: ${res.status} not in GoTrue's shape: ${JSON.stringify(res.body).slice(0, 200)}`)
    }
  }
  const call = async (route: Route, body: unknown, raw?: BodyInit, query?: Record<string, string>) => {
    await resetAuthRateLimits() // every request reaches the code behind the limits
    const q = query ? `?${new URLSearchParams(query)}` : ''
    const path = await route.path()
    const sep = path.includes('?') && q ? '&' + q.slice(1) : q
    return send(route.method, path + sep, {
      body,
      raw,
      token: route.admin ? SERVICE_ROLE_KEY : route.token?.(),
      key: route.admin ? SERVICE_ROLE_KEY : ANON_KEY,
    })
  }

  for (const route of routes) {
    const label = `${route.method} ${(await route.path()).replace(/[0-9a-f-]{36}/, ':id')}`
    if (route.body) {
      for (const field of Object.keys(route.body())) {
        for (const [kind, value] of BAD_VALUES) {
          const body = { ...route.body(), [field]: value }
          check(`${label} ${field}=${kind}`, await call(route, body))
        }
      }
      for (const [kind, raw] of RAW_BODIES) check(`${label} raw ${kind}`, await call(route, undefined, raw as BodyInit))
    }
    for (const field of Object.keys(route.query ?? {})) {
      for (const value of BAD_QUERY_VALUES) {
        const res = await call(route, undefined, undefined, { ...route.query, [field]: value })
        check(`${label} ?${field}=${JSON.stringify(value).slice(0, 20)}`, res)
      }
    }
  }
  await resetAuthRateLimits()
  assert.deepEqual(failures, [])
})
