// Security review of Auth (issue 34): an impersonation token cannot touch the account through
// Auth, a password set before an address was confirmed does not survive a confirmation by
// e-mail link, answers that would tell whether an address has an account, redirect_to checked
// as hosted Auth checks it, and the inbox's answer to an impossible id.
import { strict as assert } from 'node:assert'
import { loadAuthConfig } from '../scripts/lib/auth/config.ts'
import { ANON_KEY, api, API_URL, createUser, sql, test } from './_helpers.ts'
import {
  adminClient,
  appClient,
  claimsOf,
  codeIn,
  followLink,
  freshEmail,
  INBOX_URL,
  lastMailTo,
  linkIn,
  mailsTo,
  resetAuthRateLimits,
} from './_auth.ts'

const config = await loadAuthConfig()

/** A raw Auth call as auth-js makes it (2024-01-01 error shape). */
async function auth(
  path: string,
  o: { method?: string; token?: string; body?: unknown; key?: string } = {},
): Promise<{ status: number; body: any; headers: Headers }> {
  const headers: Record<string, string> = {
    apikey: o.key ?? ANON_KEY,
    'x-supabase-api-version': '2024-01-01',
  }
  if (o.token) headers.authorization = `Bearer ${o.token}`
  if (o.body !== undefined) headers['content-type'] = 'application/json'
  const res = await fetch(`${API_URL}/auth/v1${path}`, {
    method: o.method ?? (o.body === undefined ? 'GET' : 'POST'),
    headers,
    body: o.body === undefined ? undefined : JSON.stringify(o.body),
  })
  const text = await res.text()
  return { status: res.status, body: text ? JSON.parse(text) : null, headers: res.headers }
}

/** A confirmed user with a password, signed in on one device. */
async function confirmedUser(password = 'her own password') {
  const email = freshEmail('owner')
  const { data, error } = await adminClient().auth.admin.createUser({ email, password, email_confirm: true })
  assert.equal(error, null)
  const signedIn = await appClient().auth.signInWithPassword({ email, password })
  assert.equal(signedIn.error, null)
  return { id: data.user!.id, email, password, session: signedIn.data.session! }
}

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms))
const afterMaxFrequency = () => wait(config.email.maxFrequency * 1000 + 150)

// ---------------------------------------------------------------------------------------------
// 1. Impersonation tokens and Auth
// ---------------------------------------------------------------------------------------------

test('an impersonation token changes nothing through Auth (password, e-mail, data, sessions), before and after the stop', async () => {
  await resetAuthRateLimits()
  const superAdmin = await createUser({ superAdmin: true, prefix: 'authsec-admin' })
  const user = await confirmedUser()
  const started = await api('/api/admin/impersonation', {
    token: superAdmin.token,
    body: { user_id: user.id, reason: 'Ticket 34: cannot sign in' },
  })
  assert.equal(started.status, 201, JSON.stringify(started.body))
  const token = started.body.access_token as string

  const attempts = async () => [
    ['PUT /user password', await auth('/user', { method: 'PUT', token, body: { password: 'the admin chose this' } })],
    ['PUT /user email', await auth('/user', { method: 'PUT', token, body: { email: freshEmail('admin-inbox') } })],
    ['PUT /user data', await auth('/user', { method: 'PUT', token, body: { data: { full_name: 'Changed' } } })],
    ['GET /user', await auth('/user', { token })],
    ['logout global', await auth('/logout?scope=global', { method: 'POST', token })],
    ['logout local', await auth('/logout?scope=local', { method: 'POST', token })],
    ['logout others', await auth('/logout?scope=others', { method: 'POST', token })],
  ] as const
  const refusedAll = (label: string, rows: Awaited<ReturnType<typeof attempts>>) => {
    for (const [what, res] of rows) {
      assert.equal(res.status, 403, `${label}: ${what} -> ${res.status} ${JSON.stringify(res.body)}`)
      assert.equal(res.body.code, 'session_not_found', `${label}: ${what}`)
    }
  }
  refusedAll('during the session', await attempts())
  // What makes hosted Auth refuse it too: a session_id that names no row of auth.sessions
  // (hosted GoTrue looks it up on every authenticated route and answers 403 session_not_found;
  // a token without session_id it takes as the user).
  const claims = claimsOf(token)
  assert.equal(claims.session_id, started.body.session_id)
  const [{ n }] = await sql`select count(*)::int as n from auth.sessions where id = ${claims.session_id}::uuid`
  assert.equal(n, 0)
  // Factors (MFA) and reauthentication are not served locally (404) and need a session on hosted.
  assert.ok((await auth('/factors', { token, body: { factor_type: 'totp' } })).status >= 400)
  assert.ok((await auth('/reauthenticate', { token })).status >= 400)

  // The token still works where it is meant to until the session ends.
  assert.equal((await api('/api/user/profile', { token })).status, 200)
  const stopped = await api('/api/admin/impersonation/stop', { token, body: {} })
  assert.equal(stopped.status, 200)
  refusedAll('after the stop', await attempts())

  // Nothing changed: her password, address, metadata and session are as they were.
  const [after] = await sql`select email, raw_user_meta_data from auth.users where id = ${user.id}`
  assert.equal(after.email, user.email)
  assert.equal(after.raw_user_meta_data.full_name, undefined)
  assert.equal((await auth('/user', { token: user.session.access_token })).status, 200, 'her session lives')
  assert.equal((await appClient().auth.signInWithPassword({ email: user.email, password: user.password })).error, null)
  const adminPassword = await appClient().auth.signInWithPassword({ email: user.email, password: 'the admin chose this' })
  assert.equal(adminPassword.error?.code, 'invalid_credentials')
})

// ---------------------------------------------------------------------------------------------
// 4. Pre-account takeover
// ---------------------------------------------------------------------------------------------

/** Someone signs the address up with their password and leaves it unconfirmed. */
async function plantedAccount() {
  await resetAuthRateLimits()
  const email = freshEmail('victim')
  const planted = await appClient().auth.signUp({ email, password: 'attacker password' })
  assert.equal(planted.error, null)
  assert.equal(planted.data.session, null)
  await afterMaxFrequency()
  return email
}

test('pre-account takeover: a password set before the address is confirmed by a magic link or code does not sign in', async () => {
  // The owner of the mailbox signs in by link (signInWithOtp): the link confirms the address.
  const byLink = await plantedAccount()
  assert.equal((await appClient().auth.signInWithOtp({ email: byLink })).error, null)
  const out = await followLink(linkIn(await lastMailTo(byLink)))
  assert.ok(out.params.access_token, JSON.stringify(out))
  const viaLink = await appClient().auth.signInWithPassword({ email: byLink, password: 'attacker password' })
  assert.equal(viaLink.error?.code, 'invalid_credentials')

  // ... or types the e-mailed code.
  const byCode = await plantedAccount()
  assert.equal((await appClient().auth.signInWithOtp({ email: byCode })).error, null)
  const verified = await appClient().auth.verifyOtp({ email: byCode, token: codeIn(await lastMailTo(byCode)), type: 'email' })
  assert.equal(verified.error, null)
  const viaCode = await appClient().auth.signInWithPassword({ email: byCode, password: 'attacker password' })
  assert.equal(viaCode.error?.code, 'invalid_credentials')

  // ... or asks for a password reset.
  const byRecovery = await plantedAccount()
  assert.equal((await appClient().auth.resetPasswordForEmail(byRecovery)).error, null)
  assert.ok((await followLink(linkIn(await lastMailTo(byRecovery, 'Reset Your Password')))).params.access_token)
  const viaRecovery = await appClient().auth.signInWithPassword({ email: byRecovery, password: 'attacker password' })
  assert.equal(viaRecovery.error?.code, 'invalid_credentials')
})

test('pre-account takeover: signing up an unconfirmed address again does not take it over; a plain sign-up keeps its password', async () => {
  const email = await plantedAccount()
  // The owner signs up too: the pending account is not rewritten (hosted: "we can't be sure of
  // their claimed identity"), its confirmation is sent again, and the planted password is void.
  const owner = appClient()
  assert.equal((await owner.auth.signUp({ email, password: 'owner password', options: { data: { full_name: 'Owner' } } })).error, null)
  assert.ok((await followLink(linkIn(await lastMailTo(email)))).params.access_token)
  for (const password of ['attacker password', 'owner password']) {
    const res = await appClient().auth.signInWithPassword({ email, password })
    assert.equal(res.error?.code, 'invalid_credentials', password)
  }

  // An ordinary sign-up confirmed by its own e-mail keeps the password it was made with.
  await resetAuthRateLimits()
  const plain = freshEmail('plain')
  assert.equal((await appClient().auth.signUp({ email: plain, password: 'my password' })).error, null)
  await followLink(linkIn(await lastMailTo(plain)))
  assert.equal((await appClient().auth.signInWithPassword({ email: plain, password: 'my password' })).error, null)
})

// ---------------------------------------------------------------------------------------------
// 6. Whether an address has an account
// ---------------------------------------------------------------------------------------------

/** The median of fn's duration over `runs` runs, in ms. */
async function medianMs(runs: number, fn: () => Promise<unknown>) {
  const times: number[] = []
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now()
    await fn()
    times.push(performance.now() - t0)
  }
  return times.sort((a, b) => a - b)[Math.floor(runs / 2)]
}

test('enumeration: the password grant takes as long for an unknown address as for a wrong password', async () => {
  await resetAuthRateLimits()
  const known = await confirmedUser()
  const wrong = (email: string) => auth('/token?grant_type=password', { body: { email, password: 'not it at all' } })
  const first = await wrong(freshEmail('nobody'))
  assert.equal(first.status, 400)
  assert.equal(first.body.code, 'invalid_credentials')
  const knownMs = await medianMs(7, () => wrong(known.email))
  const unknownMs = await medianMs(7, () => wrong(freshEmail('nobody')))
  assert.ok(unknownMs > knownMs * 0.5, `unknown ${unknownMs.toFixed(1)} ms vs known ${knownMs.toFixed(1)} ms`)
})

test('enumeration: signing up a confirmed address answers as a new one does, in about the same time', async () => {
  await resetAuthRateLimits()
  const known = await confirmedUser()
  const signUp = (email: string) => auth('/signup', { body: { email, password: 'another password' } })
  const taken = await signUp(known.email)
  const fresh = await signUp(freshEmail('new'))
  assert.equal(taken.status, 200)
  assert.equal(fresh.status, 200)
  assert.equal(taken.body.access_token, undefined)
  assert.equal(taken.body.email, known.email)
  await resetAuthRateLimits()
  const takenMs = await medianMs(5, () => signUp(known.email))
  await resetAuthRateLimits()
  const freshMs = await medianMs(5, () => signUp(freshEmail('new')))
  assert.ok(takenMs > freshMs * 0.4, `taken ${takenMs.toFixed(1)} ms vs new ${freshMs.toFixed(1)} ms`)
})

test('enumeration: /resend answers a confirmed address as an unknown one; /recover and PUT /user are limited per IP whatever the address', async () => {
  await resetAuthRateLimits()
  const known = await confirmedUser()
  for (const email of [known.email, freshEmail('nobody')]) {
    const res = await auth('/resend', { body: { type: 'signup', email } })
    assert.equal(res.status, 200, `${email}: ${JSON.stringify(res.body)}`)
    assert.deepEqual(res.body, {})
  }
  assert.deepEqual(await mailsTo(known.email), [])

  // Unknown addresses count against the per-IP limit of /recover as known ones do.
  await resetAuthRateLimits()
  const limit = config.rateLimit.signInSignUps
  let recoverLimited = -1
  for (let i = 0; i <= limit && recoverLimited < 0; i++) {
    const res = await auth('/recover', { body: { email: freshEmail('nobody') } })
    if (res.status === 429) recoverLimited = i
    else assert.equal(res.status, 200)
  }
  assert.equal(recoverLimited, limit, 'the request after the limit is 429')

  // PUT /user with a taken address says email_exists (as hosted Auth does), at most `limit`
  // times per IP in 5 minutes.
  await resetAuthRateLimits()
  const other = await confirmedUser()
  let userLimited = -1
  for (let i = 0; i <= limit && userLimited < 0; i++) {
    const res = await auth('/user', { method: 'PUT', token: known.session.access_token, body: { email: other.email } })
    if (res.status === 429) {
      userLimited = i
      assert.equal(res.body.code, 'over_request_rate_limit')
    } else assert.equal(res.body.code, 'email_exists')
  }
  assert.equal(userLimited, limit)
  await resetAuthRateLimits()
})

// ---------------------------------------------------------------------------------------------
// 7. redirect_to
// ---------------------------------------------------------------------------------------------

test('redirect_to: scheme, host and port must match site_url or an allow-list glob, else site_url', async () => {
  await resetAuthRateLimits()
  assert.equal(config.siteUrl, 'http://127.0.0.1:3000', 'the cases below assume config.toml site_url')
  assert.ok(config.additionalRedirectUrls.includes('http://localhost:3000/**'))
  /** Where a failed e-mail link sends the browser for this redirect_to (the 303 Location). */
  const landing = async (redirectTo: string) => {
    const q = new URLSearchParams({ token: 'no-such-token', type: 'magiclink', redirect_to: redirectTo })
    const res = await fetch(`${API_URL}/auth/v1/verify?${q}`, { redirect: 'manual' })
    await res.body?.cancel()
    assert.equal(res.status, 303)
    return res.headers.get('location')!.split('#')[0]
  }
  const refused = [
    'javascript:alert(document.cookie)',
    'javascript://127.0.0.1:3000/%0aalert(document.cookie)',
    'JavaScript://localhost:3000/%0aalert(1)',
    'myapp://127.0.0.1:3000/callback',
    'myapp://localhost:3000/callback',
    'http://localhost:4000/', // another port on an allowed host
    'https://localhost:3000/',
    'http://localhost:3000.evil.example/',
    'http://localhost:3000@evil.example/',
    'http://evil.example/#http://localhost:3000/',
    'http://evil.example/?next=http://localhost:3000/',
    'http://2130706433:3000/', // a loopback address written as a number
    'data:text/html,<script>alert(1)</script>',
  ]
  for (const url of refused) assert.equal(await landing(url), config.siteUrl, url)
  const allowed = [
    'http://127.0.0.1:3000/welcome',
    'http://127.0.0.1:8080/callback', // loopback: any port (RFC 8252), as hosted Auth allows
    'http://localhost:3000',
    'http://localhost:3000/deep/path?x=1',
  ]
  for (const url of allowed) assert.equal(await landing(url), url, url)

  // The same rule where the link is made: a magic link asked with a custom scheme goes to site_url.
  const { data } = await adminClient().auth.admin.generateLink({
    type: 'magiclink',
    email: freshEmail('redirect'),
    options: { redirectTo: 'myapp://127.0.0.1:3000/callback' },
  })
  assert.equal(data.properties?.redirect_to, config.siteUrl)
  await resetAuthRateLimits()
})

// ---------------------------------------------------------------------------------------------
// 11. The inbox
// ---------------------------------------------------------------------------------------------

test('the inbox answers 404 to an id no message can have', async () => {
  for (const id of ['99999999999999999999999', '9223372036854775808', '0']) {
    const res = await fetch(`${INBOX_URL}/api/v1/message/${id}`)
    await res.body?.cancel()
    assert.equal(res.status, 404, id)
  }
})
