// The object store checks tokens by /api's rules: expiry required, a
// user's token needs the authenticated audience, ES256 through the project's JWKS.
import { strict as assert } from 'node:assert'
import { importJWK, SignJWT } from 'jose'
import {
  ANON_KEY,
  API_URL,
  badTokensFor,
  createUser,
  env,
  JWT_SECRET,
  SERVICE_ROLE_KEY,
  signClaims,
  test,
} from './_helpers.ts'

const listBuckets = async (token: string) => {
  const res = await fetch(`${API_URL}/storage/v1/bucket`, { headers: { authorization: `Bearer ${token}` } })
  return { status: res.status, body: await res.json() }
}

test('storage refuses what /api refuses: no exp, another audience, expired, forged, alg none', async () => {
  const user = await createUser()
  const bad = await badTokensFor(user)
  for (const [kind, token] of Object.entries(bad)) {
    if (kind === 'anon key (no user)') continue // the anon key is a valid storage caller (anon)
    const res = await listBuckets(token)
    assert.equal(res.status, 403, `${kind}: ${JSON.stringify(res.body)}`)
    assert.equal(res.body.error, 'Unauthorized', kind)
  }
  assert.equal((await listBuckets(bad.expired)).body.message, 'jwt expired')
  // A user role without a subject, and keys that claim an audience, are refused too.
  assert.equal(
    (await listBuckets(await signClaims({ role: 'authenticated', aud: 'authenticated' }, JWT_SECRET))).status,
    403,
  )
  assert.equal(
    (await listBuckets(await signClaims({ role: 'service_role', aud: 'some-other-service' }, JWT_SECRET)))
      .status,
    403,
  )
})

test('storage accepts the user token, the anon and service-role keys, and ES256 tokens from the JWKS', async () => {
  const user = await createUser()
  for (const token of [user.token, ANON_KEY, SERVICE_ROLE_KEY]) {
    const res = await listBuckets(token)
    assert.equal(res.status, 200, JSON.stringify(res.body))
    assert.ok(Array.isArray(res.body))
  }
  const jwk = JSON.parse(env('TEST_ES256_PRIVATE_JWK'))
  const es256 = await new SignJWT({ sub: user.id, role: 'authenticated', aud: 'authenticated' })
    .setProtectedHeader({ alg: 'ES256', kid: jwk.kid }).setIssuedAt().setExpirationTime('1h')
    .sign(await importJWK(jwk, 'ES256'))
  assert.equal((await listBuckets(es256)).status, 200)
})
