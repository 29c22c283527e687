// Tone pack images: generated through the fake AI provider into the real local object store,
// uploaded by owners, the bucket's limits and its folder-per-user policies.
import { strict as assert } from 'node:assert'
import { encode } from 'fast-png'
import { api, API_URL, assertError, clientAs, createUser, sql, test, type TestUser } from './_helpers.ts'
import { aiMarker, aiRequests, scriptAi } from './fakes/ai_control.ts'
import { createPack } from './_tone_packs.ts'

const BUCKET = 'tone-packs'
const objectsOf = async (packId: string) =>
  (await sql`select name from storage.objects where bucket_id = ${BUCKET} and name like ${'%/' + packId + '/%'} order by name`)
    .map((r) => r.name as string)
const localUrl = (url: string) => url.replace(/^https?:\/\/[^/]+/, API_URL)

/** Width and height from a PNG's IHDR chunk, or null when the bytes are not a PNG. */
function pngSize(bytes: Uint8Array) {
  const signature = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]
  if (!signature.every((b, i) => bytes[i] === b)) return null
  if (new TextDecoder().decode(bytes.subarray(12, 16)) !== 'IHDR') return null
  const view = new DataView(bytes.buffer, bytes.byteOffset)
  return { width: view.getUint32(16), height: view.getUint32(20) }
}

const smallPng = () => encode({ width: 8, height: 8, data: new Uint8Array(8 * 8 * 3).fill(90), channels: 3 })

function upload(u: TestUser | null, packId: string, tone: string, file?: { bytes: Uint8Array; type: string; name?: string }) {
  const form = new FormData()
  if (file) form.append('file', new Blob([file.bytes as Uint8Array<ArrayBuffer>], { type: file.type }), file.name ?? 'icon')
  return fetch(`${API_URL}/functions/v1/api/tone-packs/${packId}/images/${tone}`, {
    method: 'PUT',
    headers: u ? { authorization: `Bearer ${u.token}` } : {},
    body: form,
  }).then(async (res) => ({ status: res.status, body: await res.json().catch(() => null), headers: res.headers }))
}

test('generate-images: one stored 1024x1024 PNG per tone, mapped to the pack, billed as Packs; a new one replaces the old', async () => {
  const owner = await createUser()
  const marker = aiMarker()
  const pack = await createPack(owner, { name: `Cranes ${marker}`, theme: 'watercolor' })
  const res = await api(`/api/tone-packs/${pack.id}/generate-images`, { token: owner.token, body: { tones: ['joyful', 'sad'] } })
  assert.equal(res.status, 200, JSON.stringify(res.body))
  assert.deepEqual(res.body.failed, [])
  assert.deepEqual(res.body.generated.map((g: any) => g.tone).sort(), ['joyful', 'sad'])
  for (const g of res.body.generated) {
    assert.match(g.url, new RegExp(`/storage/v1/object/public/${BUCKET}/${owner.id}/${pack.id}/${g.tone}-\\d+\\.png$`))
    assert.ok(g.cost_usd > 0)
    const image = await fetch(localUrl(g.url))
    assert.equal(image.status, 200)
    assert.equal(image.headers.get('content-type'), 'image/png')
    assert.deepEqual(pngSize(new Uint8Array(await image.arrayBuffer())), { width: 1024, height: 1024 })
  }
  const sent = await aiRequests(marker)
  assert.equal(sent.length, 2)
  for (const s of sent) {
    assert.equal(s.path, '/v1/images/generations')
    assert.equal(s.body.size, '1024x1024')
    assert.match(s.body.prompt, /watercolor/)
  }
  assert.deepEqual(sent.map((s) => s.body.prompt.match(/feeling "(\w+)"/)?.[1]).sort(), ['joyful', 'sad'])
  const usage = await sql`select usage_type, pack_id, image_count from public.ai_usage where user_id = ${owner.id}`
  assert.deepEqual(usage.map((u) => ({ ...u })), [
    { usage_type: 'tone_pack_image', pack_id: pack.id, image_count: 1 },
    { usage_type: 'tone_pack_image', pack_id: pack.id, image_count: 1 },
  ])
  const monthly = await api('/api/ai/usage', { token: owner.token })
  assert.equal(monthly.body.breakdown.Packs.calls, 2)

  const got = await api(`/api/tone-packs/${pack.id}`, { token: owner.token })
  assert.deepEqual(got.body.pack.images.map((i: any) => i.tone), ['joyful', 'sad'])
  const before = await objectsOf(pack.id)
  assert.equal(before.length, 2)
  await new Promise((r) => setTimeout(r, 5))
  const again = await api(`/api/tone-packs/${pack.id}/generate-images`, { token: owner.token, body: { tones: ['joyful'] } })
  assert.equal(again.status, 200)
  const after = await objectsOf(pack.id)
  assert.equal(after.length, 2, 'the replaced image is deleted')
  assert.ok(!after.includes(before.find((n) => n.includes('/joyful-'))!))
  assert.equal((await fetch(localUrl(res.body.generated.find((g: any) => g.tone === 'joyful').url))).status, 404)
})

test('generate-images: a tone that fails is reported with its reason and does not undo the others', async () => {
  const owner = await createUser()
  const marker = aiMarker()
  const pack = await createPack(owner, { name: `Mixed ${marker}` })
  // The first request the provider sees fails; the rest succeed (the last reply repeats).
  await scriptAi(marker, [{ status: 500, error: { message: 'boom', type: 'server_error' } }, { image: 'png' }])
  const res = await api(`/api/tone-packs/${pack.id}/generate-images`, { token: owner.token, body: { tones: ['calm', 'tired', 'angry'] } })
  assert.equal(res.status, 200, JSON.stringify(res.body))
  assert.equal(res.body.generated.length, 2)
  assert.equal(res.body.failed.length, 1)
  assert.match(res.body.failed[0].error, /provider/i)
  const failedTone = res.body.failed[0].tone
  const names = await objectsOf(pack.id)
  assert.equal(names.length, 2)
  assert.ok(!names.some((n) => n.includes(`/${failedTone}-`)), 'nothing stored for the failed tone')
  const mapped = await sql`select tone from public.tone_pack_images where pack_id = ${pack.id} order by tone`
  assert.deepEqual(mapped.map((m) => m.tone), res.body.generated.map((g: any) => g.tone).sort())

  // An unusable image is a failure too.
  const bad = aiMarker()
  const other = await createPack(owner, { name: `Garbage ${bad}` })
  await scriptAi(bad, [{ image: 'garbage' }])
  const garbage = await api(`/api/tone-packs/${other.id}/generate-images`, { token: owner.token, body: { tones: ['sad'] } })
  assert.deepEqual(garbage.body.generated, [])
  assert.match(garbage.body.failed[0].error, /unusable/)
  assert.deepEqual(await objectsOf(other.id), [])
})

test('generate-images: owner only (a viewer 403, a stranger 404), bad tones 400, before the provider hears of it', async () => {
  const [owner, viewer, stranger] = await Promise.all([createUser(), createUser(), createUser()])
  const marker = aiMarker()
  const pack = await createPack(owner, { name: `Guarded ${marker}`, is_public: true })
  const privatePack = await createPack(owner, { name: `Hidden ${marker}` })
  assertError(await api(`/api/tone-packs/${pack.id}/generate-images`, { token: viewer.token, body: { tones: ['sad'] } }), 403)
  assertError(await api(`/api/tone-packs/${privatePack.id}/generate-images`, { token: stranger.token, body: { tones: ['sad'] } }), 404)
  for (const [body, field] of [
    [{ tones: [] }, 'tones'],
    [{ tones: ['happy'] }, 'tones.0'],
    [{ tones: ['sad', 'sad'] }, 'tones'],
    [{ tones: 'sad' }, 'tones'],
    [{}, 'tones'],
    [{ tones: ['sad'], quality: 'ultra' }, 'quality'],
    [{ tones: ['sad'], size: '512x512' }, 'size'],
  ] as const) {
    assertError(await api(`/api/tone-packs/${pack.id}/generate-images`, { token: owner.token, body }), 400, field)
  }
  assert.deepEqual(await aiRequests(marker), [])
  assert.deepEqual(await objectsOf(pack.id), [])
})

test('generate-images without AI_API_KEY: 503, and bad input is still 400', async () => {
  const owner = await createUser()
  const pack = await createPack(owner)
  const { app } = await import('../functions/api/app.ts')
  const saved = Deno.env.get('AI_API_KEY')
  Deno.env.delete('AI_API_KEY')
  try {
    const call = async (body: unknown) => {
      const res = await app.fetch(new Request(`http://in-process/api/tone-packs/${pack.id}/generate-images`, {
        method: 'POST',
        headers: { authorization: `Bearer ${owner.token}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }))
      return { status: res.status, body: await res.json(), headers: res.headers }
    }
    assertError(await call({ tones: ['sad'] }), 503, 'not configured')
    assertError(await call({ tones: ['nope'] }), 400, 'tones')
  } finally {
    if (saved !== undefined) Deno.env.set('AI_API_KEY', saved)
  }
})

test('PUT images/:tone: owners upload their own art (PNG, JPEG, WEBP up to 5 MB); anything else is refused, nothing stored', async () => {
  const [owner, viewer] = await Promise.all([createUser(), createUser()])
  const pack = await createPack(owner, { is_public: true })
  const png = await upload(owner, pack.id, 'hopeful', { bytes: smallPng(), type: 'image/png', name: 'mine.png' })
  assert.equal(png.status, 200, JSON.stringify(png.body))
  assert.match(png.body.image.url, new RegExp(`/${BUCKET}/${owner.id}/${pack.id}/hopeful-\\d+\\.png$`))
  assert.deepEqual(pngSize(new Uint8Array(await (await fetch(localUrl(png.body.image.url))).arrayBuffer())), { width: 8, height: 8 })

  const jpeg = new Uint8Array([0xff, 0xd8, 0xff, 0xe0, ...new Array(64).fill(1)])
  const replaced = await upload(owner, pack.id, 'hopeful', { bytes: jpeg, type: 'image/jpeg' })
  assert.equal(replaced.status, 200)
  assert.match(replaced.body.image.url, /hopeful-\d+\.jpg$/)
  assert.deepEqual((await objectsOf(pack.id)).length, 1, 'the replaced upload is deleted')

  assertError(await upload(owner, pack.id, 'hopeful', { bytes: new TextEncoder().encode('hello'), type: 'image/png' }), 400, 'file')
  const big = new Uint8Array(5 * 1024 * 1024 + 1)
  big.set(smallPng().subarray(0, 16))
  assertError(await upload(owner, pack.id, 'hopeful', { bytes: big, type: 'image/png' }), 413, 'file')
  assertError(await upload(owner, pack.id, 'hopeful'), 400, 'file')
  assertError(await upload(owner, pack.id, 'ecstatic', { bytes: smallPng(), type: 'image/png' }), 400, 'tone')
  assertError(await upload(viewer, pack.id, 'hopeful', { bytes: smallPng(), type: 'image/png' }), 403)
  assertError(await upload(null, pack.id, 'hopeful', { bytes: smallPng(), type: 'image/png' }), 401)
  assertError(await api(`/api/tone-packs/${pack.id}/images/hopeful`, { method: 'PUT', token: owner.token, body: { file: 'x' } }), 400)
  assert.equal((await objectsOf(pack.id)).length, 1)
})

test('the tone-packs bucket: 5 MB and image types only; users write only in their own folder; a pack\'s image stays', async () => {
  const [owner, other] = await Promise.all([createUser(), createUser()])
  const pack = await createPack(owner)
  const storage = (u: TestUser) => clientAs(u.token).storage.from(BUCKET)
  const ok = await storage(owner).upload(`${owner.id}/${pack.id}/calm-1.png`, smallPng(), { contentType: 'image/png' })
  assert.equal(ok.error, null)
  const intruder = await storage(other).upload(`${owner.id}/${pack.id}/calm-2.png`, smallPng(), { contentType: 'image/png' })
  assert.equal((intruder.error as any)?.statusCode, '403', 'not in someone else\'s folder')
  const text = await storage(owner).upload(`${owner.id}/notes.txt`, new TextEncoder().encode('hi'), { contentType: 'text/plain' })
  assert.equal((text.error as any)?.statusCode, '415')
  const big = await storage(owner).upload(`${owner.id}/big.png`, new Uint8Array(5 * 1024 * 1024 + 1), { contentType: 'image/png' })
  assert.equal((big.error as any)?.statusCode, '413')
  const [bucket] = await sql`select public, file_size_limit, allowed_mime_types from storage.buckets where id = ${BUCKET}`
  assert.deepEqual({ ...bucket, file_size_limit: Number(bucket.file_size_limit) }, {
    public: true, file_size_limit: 5 * 1024 * 1024, allowed_mime_types: ['image/png', 'image/jpeg', 'image/jpg', 'image/webp'],
  })

  // Clients cannot map an object themselves (the icon's address is the api's to set): the
  // object they stored is mapped through the upload endpoint. Then it is the pack's image: not
  // deletable directly (buyers keep their icons), deleted with its pack.
  const name = `${owner.id}/${pack.id}/calm-1.png`
  const elsewhere = `https://elsewhere.example/${name}`
  const direct = await clientAs(owner.token).rpc('set_tone_pack_image', {
    owner_id: owner.id, pack_id: pack.id, tone: 'calm', object_name: name, url: elsewhere,
  })
  assert.ok(direct.error, 'set_tone_pack_image is not executable by users')
  assert.equal((await sql`select count(*)::int as n from public.tone_pack_images where pack_id = ${pack.id}`)[0].n, 0)
  await storage(owner).remove([name])
  const uploaded = await upload(owner, pack.id, 'calm', { bytes: smallPng(), type: 'image/png' })
  assert.equal(uploaded.status, 200)
  const mappedName = uploaded.body.image.url.split(`/${BUCKET}/`)[1]
  await storage(owner).remove([mappedName])
  assert.deepEqual(await objectsOf(pack.id), [mappedName], 'a mapped image is not deleted directly')

  const del = await api(`/api/tone-packs/${pack.id}`, { method: 'DELETE', token: owner.token })
  assert.equal(del.body.result, 'deleted')
  assert.deepEqual(await objectsOf(pack.id), [], 'deleting the pack deletes its images')
})
