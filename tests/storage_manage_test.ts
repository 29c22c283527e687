// move, copy, info and exists through supabase-js under the buckets' policies (a stranger is
// refused), and the list options storage-js sends (limit, offset, sortBy, search; folders).
import { strict as assert } from 'node:assert'
import { clientAs, createUser, sql, test } from './_helpers.ts'
import { makeBuckets } from './_storage.ts'

const text = (s: string) => new Blob([s], { type: 'text/plain' })
const rowOf = async (bucket: string, name: string) =>
  (await sql`select id, owner_id from storage.objects where bucket_id = ${bucket} and name = ${name}`)[0]

test("storage move and copy: the caller's policies decide, files follow", async () => {
  const buckets = await makeBuckets('st-move')
  try {
    const A = await createUser({ prefix: 'st-move-a' })
    const B = await createUser({ prefix: 'st-move-b' })
    const a = clientAs(A.token).storage.from(buckets.priv)
    const b = clientAs(B.token).storage.from(buckets.priv)
    const src = `${A.id}/a.txt`
    assert.equal((await a.upload(src, text('alpha'))).error, null)
    assert.equal((await b.upload(`${B.id}/b.txt`, text('bravo'))).error, null)
    const id = (await rowOf(buckets.priv, src)).id

    // move: the same row under its new name, the file with it.
    const moved = await a.move(src, `${A.id}/sub/moved.txt`)
    assert.equal(moved.error, null)
    assert.equal(moved.data!.message, 'Successfully moved')
    assert.equal((await rowOf(buckets.priv, `${A.id}/sub/moved.txt`)).id, id)
    assert.equal(await rowOf(buckets.priv, src), undefined)
    assert.equal(await (await a.download(`${A.id}/sub/moved.txt`)).data!.text(), 'alpha')
    assert.equal((await a.download(src)).data, null)

    // A stranger can neither move it nor take it; nobody moves into another's folder or onto
    // an existing object.
    const stolen = await b.move(`${A.id}/sub/moved.txt`, `${B.id}/stolen.txt`)
    assert.equal((stolen.error as any).statusCode, '404')
    const pushed = await a.move(`${A.id}/sub/moved.txt`, `${B.id}/gift.txt`)
    assert.equal((pushed.error as any).statusCode, '403')
    assert.equal((await a.upload(`${A.id}/other.txt`, text('other'))).error, null)
    const onto = await a.move(`${A.id}/sub/moved.txt`, `${A.id}/other.txt`)
    assert.equal((onto.error as any).statusCode, '409')
    assert.equal(await (await a.download(`${A.id}/sub/moved.txt`)).data!.text(), 'alpha')
    assert.equal(await (await a.download(`${A.id}/other.txt`)).data!.text(), 'other')
    assert.equal((await b.move(`${A.id}/missing.txt`, `${A.id}/x.txt`)).error!.message, 'Object not found')

    // Into another bucket: the public one, where anyone reads it.
    const across = await a.move(`${A.id}/sub/moved.txt`, `${A.id}/shared.txt`, {
      destinationBucket: buckets.pub,
    })
    assert.equal(across.error, null)
    const pubUrl = a.getPublicUrl(`${A.id}/shared.txt`).data.publicUrl.replace(buckets.priv, buckets.pub)
    assert.equal(await (await fetch(pubUrl)).text(), 'alpha')

    // copy: a new row owned by the copier; the source stays.
    const copied = await a.copy(`${A.id}/other.txt`, `${A.id}/copies/other.txt`)
    assert.equal(copied.error, null)
    assert.equal(copied.data!.path, `${buckets.priv}/${A.id}/copies/other.txt`)
    assert.equal(await (await a.download(`${A.id}/copies/other.txt`)).data!.text(), 'other')
    assert.equal(await (await a.download(`${A.id}/other.txt`)).data!.text(), 'other')
    assert.notEqual(
      (await rowOf(buckets.priv, `${A.id}/copies/other.txt`)).id,
      (await rowOf(buckets.priv, `${A.id}/other.txt`)).id,
    )
    assert.equal(
      ((await a.copy(`${A.id}/other.txt`, `${A.id}/copies/other.txt`)).error as any).statusCode,
      '409',
    )
    assert.equal(((await b.copy(`${A.id}/other.txt`, `${B.id}/mine-now.txt`)).error as any).statusCode, '404')
    assert.equal(((await a.copy(`${A.id}/other.txt`, `${B.id}/gift.txt`)).error as any).statusCode, '403')
    // What a stranger may read (the public bucket) they may copy into their own folder.
    const pubB = clientAs(B.token).storage.from(buckets.pub)
    const fromPublic = await pubB.copy(`${A.id}/shared.txt`, `${B.id}/copied.txt`)
    assert.equal(fromPublic.error, null)
    assert.equal((await rowOf(buckets.pub, `${B.id}/copied.txt`)).owner_id, B.id)
    assert.equal(await (await pubB.download(`${B.id}/copied.txt`)).data!.text(), 'alpha')
  } finally {
    await buckets.cleanup()
  }
})

test("storage info and exists: Storage's fields, private objects only for who may read them", async () => {
  const buckets = await makeBuckets('st-info')
  try {
    const A = await createUser({ prefix: 'st-info-a' })
    const B = await createUser({ prefix: 'st-info-b' })
    const a = clientAs(A.token).storage.from(buckets.priv)
    const key = `${A.id}/info.txt`
    assert.equal((await a.upload(key, text('twelve bytes'), { cacheControl: '120' })).error, null)
    const [row] = await sql`select id, version, metadata, created_at, updated_at from storage.objects
                            where bucket_id = ${buckets.priv} and name = ${key}`

    const { data, error } = await a.info(key)
    assert.equal(error, null)
    assert.deepEqual(
      {
        ...data,
        lastModified: new Date(data!.lastModified!).toISOString(),
        createdAt: new Date(data!.createdAt!).toISOString(),
      },
      {
        id: row.id,
        name: key,
        version: row.version,
        bucketId: buckets.priv,
        size: 12,
        contentType: 'text/plain',
        cacheControl: 'max-age=120',
        etag: row.metadata.eTag,
        metadata: null,
        lastModified: row.updated_at.toISOString(),
        createdAt: row.created_at.toISOString(),
      },
    )
    const b = clientAs(B.token).storage.from(buckets.priv)
    assert.equal(((await b.info(key)).error as any).statusCode, '404')
    assert.equal((await a.info(`${A.id}/missing.txt`)).data, null)

    assert.deepEqual(await a.exists(key), { data: true, error: null })
    assert.equal((await a.exists(`${A.id}/missing.txt`)).data, false)
    assert.equal((await b.exists(key)).data, false)
    assert.equal((await clientAs().storage.from(buckets.priv).exists(key)).data, false)

    // A public bucket's objects: anyone.
    const pubKey = `${A.id}/public.txt`
    assert.equal((await clientAs(A.token).storage.from(buckets.pub).upload(pubKey, text('hi'))).error, null)
    const anon = clientAs().storage.from(buckets.pub)
    assert.equal((await anon.exists(pubKey)).data, true)
    assert.equal((await anon.info(pubKey)).data!.size, 2)
    assert.equal((await clientAs().storage.from('no-such-bucket').exists('x.txt')).data, false)
  } finally {
    await buckets.cleanup()
  }
})

test('storage list: limit, offset, sortBy and search as storage-js sends them; folders as Storage returns them', async () => {
  const buckets = await makeBuckets('st-list')
  try {
    const A = await createUser({ prefix: 'st-list-a' })
    const a = clientAs(A.token).storage.from(buckets.priv)
    for (const n of ['b.txt', 'a.txt', 'docs/one.txt', 'c.txt', 'docs/two.txt', 'pics/x.png']) {
      assert.equal((await a.upload(`${A.id}/${n}`, text(n))).error, null)
      await new Promise((r) => setTimeout(r, 5)) // distinct created_at
    }
    const names = async (o: Parameters<typeof a.list>[1]) => {
      const { data, error } = await a.list(A.id, o)
      assert.equal(error, null)
      return data!.map((e) => e.name)
    }
    assert.deepEqual(await names(undefined), ['a.txt', 'b.txt', 'c.txt', 'docs', 'pics'])
    assert.deepEqual(await names({ limit: 2 }), ['a.txt', 'b.txt'])
    assert.deepEqual(await names({ limit: 2, offset: 2 }), ['c.txt', 'docs'])
    assert.deepEqual(await names({ sortBy: { column: 'name', order: 'desc' } }), [
      'pics',
      'docs',
      'c.txt',
      'b.txt',
      'a.txt',
    ])
    // Folders have no dates: they sort as nulls do (last ascending, first descending).
    assert.deepEqual(await names({ sortBy: { column: 'created_at', order: 'asc' } }), [
      'b.txt',
      'a.txt',
      'c.txt',
      'docs',
      'pics',
    ])
    assert.deepEqual(await names({ sortBy: { column: 'created_at', order: 'desc' } }), [
      'docs',
      'pics',
      'c.txt',
      'a.txt',
      'b.txt',
    ])
    assert.deepEqual(await names({ search: 'd' }), ['docs'])
    assert.deepEqual(await names({ search: 'zzz' }), [])
    const { data } = await a.list(A.id, { search: 'docs' })
    assert.deepEqual(data, [{
      name: 'docs',
      id: null,
      updated_at: null,
      created_at: null,
      last_accessed_at: null,
      metadata: null,
    }])
    const file = (await a.list(`${A.id}/docs`)).data!
    assert.deepEqual(file.map((e) => e.name), ['one.txt', 'two.txt'])
    assert.equal(typeof file[0].id, 'string')
    assert.equal(file[0].metadata.mimetype, 'text/plain')
    // Someone else sees nothing of it.
    const B = await createUser({ prefix: 'st-list-b' })
    assert.deepEqual((await clientAs(B.token).storage.from(buckets.priv).list(A.id)).data, [])
  } finally {
    await buckets.cleanup()
  }
})

test('storage: what is not served locally answers 501 with the reason (docs/local_stack.md)', async () => {
  const A = await createUser({ prefix: 'st-501' })
  const storage = clientAs(A.token).storage
  const v2 = await storage.from('any-bucket').listV2({ prefix: '' })
  assert.equal((v2.error as any).statusCode, '501')
  assert.match(v2.error!.message, /listV2.*not supported locally/)
  const STORAGE = `${Deno.env.get('SUPABASE_URL')}/storage/v1`
  for (
    const [path, reason] of [
      ['/upload/resumable/any-bucket', /resumable \(TUS\) uploads/],
      ['/object/upload/resumable', /resumable \(TUS\) uploads/],
      ['/s3/any-bucket', /S3 protocol/],
      ['/iceberg/bucket', /analytics \(Iceberg\)/],
      ['/vector/ListVectorBuckets', /vector buckets/],
    ] as const
  ) {
    const res = await fetch(`${STORAGE}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${A.token}` },
    })
    const body = await res.json()
    assert.deepEqual([res.status, body.statusCode, body.error], [501, '501', 'not_implemented'], path)
    assert.match(body.message, reason, path)
  }
})
