// Signed URLs through supabase-js: createSignedUrl(s) and downloads through them, the token's
// claims, expiry and tampering refused in Storage's error shape, and signed upload URLs
// (createSignedUploadUrl + uploadToSignedUrl) under the bucket's policies.
import { strict as assert } from 'node:assert'
import { decodeJwt, SignJWT } from 'jose'
import { api, clientAs, createUser, JWT_SECRET, sql, test } from './_helpers.ts'
import { makeBuckets, STORAGE } from './_storage.ts'

const text = (s: string) => new Blob([s], { type: 'text/plain' })
const sign = (claims: Record<string, unknown>, secret = JWT_SECRET) =>
  new SignJWT(claims).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).sign(new TextEncoder().encode(secret))
const now = () => Math.floor(Date.now() / 1000)

async function get(url: string, init?: RequestInit) {
  const res = await fetch(url, init)
  const body = await res.text()
  let parsed: any = body
  try {
    parsed = JSON.parse(body)
  } catch { /* not JSON */ }
  return { status: res.status, body: parsed, headers: res.headers }
}

test('storage signed URLs: download, batch, expiry and tampering', async () => {
  const buckets = await makeBuckets('st-sign')
  try {
    const A = await createUser({ prefix: 'st-sign-a' })
    const B = await createUser({ prefix: 'st-sign-b' })
    const a = clientAs(A.token).storage.from(buckets.priv)
    const b = clientAs(B.token).storage.from(buckets.priv)
    const key = `${A.id}/docs/report.txt`
    const key2 = `${A.id}/docs/second.txt`
    assert.equal((await a.upload(key, text('secret report'))).error, null)
    assert.equal((await a.upload(key2, text('second'))).error, null)

    // A signed URL anyone can fetch, carrying {url, iat, exp} signed with the project's secret.
    const { data, error } = await a.createSignedUrl(key, 60)
    assert.equal(error, null)
    const url = new URL(data!.signedUrl)
    assert.equal(url.origin + url.pathname, `${STORAGE}/object/sign/${buckets.priv}/${key}`)
    const token = url.searchParams.get('token')!
    const claims = decodeJwt(token)
    assert.equal(claims.url, `${buckets.priv}/${key}`)
    assert.equal(claims.exp! - claims.iat!, 60)
    assert.equal(claims.role, undefined) // never usable as an access token
    const dl = await get(data!.signedUrl)
    assert.equal(dl.status, 200)
    assert.equal(dl.body, 'secret report')
    assert.equal(dl.headers.get('content-type'), 'text/plain')

    // ?download names the file.
    const named = await a.createSignedUrl(key, 60, { download: 'mine.txt' })
    const asFile = await fetch(named.data!.signedUrl)
    await asFile.body?.cancel()
    assert.equal(asFile.headers.get('content-disposition'), 'attachment; filename="mine.txt"')

    // Only someone who may read the object gets a URL.
    const stranger = await b.createSignedUrl(key, 60)
    assert.equal(stranger.data, null)
    assert.equal((stranger.error as any).statusCode, '404')
    const anon = await clientAs().storage.from(buckets.priv).createSignedUrl(key, 60)
    assert.equal(anon.data, null)
    const missing = await a.createSignedUrl(`${A.id}/nope.txt`, 60)
    assert.equal((missing.error as any).statusCode, '404')
    const zero = await fetch(`${STORAGE}/object/sign/${buckets.priv}/${key}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${A.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ expiresIn: 0 }),
    })
    assert.equal(zero.status, 400)
    assert.equal((await zero.json()).statusCode, '400')

    // Batch: in the order asked, an error for what the caller may not read.
    const batch = await a.createSignedUrls([key2, `${A.id}/nope.txt`, key], 120)
    assert.equal(batch.error, null)
    assert.deepEqual(batch.data!.map((d) => [d.path, d.error]), [
      [key2, null],
      [`${A.id}/nope.txt`, 'Either the object does not exist or you do not have access to it'],
      [key, null],
    ])
    assert.equal(batch.data![1].signedUrl, null)
    assert.equal(await (await fetch(batch.data![0].signedUrl)).text(), 'second')
    assert.equal(
      decodeJwt(new URL(batch.data![2].signedUrl).searchParams.get('token')!).url,
      `${buckets.priv}/${key}`,
    )
    const theirs = await b.createSignedUrls([key, key2], 60)
    assert.deepEqual(theirs.data!.map((d) => d.signedUrl), [null, null])

    // Expired: a real one after its second, and one made to have expired.
    const short = await a.createSignedUrl(key, 1)
    await new Promise((r) => setTimeout(r, 2100))
    const late = await get(short.data!.signedUrl)
    assert.deepEqual([late.status, late.body], [400, {
      statusCode: '400',
      error: 'InvalidJWT',
      message: 'jwt expired',
    }])
    const old = await sign({ url: `${buckets.priv}/${key}`, iat: now() - 100, exp: now() - 10 })
    assert.equal(
      (await get(`${STORAGE}/object/sign/${buckets.priv}/${key}?token=${old}`)).body.message,
      'jwt expired',
    )

    // Tampered: a changed signature, a token for another object, another secret, a session token.
    const flipped = token.slice(0, -3) + (token.slice(-3) === 'AAA' ? 'BBB' : 'AAA')
    const bad = await get(`${STORAGE}/object/sign/${buckets.priv}/${key}?token=${flipped}`)
    assert.deepEqual([bad.status, bad.body.error, bad.body.statusCode], [400, 'InvalidJWT', '400'])
    const other = await get(`${STORAGE}/object/sign/${buckets.priv}/${key2}?token=${token}`)
    assert.deepEqual([other.status, other.body], [400, {
      statusCode: '400',
      error: 'InvalidSignature',
      message: 'The url do not match the signature',
    }])
    const forged = await sign(
      { url: `${buckets.priv}/${key}`, iat: now(), exp: now() + 60 },
      'another-secret-another-secret-1234',
    )
    assert.equal(
      (await get(`${STORAGE}/object/sign/${buckets.priv}/${key}?token=${forged}`)).body.message,
      'invalid signature',
    )
    assert.equal(
      (await get(`${STORAGE}/object/sign/${buckets.priv}/${key}?token=${A.token}`)).body.error,
      'InvalidSignature',
    )
    assert.equal((await get(`${STORAGE}/object/sign/${buckets.priv}/${key}?token=garbage`)).status, 400)
    assert.equal((await get(`${STORAGE}/object/sign/${buckets.priv}/${key}`)).status, 400)
    // A signed-URL token is no access token.
    assert.equal(
      (await get(`${STORAGE}/object/${buckets.priv}/${key}`, {
        headers: { authorization: `Bearer ${token}` },
      })).status,
      403,
    )
  } finally {
    await buckets.cleanup()
  }
})

test('storage signed upload URLs: uploadToSignedUrl writes as the signer, within the policies', async () => {
  const buckets = await makeBuckets('st-sign-up')
  try {
    const A = await createUser({ prefix: 'st-up-a' })
    const B = await createUser({ prefix: 'st-up-b' })
    const a = clientAs(A.token).storage.from(buckets.priv)
    const path = `${A.id}/uploads/photo.txt`

    const { data, error } = await a.createSignedUploadUrl(path)
    assert.equal(error, null)
    assert.equal(data!.path, path)
    assert.equal(new URL(data!.signedUrl).pathname, `/storage/v1/object/upload/sign/${buckets.priv}/${path}`)
    const claims = decodeJwt(data!.token)
    assert.deepEqual([claims.url, claims.owner, claims.upsert], [`${buckets.priv}/${path}`, A.id, false])
    assert.equal(claims.exp! - claims.iat!, 7200)

    // Anyone holding the URL uploads (here a client with no token at all); the row is the signer's.
    const anon = clientAs().storage.from(buckets.priv)
    const up = await anon.uploadToSignedUrl(path, data!.token, text('via signed url'))
    assert.equal(up.error, null)
    assert.deepEqual(up.data, { path, fullPath: `${buckets.priv}/${path}` })
    const [row] =
      await sql`select owner, owner_id, metadata from storage.objects where bucket_id = ${buckets.priv} and name = ${path}`
    assert.deepEqual([row.owner, row.owner_id, row.metadata.mimetype], [A.id, A.id, 'text/plain'])
    assert.equal(row.metadata.cacheControl, 'max-age=3600') // storage-js sent cacheControl "undefined"
    assert.equal(await (await a.download(path)).data!.text(), 'via signed url')

    // The same URL again: the object exists and the URL was made without upsert.
    const again = await anon.uploadToSignedUrl(path, data!.token, text('again'))
    assert.equal((again.error as any).statusCode, '409')
    const replace = await a.createSignedUploadUrl(path, { upsert: true })
    assert.equal(
      (await anon.uploadToSignedUrl(path, replace.data!.token, 'raw body', { contentType: 'text/plain' }))
        .error,
      null,
    )
    assert.equal(await (await a.download(path)).data!.text(), 'raw body')
    // Without upsert, a URL for an existing object is refused when asked for.
    assert.equal(((await a.createSignedUploadUrl(path)).error as any).statusCode, '409')

    // The policies decide who may get one: not for another user's folder.
    const b = clientAs(B.token).storage.from(buckets.priv)
    const intruder = await b.createSignedUploadUrl(`${A.id}/uploads/evil.txt`)
    assert.equal(intruder.data, null)
    assert.equal((intruder.error as any).statusCode, '403')
    assert.equal(
      (await clientAs().storage.from(buckets.priv).createSignedUploadUrl(`${A.id}/x.txt`)).data,
      null,
    )

    // A URL is for its own path only, and not past its expiry.
    const other = await a.createSignedUploadUrl(`${A.id}/uploads/one.txt`)
    const elsewhere = await anon.uploadToSignedUrl(`${A.id}/uploads/two.txt`, other.data!.token, text('x'))
    assert.equal((elsewhere.error as any).statusCode, '400')
    const expired = await sign({
      owner: A.id,
      url: `${buckets.priv}/${A.id}/uploads/late.txt`,
      upsert: false,
      iat: now() - 100,
      exp: now() - 1,
    })
    const late = await anon.uploadToSignedUrl(`${A.id}/uploads/late.txt`, expired, text('late'))
    assert.equal((late.error as any).statusCode, '400')
    assert.equal(late.error!.message, 'jwt expired')
    assert.equal(
      (await sql`select count(*)::int as n from storage.objects where bucket_id = ${buckets.priv}`)[0].n,
      1,
    )

    // Each kind of token for its own URL only: an upload token downloads nothing, a download
    // token uploads nothing.
    const upload = await a.createSignedUploadUrl(path, { upsert: true })
    const asDownload = await fetch(
      `${STORAGE}/object/sign/${buckets.priv}/${path}?token=${upload.data!.token}`,
    )
    assert.deepEqual([asDownload.status, (await asDownload.json()).error], [400, 'InvalidSignature'])
    const download = await a.createSignedUrl(path, 60)
    const downloadToken = new URL(download.data!.signedUrl).searchParams.get('token')!
    const asUpload = await anon.uploadToSignedUrl(path, downloadToken, text('overwrite'), { upsert: true })
    assert.equal((asUpload.error as any).statusCode, '400')
    assert.equal(await (await a.download(path)).data!.text(), 'raw body')
  } finally {
    await buckets.cleanup()
  }
})

test('storage signed upload URLs made in an impersonation session: audited as its writes, refused once it ends', async () => {
  const buckets = await makeBuckets('st-sign-imp')
  try {
    const admin = await createUser({ superAdmin: true, prefix: 'st-imp-admin' })
    const target = await createUser({ prefix: 'st-imp-target' })
    const started = await api('/api/admin/impersonation', {
      token: admin.token,
      body: { user_id: target.id, reason: 'Ticket 12: her upload fails' },
    })
    assert.equal(started.status, 201, JSON.stringify(started.body))
    const { session_id: sessionId, access_token: token } = started.body
    const asTarget = clientAs(token).storage.from(buckets.priv)
    const first = await asTarget.createSignedUploadUrl(`${target.id}/first.txt`)
    const second = await asTarget.createSignedUploadUrl(`${target.id}/second.txt`)
    assert.equal(first.error, null)

    const anon = clientAs().storage.from(buckets.priv)
    assert.equal(
      (await anon.uploadToSignedUrl(`${target.id}/first.txt`, first.data!.token, text('one'))).error,
      null,
    )
    const [row] =
      await sql`select id from storage.objects where bucket_id = ${buckets.priv} and name = ${`${target.id}/first.txt`}`
    const writes = await sql`select admin_id, target_id, table_name, operation, row_id, actor_role
                             from public.impersonation_writes where session_id = ${sessionId}`
    assert.deepEqual(writes.map((w) => ({ ...w })), [{
      admin_id: admin.id,
      target_id: target.id,
      table_name: 'storage.objects',
      operation: 'INSERT',
      row_id: row.id,
      actor_role: 'service_role',
    }])

    // Once the session is stopped, a URL it made stores nothing.
    assert.equal((await api('/api/admin/impersonation/stop', { token, body: {} })).body.stopped, true)
    const late = await anon.uploadToSignedUrl(`${target.id}/second.txt`, second.data!.token, text('two'))
    assert.equal((late.error as any).statusCode, '401')
    assert.equal(
      (await sql`select count(*)::int as n from storage.objects where bucket_id = ${buckets.priv}`)[0].n,
      1,
    )
  } finally {
    await buckets.cleanup()
  }
})
