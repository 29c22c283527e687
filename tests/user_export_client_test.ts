// The export and account deletion as a supabase-js app meets them (issue 39, parts 4, 7, 9):
// functions.invoke hands the ZIP over as a Blob byte-equal to a plain fetch (a type supabase-js
// reads as text would corrupt it); the avatar uploaded with supabase-js comes with the export
// and goes with the account; a second DELETE with the same session is 401 (the account stopped
// working at the first), read through error.context; the client then signs out itself.
import { strict as assert } from 'node:assert'
import { FunctionsHttpError } from '@supabase/supabase-js'
import { configure, Uint8ArrayReader, Uint8ArrayWriter, ZipReader } from '@zip.js/zip.js'
import { adminClient, appClient, freshEmail, resetAuthRateLimits } from './_auth.ts'
import { apiFetch, sql, test } from './_helpers.ts'
import { png } from './_storage.ts'

configure({ useWebWorkers: false })

const PASSWORD = 'avatar export password'

async function unzip(bytes: Uint8Array) {
  const reader = new ZipReader(new Uint8ArrayReader(bytes))
  const files = new Map<string, Uint8Array>()
  for (const entry of await reader.getEntries()) {
    if (!entry.directory) files.set(entry.filename, await entry.getData!(new Uint8ArrayWriter()))
  }
  await reader.close()
  return files
}

/** A ZIP's files, export.json without its time stamp (two exports differ only there). */
async function contents(bytes: Uint8Array) {
  const files = await unzip(bytes)
  const doc = JSON.parse(new TextDecoder().decode(files.get('export.json')))
  files.delete('export.json')
  return { doc: { ...doc, exported_at: undefined }, files }
}

async function signedInUser(prefix: string) {
  await resetAuthRateLimits()
  const email = freshEmail(prefix)
  const { data, error } = await adminClient().auth.admin.createUser({ email, password: PASSWORD, email_confirm: true })
  assert.equal(error, null)
  const client = appClient()
  assert.equal((await client.auth.signInWithPassword({ email, password: PASSWORD })).error, null)
  const token = (await client.auth.getSession()).data.session!.access_token
  return { client, id: data.user!.id, token }
}

test('user export through functions.invoke: a Blob byte-equal in content to a plain fetch, avatar included', async () => {
  const { client, id, token } = await signedInUser('exp-invoke')
  const avatar = png(24, 24)
  const key = `${id}/avatar.png`
  const uploaded = await client.storage.from('avatars').upload(key, new Blob([avatar as Uint8Array<ArrayBuffer>], { type: 'image/png' }))
  assert.equal(uploaded.error, null)

  const invoked = await client.functions.invoke('api/user/export', { method: 'GET' })
  assert.equal(invoked.error, null)
  assert.ok(invoked.data instanceof Blob, `functions.invoke gave a ${typeof invoked.data}, not a Blob`)
  assert.match(invoked.response!.headers.get('content-disposition') ?? '', /^attachment; filename="export-\d{4}-\d{2}-\d{2}\.zip"$/)
  const viaInvoke = new Uint8Array(await invoked.data.arrayBuffer())

  const res = await apiFetch('/api/user/export', { headers: { authorization: `Bearer ${token}`, origin: 'http://localhost:3000' } })
  assert.equal(res.status, 200)
  assert.match(res.headers.get('access-control-expose-headers') ?? '', /content-disposition/i)
  const viaFetch = new Uint8Array(await res.arrayBuffer())

  const [a, b] = [await contents(viaInvoke), await contents(viaFetch)]
  assert.deepEqual(a.doc, b.doc)
  assert.deepEqual([...a.files.keys()].sort(), [...b.files.keys()].sort())
  for (const [name, bytes] of a.files) assert.deepEqual(bytes, b.files.get(name), name)

  // The avatar: listed in the document and stored in the archive as uploaded.
  const path = `media/avatars/${key}`
  assert.deepEqual(a.doc.avatars, [path])
  assert.deepEqual(a.doc.media.filter((m: any) => m.kind === 'avatar'), [
    { path, bucket: 'avatars', object: key, kind: 'avatar' },
  ])
  assert.deepEqual(a.files.get(path), avatar)
  assert.match(new TextDecoder().decode(a.files.get('README.txt')), /an avatar image you uploaded/)
})

test('user account deletion through supabase-js: the avatar goes; a second DELETE is 401 in error.context; the client signs out itself', async () => {
  const { client, id } = await signedInUser('del-invoke')
  const key = `${id}/avatar.png`
  const blob = new Blob([png(16, 16) as Uint8Array<ArrayBuffer>], { type: 'image/png' })
  assert.equal((await client.storage.from('avatars').upload(key, blob)).error, null)
  const publicUrl = client.storage.from('avatars').getPublicUrl(key).data.publicUrl
  assert.equal((await client.from('profiles').update({ avatar_url: publicUrl }).eq('id', id)).error, null)

  const first = await client.functions.invoke('api/user/account', { method: 'DELETE', body: { confirm: 'DELETE' } })
  assert.equal(first.error, null, String(first.error))
  assert.equal(first.data.deletion.steps.storage, true)
  const left = await sql`select name from storage.objects where bucket_id = 'avatars' and name like ${id + '/%'}`
  assert.deepEqual(left.map((r) => r.name), [])
  const served = await fetch(publicUrl)
  await served.body?.cancel()
  assert.equal(served.status, 404)

  // The same session again: the account stopped working at the first call.
  const second = await client.functions.invoke('api/user/account', { method: 'DELETE', body: { confirm: 'DELETE' } })
  assert.ok(second.error instanceof FunctionsHttpError)
  const reply = second.error.context as Response
  assert.equal(reply.status, 401)
  assert.equal(typeof (await reply.json()).error, 'string')

  // The API document says so.
  const spec = await (await apiFetch('/api/openapi.json')).json()
  const described = spec.paths['/api/user/account'].delete.description as string
  assert.match(described, /second call with the same session is 401/)
  assert.doesNotMatch(described, /answers how the first stands/)

  // supabase-js still holds the session until the app signs out; signOut() clears it without error.
  assert.ok((await client.auth.getSession()).data.session)
  assert.equal((await client.auth.signOut()).error, null)
  assert.equal((await client.auth.getSession()).data.session, null)
})
