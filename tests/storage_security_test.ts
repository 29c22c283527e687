// Storage refusals that follow hosted Storage (security review, issue 34): a signed URL's
// expiresIn past what a JWT and a date can hold, emptying a bucket without the service role,
// and a token of an account being deleted, each through supabase-js's storage client.
import { strict as assert } from 'node:assert'
import { ANON_KEY, clientAs, createUser, SERVICE_ROLE_KEY, sql, test } from './_helpers.ts'
import { makeBuckets, STORAGE } from './_storage.ts'

const text = (s: string) => new Blob([s], { type: 'text/plain' })

test('storage signed URLs: an expiresIn no date can hold is a 400 InvalidParameter, as hosted Storage answers', async () => {
  const buckets = await makeBuckets('st-sec-exp')
  try {
    const A = await createUser({ prefix: 'st-sec-exp' })
    const storage = clientAs(A.token).storage.from(buckets.priv)
    const key = `${A.id}/note.txt`
    assert.equal((await storage.upload(key, text('hello'))).error, null)

    for (const expiresIn of [1e300, Number.MAX_SAFE_INTEGER, 9e12]) {
      const one = await storage.createSignedUrl(key, expiresIn)
      const error = one.error as any
      assert.deepEqual(
        [error?.statusCode, error?.message],
        ['400', 'Invalid Parameter expiresIn'],
        `createSignedUrl(${expiresIn})`,
      )
      const many = await storage.createSignedUrls([key], expiresIn)
      assert.equal((many.error as any)?.statusCode, '400', `createSignedUrls(${expiresIn})`)
    }
    const raw = await fetch(`${STORAGE}/object/sign/${buckets.priv}/${key}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${A.token}`, apikey: ANON_KEY, 'content-type': 'application/json' },
      body: '{"expiresIn": 1e300}',
    })
    assert.deepEqual([raw.status, await raw.json()], [400, {
      statusCode: '400',
      error: 'InvalidParameter',
      message: 'Invalid Parameter expiresIn',
    }])
    // A long one that a date holds still works, and its Expires header is a date.
    const decade = await storage.createSignedUrl(key, 10 * 365 * 24 * 3600)
    assert.equal(decade.error, null)
    const res = await fetch(decade.data!.signedUrl)
    assert.equal(await res.text(), 'hello')
    assert.ok(!Number.isNaN(Date.parse(res.headers.get('expires') ?? '')), res.headers.get('expires') ?? '')
  } finally {
    await buckets.cleanup()
  }
})

test('storage emptyBucket: service role only, as hosted Storage; a user is refused (403) and nothing is deleted', async () => {
  const buckets = await makeBuckets('st-sec-empty')
  try {
    const A = await createUser({ prefix: 'st-sec-empty' })
    const mine = clientAs(A.token).storage
    assert.equal((await mine.from(buckets.pub).upload(`${A.id}/a.txt`, text('a'))).error, null)

    for (const who of [mine, clientAs().storage]) {
      const { data, error } = await who.emptyBucket(buckets.pub)
      assert.equal(data, null)
      assert.deepEqual(
        [(error as any)?.statusCode, error?.message],
        ['403', 'Access denied: Invalid role'],
      )
    }
    const left = await sql`select name from storage.objects where bucket_id = ${buckets.pub}`
    assert.deepEqual(left.map((r) => r.name), [`${A.id}/a.txt`])

    const service = clientAs(SERVICE_ROLE_KEY).storage
    assert.equal((await service.emptyBucket(buckets.pub)).error, null)
    assert.equal((await sql`select count(*)::int as n from storage.objects where bucket_id = ${buckets.pub}`)[0].n, 0)
  } finally {
    await buckets.cleanup()
  }
})

test('storage refuses (401) a token of an account being deleted, reads and lists included, as /api and PostgREST do', async () => {
  const buckets = await makeBuckets('st-sec-del')
  try {
    const A = await createUser({ prefix: 'st-sec-del' })
    const storage = clientAs(A.token).storage
    assert.equal((await storage.from(buckets.priv).upload(`${A.id}/a.txt`, text('a'))).error, null)
    assert.equal((await storage.from(buckets.priv).list(A.id)).data?.length, 1)

    const asked = await clientAs(A.token).rpc('delete_my_account', { confirm: 'DELETE' })
    assert.equal(asked.error, null, JSON.stringify(asked.error))

    const listed = await storage.from(buckets.priv).list(A.id)
    assert.equal(listed.data, null)
    assert.equal((listed.error as any)?.statusCode, '401')
    assert.match(listed.error!.message, /deleted/)
    const downloaded = await storage.from(buckets.priv).download(`${A.id}/a.txt`)
    assert.equal((downloaded.error as any)?.originalError?.status, 401) // storage-js keeps the Response
    const buckets_ = await storage.listBuckets()
    assert.equal((buckets_.error as any)?.statusCode, '401')
  } finally {
    await buckets.cleanup()
  }
})
