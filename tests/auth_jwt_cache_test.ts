// functions/_shared/jwt.ts remembers verified tokens briefly (the /api hop): a
// remembered token must still expire on time, and a refused one is never remembered.
import { strict as assert } from 'node:assert'
import { SignJWT } from 'jose'
import { verifyAccessToken } from '../functions/_shared/jwt.ts'
import { HttpError } from '../functions/_shared/errors.ts'
import { JWT_SECRET, signClaims, test } from './_helpers.ts'

const refused = (token: string) =>
  verifyAccessToken(token).then(() => false, (e) => e instanceof HttpError && e.status === 401)

test('a verified token stays refused past its exp, and a changed token is verified again', async () => {
  const now = Math.floor(Date.now() / 1000)
  const short = await new SignJWT({ sub: 'u', role: 'authenticated', aud: 'authenticated', exp: now + 2 })
    .setProtectedHeader({ alg: 'HS256' }).sign(new TextEncoder().encode(JWT_SECRET))
  assert.equal((await verifyAccessToken(short)).sub, 'u')
  assert.equal((await verifyAccessToken(short)).sub, 'u') // remembered
  const claims = await verifyAccessToken(short)
  claims.sub = 'changed by a caller'
  assert.equal((await verifyAccessToken(short)).sub, 'u', 'callers get a copy')
  // The same claims with one character of the signature changed are not the remembered token.
  const forged = short.slice(0, -2) + (short.at(-2) === 'A' ? 'B' : 'A') + short.at(-1)
  assert.ok(await refused(forged))
  await new Promise((r) => setTimeout(r, (now + 3) * 1000 - Date.now()))
  assert.ok(await refused(short), 'accepted after its exp')
})

test('a token refused once is refused again (never remembered)', async () => {
  const expired = await signClaims({ sub: 'u', role: 'authenticated', aud: 'authenticated' }, JWT_SECRET, -5)
  assert.ok(await refused(expired))
  assert.ok(await refused(expired))
})
