// Sessions through supabase-js: refresh-token rotation and GoTrue's reuse detection,
// updateUser, sign-out scopes and the onAuthStateChange events an app listens to.
import { strict as assert } from 'node:assert'
import type { AuthChangeEvent, SupabaseClient } from '@supabase/supabase-js'
import { ANON_KEY, API_URL, JWT_SECRET, signClaims, sql, test } from './_helpers.ts'
import {
  appClient,
  claimsOf,
  followLink,
  freshEmail,
  lastMailTo,
  linkIn,
  resetAuthRateLimits,
} from './_auth.ts'

/** A confirmed user signed in on `count` clients (each its own session), as separate devices. */
async function signedInDevices(count: number, password = 'correct horse') {
  await resetAuthRateLimits()
  const email = freshEmail('session')
  const first = appClient()
  await first.auth.signUp({ email, password })
  await followLink(linkIn(await lastMailTo(email)))
  const devices: SupabaseClient[] = []
  for (let i = 0; i < count; i++) {
    const c = i === 0 ? first : appClient()
    const { error } = await c.auth.signInWithPassword({ email, password })
    assert.equal(error, null)
    devices.push(c)
  }
  return { email, devices }
}

const refreshRaw = (refresh_token: string) =>
  fetch(`${API_URL}/auth/v1/token?grant_type=refresh_token`, {
    method: 'POST',
    headers: { apikey: ANON_KEY, 'content-type': 'application/json', 'x-supabase-api-version': '2024-01-01' },
    body: JSON.stringify({ refresh_token }),
  }).then(async (r) => ({ status: r.status, body: await r.json() }))

test('refreshSession rotates the refresh token and keeps the session', async () => {
  const { devices: [client] } = await signedInDevices(1)
  const before = (await client.auth.getSession()).data.session!
  const { data, error } = await client.auth.refreshSession()
  assert.equal(error, null)
  const after = data.session!
  assert.notEqual(after.refresh_token, before.refresh_token, 'a new refresh token')
  assert.equal(
    claimsOf(after.access_token).session_id,
    claimsOf(before.access_token).session_id,
    'the same session',
  )
  const rows = await sql`select token, revoked, parent from auth.refresh_tokens
                         where session_id = ${claimsOf(after.access_token).session_id} order by id`
  assert.deepEqual(rows.map((r) => ({ ...r })), [
    { token: before.refresh_token, revoked: true, parent: null },
    { token: after.refresh_token, revoked: false, parent: before.refresh_token },
  ])
})

test("a rotated refresh token: within the reuse interval it yields the current token; after it, the session's family is revoked", async () => {
  const { devices: [client] } = await signedInDevices(1)
  const first = (await client.auth.getSession()).data.session!.refresh_token
  const second = (await client.auth.refreshSession()).data.session!.refresh_token

  // A client that lost the answer retries with the old token within the interval: it gets the
  // token it was already given, not a new branch.
  const retry = await refreshRaw(first)
  assert.equal(retry.status, 200)
  assert.equal(retry.body.refresh_token, second)

  // Beyond refresh_token_reuse_interval (10 s in config.toml): age the revocation instead of waiting.
  await sql`update auth.refresh_tokens set updated_at = now() - interval '1 minute' where token = ${first}`
  // A reuse of `first` while `second` is the active child is still the lost-answer case; make
  // `second` used too, so `first` is a plain reuse.
  const third = (await client.auth.refreshSession()).data.session!.refresh_token
  const reused = await refreshRaw(first)
  assert.equal(reused.status, 400)
  assert.deepEqual(reused.body, {
    code: 'refresh_token_already_used',
    message: 'Invalid Refresh Token: Already Used',
  })
  // The whole family is revoked: even the newest token no longer refreshes once its grace is over.
  await sql`update auth.refresh_tokens set updated_at = now() - interval '1 minute' where token = ${third}`
  const stolen = await refreshRaw(third)
  assert.equal(stolen.body.code, 'refresh_token_already_used')

  const { error } = await client.auth.refreshSession()
  assert.equal(error?.code, 'refresh_token_already_used', "supabase-js sees GoTrue's code")

  const unknown = await refreshRaw('not-a-token1')
  assert.deepEqual(unknown.body, {
    code: 'refresh_token_not_found',
    message: 'Invalid Refresh Token: Refresh Token Not Found',
  })
})

test('onAuthStateChange: SIGNED_IN, TOKEN_REFRESHED, USER_UPDATED, SIGNED_OUT', async () => {
  await resetAuthRateLimits()
  const email = freshEmail('events')
  const setup = appClient()
  await setup.auth.signUp({ email, password: 'correct horse' })
  await followLink(linkIn(await lastMailTo(email)))

  const client = appClient()
  const events: AuthChangeEvent[] = []
  const { data: sub } = client.auth.onAuthStateChange((event) => {
    events.push(event)
  })
  await client.auth.signInWithPassword({ email, password: 'correct horse' })
  await client.auth.refreshSession()
  const { data: updated, error } = await client.auth.updateUser({ data: { full_name: 'Evented' } })
  assert.equal(error, null)
  assert.deepEqual(updated.user?.user_metadata, { full_name: 'Evented' })
  await client.auth.signOut()
  await new Promise((r) => setTimeout(r, 50))
  sub.subscription.unsubscribe()
  assert.deepEqual(events, ['INITIAL_SESSION', 'SIGNED_IN', 'TOKEN_REFRESHED', 'USER_UPDATED', 'SIGNED_OUT'])
})

test('updateUser: metadata merges (null removes a key); a new password replaces the old; the same one is refused', async () => {
  const { email, devices: [client] } = await signedInDevices(1)
  await client.auth.updateUser({ data: { a: 1, b: 2 } })
  const { data } = await client.auth.updateUser({ data: { b: null, c: 3 } })
  assert.deepEqual(data.user?.user_metadata, { a: 1, c: 3 })

  const same = await client.auth.updateUser({ password: 'correct horse' })
  assert.equal(same.error?.code, 'same_password')
  assert.equal(same.error?.status, 422)
  const weak = await client.auth.updateUser({ password: 'abc' })
  assert.equal(weak.error?.code, 'weak_password')

  assert.equal((await client.auth.updateUser({ password: 'battery staple' })).error, null)
  const other = appClient()
  assert.equal(
    (await other.auth.signInWithPassword({ email, password: 'correct horse' })).error?.code,
    'invalid_credentials',
  )
  assert.equal((await other.auth.signInWithPassword({ email, password: 'battery staple' })).error, null)
})

test('signOut scope local ends this session only; others ends the rest; global ends all', async () => {
  const { devices: [a, b, c] } = await signedInDevices(3)
  const tokenOf = async (x: SupabaseClient) => (await x.auth.getSession()).data.session!
  const [sa, sb, sc] = [await tokenOf(a), await tokenOf(b), await tokenOf(c)]

  assert.equal((await b.auth.signOut({ scope: 'local' })).error, null)
  assert.equal(
    (await refreshRaw(sb.refresh_token)).body.code,
    'refresh_token_not_found',
    "b's session is gone",
  )
  assert.equal((await refreshRaw(sa.refresh_token)).status, 200, "a's session lives on")
  // The access token of an ended session is refused by /user (auth-js: session missing).
  const gone = await appClient().auth.getUser(sb.access_token)
  assert.equal(gone.error?.name, 'AuthSessionMissingError')

  const { data: { session: cNow } } = await c.auth.refreshSession()
  assert.equal((await c.auth.signOut({ scope: 'others' })).error, null)
  const [{ n }] = await sql`select count(*)::int as n from auth.sessions where user_id = ${sc.user.id}`
  assert.equal(n, 1, "only c's session is left")
  assert.equal((await appClient().auth.getUser(cNow!.access_token)).error, null)

  assert.equal((await c.auth.signOut()).error, null) // global is the default
  const [{ n: left }] = await sql`select count(*)::int as n from auth.sessions where user_id = ${sc.user.id}`
  assert.equal(left, 0)
  assert.equal((await c.auth.getSession()).data.session, null)
})

test("GET /user refuses a missing, forged or expired bearer with GoTrue's codes", async () => {
  const base = `${API_URL}/auth/v1/user`
  const h = { apikey: ANON_KEY, 'x-supabase-api-version': '2024-01-01' }
  const none = await fetch(base, { headers: h })
  assert.equal(none.status, 401)
  assert.equal((await none.json()).code, 'no_authorization')
  const forged = await fetch(base, { headers: { ...h, authorization: 'Bearer a.b.c' } })
  assert.equal(forged.status, 403)
  assert.equal((await forged.json()).code, 'bad_jwt')
  const expired = await signClaims(
    { sub: crypto.randomUUID(), role: 'authenticated', aud: 'authenticated' },
    JWT_SECRET,
    -60,
  )
  const old = await fetch(base, { headers: { ...h, authorization: `Bearer ${expired}` } })
  assert.equal(old.status, 403)
  const oldBody = await old.json()
  assert.equal(oldBody.code, 'bad_jwt')
  assert.match(oldBody.message, /expired/)
  const stranger = await signClaims(
    { sub: crypto.randomUUID(), role: 'authenticated', aud: 'authenticated' },
    JWT_SECRET,
  )
  const noUser = await fetch(base, { headers: { ...h, authorization: `Bearer ${stranger}` } })
  assert.equal(noUser.status, 403)
  assert.equal((await noUser.json()).code, 'user_not_found')
  // The anon key is a valid JWT without a user.
  const anon = await fetch(base, { headers: { ...h, authorization: `Bearer ${ANON_KEY}` } })
  assert.equal(anon.status, 403)
  assert.equal((await anon.json()).code, 'bad_jwt')
})
