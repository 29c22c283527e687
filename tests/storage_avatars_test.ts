// The avatars bucket (issue 39, part 4), through supabase-js as a client uses it: the owner
// uploads, replaces and removes under their own folder; another user can do none of that to
// it; anyone reads it by public URL and by the render route; a file over 2 MB or of another
// type is refused; the public URL is accepted as the profile's avatar_url (REST and /api).
import { strict as assert } from 'node:assert'
import { api, API_URL, asStorage, clientAs, createUser, sql, test } from './_helpers.ts'
import { png as pngBytes } from './_storage.ts'
import { pngSize } from './_client.ts'

const png = (side: number) => new Blob([pngBytes(side, side) as Uint8Array<ArrayBuffer>], { type: 'image/png' })

async function removeAll(userId: string) {
  await asStorage(sql, (tx) => tx`delete from storage.objects where bucket_id = 'avatars' and name like ${userId + '/%'}`)
}

test('storage avatars: the bucket is public, 2 MB, PNG/JPEG/WebP', async () => {
  const [bucket] = await sql`select public, file_size_limit, allowed_mime_types from storage.buckets where id = 'avatars'`
  assert.deepEqual(
    { ...bucket, file_size_limit: Number(bucket.file_size_limit) },
    { public: true, file_size_limit: 2 * 1024 * 1024, allowed_mime_types: ['image/png', 'image/jpeg', 'image/webp'] },
  )
})

test('storage avatars: the owner writes their folder with supabase-js; anyone reads it, transforms included', async () => {
  const owner = await createUser({ prefix: 'av-owner' })
  try {
    const avatars = clientAs(owner.token).storage.from('avatars')
    const key = `${owner.id}/avatar.png`
    assert.equal((await avatars.upload(key, png(64))).error, null)
    // Replacing (upsert) and listing their own folder work too.
    assert.equal((await avatars.upload(key, png(48), { upsert: true })).error, null)
    const listed = await avatars.list(owner.id)
    assert.deepEqual(listed.data?.map((o) => o.name), ['avatar.png'])

    // Anonymous: the public URL and a transform of it.
    const anon = clientAs().storage.from('avatars')
    const url = anon.getPublicUrl(key).data.publicUrl
    assert.equal(url, `${API_URL}/storage/v1/object/public/avatars/${key}`)
    const plain = await fetch(url)
    assert.equal(plain.status, 200)
    assert.equal(plain.headers.get('content-type'), 'image/png')
    assert.deepEqual(pngSize(new Uint8Array(await plain.arrayBuffer())), [48, 48], 'the replaced one')
    const small = await fetch(anon.getPublicUrl(key, { transform: { width: 32, height: 32 } }).data.publicUrl)
    assert.equal(small.status, 200)
    assert.equal(small.headers.get('content-type'), 'image/png')
    assert.deepEqual(pngSize(new Uint8Array(await small.arrayBuffer())), [32, 32])

    // Listing the bucket names nobody: no policy shows another user's folder.
    assert.deepEqual((await anon.list(owner.id)).data ?? [], [])

    // The public URL is a valid avatar_url, through PostgREST and /api alike.
    const rest = await clientAs(owner.token).from('profiles').update({ avatar_url: url }).eq('id', owner.id)
      .select('avatar_url').single()
    assert.deepEqual([rest.error, rest.data?.avatar_url], [null, url])
    const patched = await api('/api/user/profile', { method: 'PUT', token: owner.token, body: { avatar_url: url } })
    assert.equal(patched.status, 200, JSON.stringify(patched.body))
    assert.equal(patched.body.avatar_url, url)

    assert.equal((await avatars.remove([key])).error, null)
    assert.equal((await fetch(url)).status, 404)
  } finally {
    await removeAll(owner.id)
  }
})

test("storage avatars: another user can neither write into nor replace or remove someone's avatar", async () => {
  const [owner, other] = await Promise.all([createUser({ prefix: 'av-own' }), createUser({ prefix: 'av-other' })])
  try {
    const key = `${owner.id}/avatar.png`
    assert.equal((await clientAs(owner.token).storage.from('avatars').upload(key, png(16))).error, null)
    const theirs = clientAs(other.token).storage.from('avatars')
    const planted = await theirs.upload(`${owner.id}/planted.png`, png(16))
    assert.equal((planted.error as any)?.statusCode, '403', 'uploading into another folder')
    const replaced = await theirs.upload(key, png(8), { upsert: true })
    assert.ok(replaced.error, 'upsert over another user\'s avatar')
    await theirs.remove([key]) // removes nothing it may not see
    const unnamed = await theirs.upload('loose.png', png(16))
    assert.equal((unnamed.error as any)?.statusCode, '403', 'outside any user folder')
    const anonymous = await clientAs().storage.from('avatars').upload(`${owner.id}/anon.png`, png(16))
    assert.ok(anonymous.error, 'anonymous upload')

    const names = await sql`select name from storage.objects where bucket_id = 'avatars' and name like ${owner.id + '/%'}`
    assert.deepEqual(names.map((r) => r.name), [key])
    const served = await fetch(clientAs().storage.from('avatars').getPublicUrl(key).data.publicUrl)
    assert.deepEqual(pngSize(new Uint8Array(await served.arrayBuffer())), [16, 16])
  } finally {
    await removeAll(owner.id)
    await removeAll(other.id)
  }
})

test('storage avatars: over 2 MB or not PNG/JPEG/WebP is refused', async () => {
  const owner = await createUser({ prefix: 'av-limits' })
  try {
    const avatars = clientAs(owner.token).storage.from('avatars')
    const big = new Blob([new Uint8Array(2 * 1024 * 1024 + 1)], { type: 'image/png' })
    const tooBig = await avatars.upload(`${owner.id}/big.png`, big)
    assert.equal((tooBig.error as any)?.statusCode, '413')
    for (const type of ['image/gif', 'image/svg+xml', 'text/html']) {
      const wrong = await avatars.upload(`${owner.id}/wrong`, new Blob(['<svg/>'], { type }))
      assert.equal((wrong.error as any)?.statusCode, '415', type)
    }
    const [{ n }] = await sql`select count(*)::int as n from storage.objects where bucket_id = 'avatars' and name like ${owner.id + '/%'}`
    assert.equal(n, 0)
  } finally {
    await removeAll(owner.id)
  }
})
