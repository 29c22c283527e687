// Bucket administration through supabase-js (createBucket, updateBucket, emptyBucket,
// deleteBucket) under RLS on storage.buckets, and what an object carries beyond its bytes:
// user metadata, byte ranges, conditional requests.
import { strict as assert } from 'node:assert'
import { asStorage, clientAs, createUser, SERVICE_ROLE_KEY, sql, test } from './_helpers.ts'
import { makeBuckets, STORAGE } from './_storage.ts'

test('storage buckets: the service role creates, updates, empties and deletes; a user may not', async () => {
  const id = `st-admin-${crypto.randomUUID().slice(0, 8)}`
  const service = clientAs(SERVICE_ROLE_KEY).storage
  try {
    const created = await service.createBucket(id, {
      public: false,
      fileSizeLimit: '1KB',
      allowedMimeTypes: ['text/plain'],
    })
    assert.deepEqual(created, { data: { name: id }, error: null })
    const got = await service.getBucket(id)
    assert.deepEqual(
      [got.data!.public, got.data!.file_size_limit, got.data!.allowed_mime_types],
      [false, 1024, ['text/plain']],
    )
    assert.equal(((await service.createBucket(id)).error as any).statusCode, '409')
    assert.equal(((await service.createBucket('../escape')).error as any).statusCode, '400')
    assert.equal(
      ((await service.createBucket(id + '-x', { public: false, fileSizeLimit: 'lots' })).error as any)
        .statusCode,
      '400',
    )

    // The bucket's limits hold for uploads at once.
    const big = await service.from(id).upload('big.txt', new Blob(['x'.repeat(1025)], { type: 'text/plain' }))
    assert.equal((big.error as any).statusCode, '413')
    const updated = await service.updateBucket(id, {
      public: true,
      fileSizeLimit: 4096,
      allowedMimeTypes: ['text/*'],
    })
    assert.deepEqual(updated, { data: { message: 'Successfully updated' }, error: null })
    assert.equal(
      (await service.from(id).upload('big.txt', new Blob(['x'.repeat(1025)], { type: 'text/plain' }))).error,
      null,
    )
    assert.equal(
      (await service.from(id).upload('dir/a.txt', new Blob(['a'], { type: 'text/plain' }))).error,
      null,
    )
    assert.equal(
      await (await fetch(service.from(id).getPublicUrl('big.txt').data.publicUrl)).text(),
      'x'.repeat(1025),
    )

    // A user: no policy on storage.buckets lets them create, change or delete one.
    const user = clientAs((await createUser({ prefix: 'st-admin' })).token).storage
    assert.equal(((await user.createBucket(`${id}-mine`)).error as any).statusCode, '403')
    assert.equal(((await user.updateBucket(id, { public: false })).error as any).statusCode, '404')
    // Whether a bucket has objects is not told to who may not delete it: a stranger gets what
    // a bucket they cannot see gives.
    const strangerDelete = (await user.deleteBucket(id)).error as any
    assert.deepEqual([strangerDelete.statusCode, strangerDelete.message], ['404', 'Bucket not found'])
    assert.equal((await service.getBucket(id)).data!.public, true)

    // Not empty: refused; emptied: deleted, files and all.
    assert.equal(((await service.deleteBucket(id)).error as any).statusCode, '409')
    assert.deepEqual(await service.emptyBucket(id), {
      data: { message: 'Successfully emptied' },
      error: null,
    })
    assert.equal((await sql`select count(*)::int as n from storage.objects where bucket_id = ${id}`)[0].n, 0)
    assert.equal(((await user.deleteBucket(id)).error as any).statusCode, '404')
    assert.deepEqual(await service.deleteBucket(id), {
      data: { message: 'Successfully deleted' },
      error: null,
    })
    assert.equal((await service.getBucket(id)).data, null)
  } finally {
    await asStorage(sql, async (tx) => {
      await tx`delete from storage.objects where bucket_id like ${id + '%'}`
      await tx`delete from storage.buckets where id like ${id + '%'}`
    })
  }
})

test('storage objects: user metadata, byte ranges and conditional requests', async () => {
  const buckets = await makeBuckets('st-http')
  try {
    const A = await createUser({ prefix: 'st-http' })
    const a = clientAs(A.token).storage.from(buckets.priv)
    const key = `${A.id}/data.txt`
    const form = await a.upload(key, new Blob(['0123456789'], { type: 'text/plain' }), {
      metadata: { label: 'ten digits' },
    })
    assert.equal(form.error, null)
    assert.deepEqual((await a.info(key)).data!.metadata, { label: 'ten digits' })
    const raw = await a.upload(`${A.id}/raw.txt`, 'raw', { contentType: 'text/plain', metadata: { n: 1 } })
    assert.equal(raw.error, null)
    assert.deepEqual((await a.info(`${A.id}/raw.txt`)).data!.metadata, { n: 1 })
    const bad = await fetch(`${STORAGE}/object/${buckets.priv}/${A.id}/bad.txt`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${A.token}`,
        'content-type': 'text/plain',
        'x-metadata': btoa('[1,2]'),
      },
      body: 'x',
    })
    assert.deepEqual([bad.status, (await bad.json()).statusCode], [400, '400'])

    const url = `${STORAGE}/object/authenticated/${buckets.priv}/${key}`
    const auth = { authorization: `Bearer ${A.token}` }
    const part = await fetch(url, { headers: { ...auth, range: 'bytes=2-5' } })
    assert.deepEqual([part.status, part.headers.get('content-range'), await part.text()], [
      206,
      'bytes 2-5/10',
      '2345',
    ])
    const tail = await fetch(url, { headers: { ...auth, range: 'bytes=-3' } })
    assert.deepEqual([tail.status, await tail.text()], [206, '789'])
    const open = await fetch(url, { headers: { ...auth, range: 'bytes=7-' } })
    assert.deepEqual([open.status, await open.text()], [206, '789'])
    const beyond = await fetch(url, { headers: { ...auth, range: 'bytes=50-60' } })
    assert.deepEqual([beyond.status, beyond.headers.get('content-range')], [416, 'bytes */10'])
    await beyond.body?.cancel()

    const whole = await fetch(url, { headers: auth })
    const etag = whole.headers.get('etag')!
    assert.equal(await whole.text(), '0123456789')
    const cached = await fetch(url, { headers: { ...auth, 'if-none-match': etag } })
    assert.deepEqual([cached.status, await cached.text()], [304, ''])
    const changed = await fetch(url, { headers: { ...auth, 'if-none-match': '"other"' } })
    assert.deepEqual([changed.status, await changed.text()], [200, '0123456789'])
    // Never for someone who may not read it.
    const B = await createUser({ prefix: 'st-http-b' })
    const theirs = await fetch(url, { headers: { authorization: `Bearer ${B.token}`, range: 'bytes=0-1' } })
    assert.equal(theirs.status, 404)
    await theirs.body?.cancel()
  } finally {
    await buckets.cleanup()
  }
})
