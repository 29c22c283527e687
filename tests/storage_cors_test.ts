// CORS on /storage/v1: a page on http://localhost:3000 uses supabase-js's storage client
// (every call preflighted and checked as a browser does, see browserFetch), and fetch()es
// public and signed object URLs.
import { strict as assert } from 'node:assert'
import { createUser, sql, test } from './_helpers.ts'
import { browserClientAs, browserFetch, makeBuckets, PAGE_ORIGIN, STORAGE } from './_storage.ts'

test('storage CORS: a preflight is answered with the origin, methods and every header storage-js sends', async () => {
  const asked =
    'authorization,apikey,x-client-info,content-type,x-upsert,cache-control,x-metadata,x-my-app-header'
  for (
    const path of [
      '/object/some-bucket/a/b.png',
      '/object/sign/some-bucket',
      '/render/image/public/b/x.png',
      '/bucket',
    ]
  ) {
    const res = await fetch(`${STORAGE}${path}`, {
      method: 'OPTIONS',
      headers: {
        origin: PAGE_ORIGIN,
        'access-control-request-method': 'PUT',
        'access-control-request-headers': asked,
      },
    })
    await res.body?.cancel()
    assert.ok(res.status === 200 || res.status === 204, `${path}: ${res.status}`)
    assert.equal(res.headers.get('access-control-allow-origin'), '*')
    const methods = res.headers.get('access-control-allow-methods')!.split(/,\s*/)
    for (const m of ['GET', 'HEAD', 'POST', 'PUT', 'DELETE']) assert.ok(methods.includes(m), `${path}: ${m}`)
    const allowed = res.headers.get('access-control-allow-headers')!.toLowerCase().split(/,\s*/)
    for (const h of asked.split(',')) assert.ok(allowed.includes(h), `${path}: ${h} not in ${allowed}`)
  }
  // Without Access-Control-Request-Headers the known list is offered.
  const plain = await fetch(`${STORAGE}/object/x/y`, { method: 'OPTIONS', headers: { origin: PAGE_ORIGIN } })
  await plain.body?.cancel()
  const allowed = plain.headers.get('access-control-allow-headers')!.toLowerCase()
  for (const h of ['authorization', 'apikey', 'x-client-info', 'content-type', 'x-upsert', 'cache-control']) {
    assert.ok(allowed.includes(h), h)
  }
})

test('storage CORS: every answer, errors included, allows the page and exposes the headers it reads', async () => {
  const res = await fetch(`${STORAGE}/object/no-such-bucket/x.txt`, { headers: { origin: PAGE_ORIGIN } })
  assert.equal(res.status, 400) // no token
  await res.body?.cancel()
  assert.equal(res.headers.get('access-control-allow-origin'), '*')
  const exposed = res.headers.get('access-control-expose-headers')!.toLowerCase()
  for (
    const h of [
      'content-length',
      'content-type',
      'etag',
      'last-modified',
      'cache-control',
      'content-disposition',
    ]
  ) {
    assert.ok(exposed.includes(h), h)
  }
})

test('storage CORS: supabase-js storage from a page on localhost:3000 works end to end', async () => {
  const buckets = await makeBuckets('st-cors')
  try {
    const a = await createUser({ prefix: 'st-cors' })
    const preflights: string[] = []
    const page = browserClientAs(a.token, preflights).storage
    const key = `${a.id}/hello.txt`
    const up = await page.from(buckets.priv).upload(key, new Blob(['hello'], { type: 'text/plain' }))
    assert.equal(up.error, null)
    const again = await page.from(buckets.priv).upload(key, 'replaced', {
      upsert: true,
      contentType: 'text/plain',
    })
    assert.equal(again.error, null)
    const dl = await page.from(buckets.priv).download(key)
    assert.equal(await dl.data?.text(), 'replaced')
    const listed = await page.from(buckets.priv).list(a.id)
    assert.deepEqual(listed.data?.map((e) => e.name), ['hello.txt'])
    assert.equal((await page.from(buckets.priv).exists(key)).data, true)
    assert.equal((await page.from(buckets.priv).info(key)).data?.size, 'replaced'.length)
    const signed = await page.from(buckets.priv).createSignedUrl(key, 60)
    assert.equal(signed.error, null)
    // The page fetches the signed URL itself (no token needed, no preflight: a simple GET).
    const viaUrl = await browserFetch()(signed.data!.signedUrl)
    assert.equal(await viaUrl.text(), 'replaced')
    const moved = await page.from(buckets.priv).move(key, `${a.id}/moved.txt`)
    assert.equal(moved.error, null)
    const removed = await page.from(buckets.priv).remove([`${a.id}/moved.txt`])
    assert.deepEqual(removed.data?.map((r) => r.name), [`${a.id}/moved.txt`])
    // Each call with a token was preflighted, and every preflight passed.
    assert.ok(preflights.length >= 8, preflights.join('\n'))

    // A public object URL: fetch() from the page, no headers at all.
    const pubKey = `${a.id}/pixel.txt`
    assert.equal(
      (await page.from(buckets.pub).upload(pubKey, new Blob(['pub'], { type: 'text/plain' }))).error,
      null,
    )
    const url = page.from(buckets.pub).getPublicUrl(pubKey).data.publicUrl
    const pub = await browserFetch()(url)
    assert.equal(pub.status, 200)
    assert.equal(await pub.text(), 'pub')
    assert.equal(
      (await sql`select count(*)::int as n from storage.objects where bucket_id = ${buckets.priv}`)[0].n,
      0,
    )
  } finally {
    await buckets.cleanup()
  }
})
