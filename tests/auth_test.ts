// POST /api/auth/verify, and bearer handling shared by every protected endpoint.
import { strict as assert } from 'node:assert'
import { importJWK, SignJWT } from 'jose'
import { api, assertError, badTokensFor, createUser, env, signClaims, test } from './_helpers.ts'

test('verify returns the user of a valid token', async () => {
  const user = await createUser()
  const res = await api('/api/auth/verify', { body: { token: user.token } })
  assert.equal(res.status, 200)
  assert.deepEqual(res.body, { user: { id: user.id, email: user.email } })
})

test('verify: missing or non-string token is 400 naming the field; malformed JSON is 400', async () => {
  assertError(await api('/api/auth/verify', { body: {} }), 400, 'token')
  assertError(await api('/api/auth/verify', { body: { token: 42 } }), 400, 'token')
  assertError(await api('/api/auth/verify', { body: { token: '' } }), 400, 'token')
  assertError(await api('/api/auth/verify', { rawBody: '{"token": ' }), 400, 'Malformed JSON')
  assertError(await api('/api/auth/verify', { method: 'POST' }), 400)
})

test('verify: expired, wrong signature, alg none, malformed and anon tokens are 401', async () => {
  const user = await createUser()
  for (const [kind, token] of Object.entries(await badTokensFor(user))) {
    const res = await api('/api/auth/verify', { body: { token } })
    assert.equal(res.status, 401, `${kind}: ${JSON.stringify(res.body)}`)
    assert.equal(typeof res.body.error, 'string')
  }
  const expired = await api('/api/auth/verify', { body: { token: (await badTokensFor(user)).expired } })
  assert.match(expired.body.error, /expired/i)
})

test('verify: ES256 tokens are checked against the project JWKS', async () => {
  const user = await createUser()
  const jwk = JSON.parse(env('TEST_ES256_PRIVATE_JWK'))
  const key = await importJWK(jwk, 'ES256')
  const claims = { sub: user.id, email: user.email, role: 'authenticated', aud: 'authenticated' }
  const good = await new SignJWT(claims).setProtectedHeader({ alg: 'ES256', kid: jwk.kid })
    .setIssuedAt().setExpirationTime('1h').sign(key)
  const res = await api('/api/auth/verify', { body: { token: good } })
  assert.equal(res.status, 200, JSON.stringify(res.body))
  assert.equal(res.body.user.id, user.id)

  // Same claims signed by a key the JWKS does not hold.
  const { privateKey } = await (await import('jose')).generateKeyPair('ES256')
  const forged = await new SignJWT(claims).setProtectedHeader({ alg: 'ES256', kid: jwk.kid })
    .setIssuedAt().setExpirationTime('1h').sign(privateKey)
  assertError(await api('/api/auth/verify', { body: { token: forged } }), 401)
})

test('protected endpoints refuse a token signed with another secret', async () => {
  const user = await createUser()
  const token = await signClaims({ sub: user.id, role: 'authenticated' }, 'x'.repeat(40))
  assertError(await api('/api/user/profile', { token }), 401)
})
