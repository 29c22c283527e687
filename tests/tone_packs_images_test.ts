// Tone pack images: generated through the fake AI provider into the real local object store,
// uploaded by owners, the bucket's limits (written by the api alone), what buyers keep, the
// daily cap on generated images.
import { strict as assert } from 'node:assert'
import { encode } from 'fast-png'
import { createClient } from '@supabase/supabase-js'
import { TONES } from '../functions/_shared/tone.ts'
import {
  ANON_KEY,
  api,
  API_URL,
  apiFetch,
  assertError,
  clientAs,
  createUser,
  postEntry,
  SERVICE_ROLE_KEY,
  sql,
  test,
  type TestUser,
} from './_helpers.ts'
import { aiMarker, aiRequests, scriptAi } from './fakes/ai_control.ts'
import { createPack } from './_tone_packs.ts'
import { jpegDeclaring, plainJpeg, pngDeclaring, webpWithCanvas } from './_workout_photos.ts'

const BUCKET = 'tone-packs'
const ALL_TONES = [...TONES]
const objectsOf = async (packId: string) =>
  (await sql`select name from storage.objects where bucket_id = ${BUCKET} and name like ${
    '%/' + packId + '/%'
  } order by name`)
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

function upload(
  u: TestUser | null,
  packId: string,
  tone: string,
  file?: { bytes: Uint8Array; type: string; name?: string },
) {
  const form = new FormData()
  if (file) {
    form.append(
      'file',
      new Blob([file.bytes as Uint8Array<ArrayBuffer>], { type: file.type }),
      file.name ?? 'icon',
    )
  }
  return apiFetch(`/api/tone-packs/${packId}/images/${tone}`, {
    method: 'PUT',
    headers: u ? { authorization: `Bearer ${u.token}` } : {},
    body: form,
  }).then(async (res) => ({
    status: res.status,
    body: await res.json().catch(() => null),
    headers: res.headers,
  }))
}

test('generate-images: one stored 1024x1024 PNG per tone, mapped to the pack, billed as Packs; a new one replaces the old', async () => {
  const owner = await createUser()
  const marker = aiMarker()
  const pack = await createPack(owner, { name: `Cranes ${marker}`, theme: 'watercolor' })
  const res = await api(`/api/tone-packs/${pack.id}/generate-images`, {
    token: owner.token,
    body: { tones: ['joyful', 'sad'] },
  })
  assert.equal(res.status, 200, JSON.stringify(res.body))
  assert.deepEqual(res.body.failed, [])
  assert.deepEqual(res.body.generated.map((g: any) => g.tone).sort(), ['joyful', 'sad'])
  for (const g of res.body.generated) {
    assert.match(
      g.url,
      new RegExp(
        `/storage/v1/object/public/${BUCKET}/${owner.id}/${pack.id}/${g.tone}-\\d+-[0-9a-f]{16}\\.png$`,
      ),
    )
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
  const usage =
    await sql`select usage_type, pack_id, image_count from public.ai_usage where user_id = ${owner.id}`
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
  const again = await api(`/api/tone-packs/${pack.id}/generate-images`, {
    token: owner.token,
    body: { tones: ['joyful'] },
  })
  assert.equal(again.status, 200)
  const after = await objectsOf(pack.id)
  assert.equal(after.length, 2, 'the replaced image is deleted')
  assert.ok(!after.includes(before.find((n) => n.includes('/joyful-'))!))
  assert.equal(
    (await fetch(localUrl(res.body.generated.find((g: any) => g.tone === 'joyful').url))).status,
    404,
  )
})

test('generate-images: a tone that fails is reported with its reason and does not undo the others', async () => {
  const owner = await createUser()
  const marker = aiMarker()
  const pack = await createPack(owner, { name: `Mixed ${marker}` })
  // The first request the provider sees fails; the rest succeed (the last reply repeats).
  await scriptAi(marker, [{ status: 500, error: { message: 'boom', type: 'server_error' } }, {
    image: 'png',
  }])
  const res = await api(`/api/tone-packs/${pack.id}/generate-images`, {
    token: owner.token,
    body: { tones: ['calm', 'tired', 'angry'] },
  })
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
  const garbage = await api(`/api/tone-packs/${other.id}/generate-images`, {
    token: owner.token,
    body: { tones: ['sad'] },
  })
  assert.deepEqual(garbage.body.generated, [])
  assert.match(garbage.body.failed[0].error, /unusable/)
  assert.deepEqual(await objectsOf(other.id), [])
})

test('generate-images: owner only (a viewer 403, a stranger 404), bad tones 400, before the provider hears of it', async () => {
  const [owner, viewer, stranger] = await Promise.all([createUser(), createUser(), createUser()])
  const marker = aiMarker()
  const pack = await createPack(owner, { name: `Guarded ${marker}`, is_public: true })
  const privatePack = await createPack(owner, { name: `Hidden ${marker}` })
  assertError(
    await api(`/api/tone-packs/${pack.id}/generate-images`, {
      token: viewer.token,
      body: { tones: ['sad'] },
    }),
    403,
  )
  assertError(
    await api(`/api/tone-packs/${privatePack.id}/generate-images`, {
      token: stranger.token,
      body: { tones: ['sad'] },
    }),
    404,
  )
  for (
    const [body, field] of [
      [{ tones: [] }, 'tones'],
      [{ tones: ['happy'] }, 'tones.0'],
      [{ tones: ['sad', 'sad'] }, 'tones'],
      [{ tones: 'sad' }, 'tones'],
      [{}, 'tones'],
      [{ tones: ['sad'], quality: 'ultra' }, 'quality'],
      [{ tones: ['sad'], size: '512x512' }, 'size'],
    ] as const
  ) {
    assertError(
      await api(`/api/tone-packs/${pack.id}/generate-images`, { token: owner.token, body }),
      400,
      field,
    )
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
      const res = await app.fetch(
        new Request(`http://in-process/api/tone-packs/${pack.id}/generate-images`, {
          method: 'POST',
          headers: { authorization: `Bearer ${owner.token}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        }),
      )
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
  const png = await upload(owner, pack.id, 'hopeful', {
    bytes: smallPng(),
    type: 'image/png',
    name: 'mine.png',
  })
  assert.equal(png.status, 200, JSON.stringify(png.body))
  assert.match(
    png.body.image.url,
    new RegExp(`/${BUCKET}/${owner.id}/${pack.id}/hopeful-\\d+-[0-9a-f]{16}\\.png$`),
  )
  assert.deepEqual(pngSize(new Uint8Array(await (await fetch(localUrl(png.body.image.url))).arrayBuffer())), {
    width: 8,
    height: 8,
  })

  const jpeg = plainJpeg()
  const replaced = await upload(owner, pack.id, 'hopeful', { bytes: jpeg, type: 'image/jpeg' })
  assert.equal(replaced.status, 200)
  assert.match(replaced.body.image.url, /hopeful-\d+-[0-9a-f]{16}\.jpg$/)
  assert.deepEqual((await objectsOf(pack.id)).length, 1, 'the replaced upload is deleted')

  assertError(
    await upload(owner, pack.id, 'hopeful', { bytes: new TextEncoder().encode('hello'), type: 'image/png' }),
    400,
    'file',
  )
  const big = new Uint8Array(5 * 1024 * 1024 + 1)
  big.set(smallPng().subarray(0, 16))
  assertError(await upload(owner, pack.id, 'hopeful', { bytes: big, type: 'image/png' }), 413, 'file')
  assertError(await upload(owner, pack.id, 'hopeful'), 400, 'file')
  assertError(await upload(owner, pack.id, 'ecstatic', { bytes: smallPng(), type: 'image/png' }), 400, 'tone')
  assertError(await upload(viewer, pack.id, 'hopeful', { bytes: smallPng(), type: 'image/png' }), 403)
  assertError(await upload(null, pack.id, 'hopeful', { bytes: smallPng(), type: 'image/png' }), 401)
  assertError(
    await api(`/api/tone-packs/${pack.id}/images/hopeful`, {
      method: 'PUT',
      token: owner.token,
      body: { file: 'x' },
    }),
    400,
  )
  assert.equal((await objectsOf(pack.id)).length, 1)
})

test('PUT images/:tone: an image whose headers ask for more than 2048x2048 pixels is a 400 naming file, before anything decodes it', async () => {
  const owner = await createUser()
  const pack = await createPack(owner, { is_public: true })
  const huge = pngDeclaring(30000, 30000) // 900 megapixels in a few hundred bytes
  assert.ok(huge.length < 1000, `${huge.length} bytes`)
  for (
    const [bytes, type, why] of [
      [huge, 'image/png', /at most 4\.2 megapixels \(this one is 30000x30000\)/],
      [jpegDeclaring(2100, 2000), 'image/jpeg', /megapixels/],
      [pngDeclaring(4096, 16), 'image/png', /at most 2048 pixels a side/],
      [webpWithCanvas(5000, 5000), 'image/webp', /megapixels/],
    ] as const
  ) {
    const res = await upload(owner, pack.id, 'calm', { bytes, type })
    assertError(res, 400, 'file')
    assert.match(res.body.error, why)
  }
  assert.deepEqual(await objectsOf(pack.id), [], 'nothing stored')
  assert.equal(
    (await sql`select count(*)::int as n from public.tone_pack_images where pack_id = ${pack.id}`)[0].n,
    0,
  )
  // The size SPEC gives generated images, and uploaded art up to 2048 a side, are taken.
  const square = encode({ width: 2048, height: 2048, data: new Uint8Array(2048 * 2048 * 3), channels: 3 })
  assert.equal((await upload(owner, pack.id, 'calm', { bytes: square, type: 'image/png' })).status, 200)
})

test('generate-images: a generated image whose headers ask for too many pixels is not stored', async () => {
  const owner = await createUser()
  const marker = aiMarker()
  const pack = await createPack(owner, { name: `Huge ${marker}` })
  await scriptAi(marker, [{ image: 'huge' }])
  const res = await api(`/api/tone-packs/${pack.id}/generate-images`, {
    token: owner.token,
    body: { tones: ['sad'] },
  })
  assert.equal(res.status, 200, JSON.stringify(res.body))
  assert.deepEqual(res.body.generated, [])
  assert.match(res.body.failed[0].error, /unusable: at most 4\.2 megapixels \(this one is 30000x30000\)/)
  assert.deepEqual(await objectsOf(pack.id), [])
})

test("the tone-packs bucket: 5 MB and image types only, written by the api alone; a pack's image stays until its pack goes", async () => {
  const [owner, other] = await Promise.all([createUser(), createUser()])
  const pack = await createPack(owner)
  const storage = (u: TestUser) => clientAs(u.token).storage.from(BUCKET)
  for (
    const [who, name] of [[owner, `${owner.id}/${pack.id}/calm-1.png`], [
      other,
      `${owner.id}/${pack.id}/calm-2.png`,
    ], [owner, `${owner.id}/loose.png`]] as const
  ) {
    const direct = await storage(who).upload(name, smallPng(), { contentType: 'image/png' })
    assert.equal((direct.error as any)?.statusCode, '403', `${name}: clients do not write into the bucket`)
  }
  const [bucket] =
    await sql`select public, file_size_limit, allowed_mime_types from storage.buckets where id = ${BUCKET}`
  assert.deepEqual({ ...bucket, file_size_limit: Number(bucket.file_size_limit) }, {
    public: true,
    file_size_limit: 5 * 1024 * 1024,
    allowed_mime_types: ['image/png', 'image/jpeg', 'image/jpg', 'image/webp'],
  })
  assert.deepEqual(await objectsOf(pack.id), [])

  // Clients cannot map an object themselves (the icon's address is the api's to set): images
  // arrive through the upload endpoint. A mapped image is not deletable directly (buyers keep
  // their icons); it goes with its pack.
  const name = `${owner.id}/${pack.id}/calm-1.png`
  const direct = await clientAs(owner.token).rpc('set_tone_pack_image', {
    owner_id: owner.id,
    pack_id: pack.id,
    tone: 'calm',
    object_name: name,
    url: `https://elsewhere.example/${name}`,
  })
  assert.ok(direct.error, 'set_tone_pack_image is not executable by users')
  assert.equal(
    (await sql`select count(*)::int as n from public.tone_pack_images where pack_id = ${pack.id}`)[0].n,
    0,
  )
  const uploaded = await upload(owner, pack.id, 'calm', { bytes: smallPng(), type: 'image/png' })
  assert.equal(uploaded.status, 200)
  const mappedName = uploaded.body.image.url.split(`/${BUCKET}/`)[1]
  await storage(owner).remove([mappedName])
  assert.deepEqual(await objectsOf(pack.id), [mappedName], 'a mapped image is not deleted directly')

  const del = await api(`/api/tone-packs/${pack.id}`, { method: 'DELETE', token: owner.token })
  assert.equal(del.body.result, 'deleted')
  assert.deepEqual(await objectsOf(pack.id), [], 'deleting the pack deletes its images')
})

// ---------------------------------------------------------------------------------------
// What buyers paid for stays as they bought it.

const pngOf = (shade: number) =>
  encode({ width: 4, height: 4, data: new Uint8Array(4 * 4 * 3).fill(shade), channels: 3 })
const bytesAt = async (url: string) => new Uint8Array(await (await fetch(localUrl(url))).arrayBuffer())
const objectName = (url: string) => decodeURIComponent(url.split(`/${BUCKET}/`)[1])

test('the tone-packs bucket takes no client writes: an owner cannot rewrite a bought icon through Storage, before or after retiring the pack', async () => {
  const [owner, buyer] = await Promise.all([createUser(), createUser()])
  const pack = await createPack(owner, { is_public: true, price_drops: 5 })
  const icon = pngOf(40)
  const up = await upload(owner, pack.id, 'calm', { bytes: icon, type: 'image/png' })
  assert.equal(up.status, 200, JSON.stringify(up.body))
  const name = objectName(up.body.image.url)
  assert.equal(
    (await api(`/api/tone-packs/${pack.id}/purchase`, { method: 'POST', token: buyer.token })).status,
    201,
  )

  const html = new TextEncoder().encode('<html><body><script>alert(document.cookie)</script></body></html>')
  const attempts = async () => {
    const put = await fetch(`${API_URL}/storage/v1/object/${BUCKET}/${name}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${owner.token}`, apikey: ANON_KEY, 'content-type': 'image/png' },
      body: html,
    })
    await put.body?.cancel()
    const storage = clientAs(owner.token).storage.from(BUCKET)
    const upsert = await storage.upload(name, html, { contentType: 'image/png', upsert: true })
    const fresh = await storage.upload(`${owner.id}/${pack.id}/calm-${Date.now()}.png`, html, {
      contentType: 'image/png',
    })
    const removed = await storage.remove([name])
    return { put: put.status, upsert: upsert.error, fresh: fresh.error, removed: removed.data?.length ?? 0 }
  }
  const check = async (when: string) => {
    const tried = await attempts()
    assert.ok(
      tried.put >= 400 && tried.put < 500,
      `${when}: PUT over a bought icon is refused (got ${tried.put})`,
    )
    assert.ok(tried.upsert, `${when}: an upsert over it is refused`)
    assert.ok(
      tried.fresh,
      `${when}: no new object either: the bucket is written only by the api, which checks the bytes`,
    )
    assert.equal(tried.removed, 0, `${when}: the icon cannot be deleted`)
    const served = await fetch(localUrl(up.body.image.url))
    assert.equal(served.status, 200)
    assert.equal(served.headers.get('content-type'), 'image/png')
    assert.equal(served.headers.get('x-content-type-options'), 'nosniff')
    assert.deepEqual(
      new Uint8Array(await served.arrayBuffer()),
      icon,
      `${when}: the buyer's icon is the PNG they bought`,
    )
  }
  await check('while on sale')
  assert.equal(
    (await api(`/api/tone-packs/${pack.id}`, { method: 'DELETE', token: owner.token })).body.result,
    'retired',
  )
  await check('once retired')
  assert.deepEqual(await objectsOf(pack.id), [name])
})

test('buyers keep the icons they bought: a regenerated tone reaches the owner, sharees and later buyers, never an earlier buyer; a new tone reaches everyone', async () => {
  const [owner, early, sharee, late] = await Promise.all([
    createUser(),
    createUser(),
    createUser(),
    createUser(),
  ])
  const pack = await createPack(owner, { is_public: true, price_drops: 5 })
  await api(`/api/tone-packs/${pack.id}/share`, { token: owner.token, body: { user_id: sharee.id } })
  const first = await upload(owner, pack.id, 'calm', { bytes: pngOf(10), type: 'image/png' })
  assert.equal(first.status, 200, JSON.stringify(first.body))
  assert.equal(
    (await api(`/api/tone-packs/${pack.id}/purchase`, { method: 'POST', token: early.token })).status,
    201,
  )
  await api(`/api/tone-packs/${pack.id}/activate`, { method: 'POST', token: early.token })

  // The owner replaces calm (a new object, a new address) and adds sad.
  const second = await upload(owner, pack.id, 'calm', { bytes: pngOf(200), type: 'image/png' })
  assert.equal(second.status, 200)
  assert.notEqual(second.body.image.url, first.body.image.url)
  const sad = await upload(owner, pack.id, 'sad', { bytes: pngOf(90), type: 'image/png' })
  assert.equal(sad.status, 200)
  assert.equal(
    (await api(`/api/tone-packs/${pack.id}/purchase`, { method: 'POST', token: late.token })).status,
    201,
  )

  const iconsOf = async (token: string) => {
    const got = await api(`/api/tone-packs/${pack.id}`, { token })
    assert.equal(got.status, 200, JSON.stringify(got.body))
    return Object.fromEntries(got.body.pack.images.map((i: any) => [i.tone, i.url]))
  }
  assert.deepEqual(
    await iconsOf(early.token),
    { calm: first.body.image.url, sad: sad.body.image.url },
    'the early buyer keeps the calm icon they bought, and gets the new tone',
  )
  for (const u of [owner, sharee, late]) {
    assert.deepEqual(await iconsOf(u.token), { calm: second.body.image.url, sad: sad.body.image.url })
  }
  // The same through PostgREST, in the purchased list, and on the buyer's entries.
  const direct = await clientAs(early.token).rpc('get_tone_pack', { pack_id: pack.id })
  assert.equal(direct.data.images.find((i: any) => i.tone === 'calm').url, first.body.image.url)
  const list = await api('/api/tone-packs', { token: early.token })
  assert.equal(
    list.body.purchased[0].pack.images.find((i: any) => i.tone === 'calm').url,
    first.body.image.url,
  )
  const entry = await postEntry(early, { title: 'quiet evening', content: 'x', mood: 'calm' })
  assert.equal(entry.tone_icon_url, first.body.image.url)
  const viewed = await clientAs(early.token).from('journal_entry_details').select('tone_icon_url').eq(
    'id',
    entry.id,
  ).single()
  assert.equal(viewed.data!.tone_icon_url, first.body.image.url)
  const feed = await api('/api/journal', { token: early.token })
  assert.equal(feed.body.entries.find((e: any) => e.id === entry.id).tone_icon_url, first.body.image.url)
  assert.deepEqual(await bytesAt(first.body.image.url), pngOf(10), 'the bought object is still served')

  // Replacing sad again: both buyers keep the sad they got; the bought objects stay stored.
  const sad2 = await upload(owner, pack.id, 'sad', { bytes: pngOf(140), type: 'image/png' })
  assert.equal((await iconsOf(early.token)).sad, sad.body.image.url)
  assert.equal((await iconsOf(late.token)).sad, sad.body.image.url)
  assert.equal((await iconsOf(owner.token)).sad, sad2.body.image.url)
  const stored = await objectsOf(pack.id)
  for (const u of [first, second, sad, sad2]) {
    assert.ok(stored.includes(objectName(u.body.image.url)), objectName(u.body.image.url))
  }

  // An image nobody bought is deleted when replaced.
  const third = await upload(owner, pack.id, 'sad', { bytes: pngOf(60), type: 'image/png' })
  assert.equal(third.status, 200)
  assert.ok(
    !(await objectsOf(pack.id)).includes(objectName(sad2.body.image.url)),
    'sad2 was never bought: deleted',
  )

  // Retired: the buyers keep exactly what they had.
  assert.equal(
    (await api(`/api/tone-packs/${pack.id}`, { method: 'DELETE', token: owner.token })).body.result,
    'retired',
  )
  assert.deepEqual(await iconsOf(early.token), { calm: first.body.image.url, sad: sad.body.image.url })
  assert.deepEqual(await iconsOf(late.token), { calm: second.body.image.url, sad: sad.body.image.url })
})

// ---------------------------------------------------------------------------------------
// The daily cap on tone pack images.

const capOf = async (type: string) =>
  (await sql`select daily_cap_per_user as cap from private.ai_usage_types where usage_type = ${type}`)[0]
    .cap as number | null
const callsToday = async (userId: string, type: string) =>
  (await sql`select coalesce(sum(calls), 0)::int as n from private.ai_daily_calls
              where user_id = ${userId} and usage_type = ${type} and day = (now() at time zone 'UTC')::date`)[
    0
  ].n as number
const useUpTo = (userId: string, type: string, calls: number) =>
  sql`insert into private.ai_daily_calls (user_id, day, usage_type, calls)
      values (${userId}, (now() at time zone 'UTC')::date, ${type}, ${calls})
      on conflict (user_id, day, usage_type) do update set calls = excluded.calls`

test('generate-images: every image counts against a default daily cap, atomically; past it 429 and the provider is not called', async () => {
  const cap = await capOf('tone_pack_image')
  assert.ok(
    typeof cap === 'number' && cap >= 20,
    `tone pack images have a default daily cap of at least one full pack (got ${cap})`,
  )
  const owner = await createUser()
  const marker = aiMarker()
  const pack = await createPack(owner, { name: `Capped ${marker}` })
  await useUpTo(owner.id, 'tone_pack_image', cap - 3)
  // Two requests of two tones at once: three images are left, so exactly three are made.
  const [a, b] = await Promise.all([
    api(`/api/tone-packs/${pack.id}/generate-images`, {
      token: owner.token,
      body: { tones: ['joyful', 'sad'], quality: 'hd' },
    }),
    api(`/api/tone-packs/${pack.id}/generate-images`, {
      token: owner.token,
      body: { tones: ['calm', 'tired'], quality: 'hd' },
    }),
  ])
  assert.equal(a.status, 200, JSON.stringify(a.body))
  assert.equal(b.status, 200, JSON.stringify(b.body))
  assert.equal(a.body.generated.length + b.body.generated.length, 3)
  const limited = [...a.body.failed, ...b.body.failed]
  assert.equal(limited.length, 1)
  assert.match(limited[0].error, /Daily limit/)
  assert.equal((await aiRequests(marker)).length, 3, 'the provider made three images, no more')
  assert.equal(await callsToday(owner.id, 'tone_pack_image'), cap)

  const over = await api(`/api/tone-packs/${pack.id}/generate-images`, {
    token: owner.token,
    body: { tones: ['angry'] },
  })
  assertError(over, 429, 'Daily limit')
  assert.equal((await aiRequests(marker)).length, 3)
  // PostgREST cannot add to or take from the counter.
  const release = await clientAs(owner.token).rpc('release_ai_calls', {
    user_id: owner.id,
    usage_type: 'tone_pack_image',
    day: new Date().toISOString().slice(0, 10),
    calls: 5,
  })
  assert.ok(release.error, "giving calls back is the api's (service role) only")
  assert.equal(await callsToday(owner.id, 'tone_pack_image'), cap)
})

test('generate-images: an image that fails gives its place under the cap back', async () => {
  const cap = await capOf('tone_pack_image')
  assert.ok(typeof cap === 'number')
  const owner = await createUser()
  const marker = aiMarker()
  const pack = await createPack(owner, { name: `Flaky ${marker}` })
  await useUpTo(owner.id, 'tone_pack_image', cap - 1)
  await scriptAi(marker, [{ status: 500, error: { message: 'boom', type: 'server_error' } }, {
    image: 'png',
  }])
  const failed = await api(`/api/tone-packs/${pack.id}/generate-images`, {
    token: owner.token,
    body: { tones: ['calm'] },
  })
  assert.equal(failed.status, 200)
  assert.equal(failed.body.failed.length, 1)
  assert.equal(await callsToday(owner.id, 'tone_pack_image'), cap - 1, 'the failed image was given back')
  const retried = await api(`/api/tone-packs/${pack.id}/generate-images`, {
    token: owner.token,
    body: { tones: ['calm'] },
  })
  assert.equal(retried.body.generated.length, 1, JSON.stringify(retried.body))
  assert.equal(await callsToday(owner.id, 'tone_pack_image'), cap)
})

/** Waits until the fake provider has received `count` requests carrying the marker. */
async function providerReached(marker: string, count = 1) {
  for (let i = 0; i < 200; i++) {
    if ((await aiRequests(marker)).length >= count) return
    await new Promise((r) => setTimeout(r, 25))
  }
  throw new Error(`the provider never received ${count} request(s) for ${marker}`)
}

test('generate-images: deleting the pack mid-request does not give billed images back; tones not yet started are not attempted', async () => {
  const owner = await createUser()
  const usageRows = async () =>
    (await sql`select count(*)::int as n from public.ai_usage where user_id = ${owner.id} and usage_type = 'tone_pack_image'`)[
      0
    ].n as number
  // Three rounds of the attack: each billed image must stay counted.
  for (let round = 1; round <= 3; round++) {
    const marker = aiMarker()
    await scriptAi(marker, [{ delay_ms: 1500, image: 'png' }])
    const pack = await createPack(owner, { name: `Vanishing ${marker}` })
    const generating = api(`/api/tone-packs/${pack.id}/generate-images`, {
      token: owner.token,
      body: { tones: ALL_TONES, quality: 'hd' },
    })
    await providerReached(marker)
    const deleted = await api(`/api/tone-packs/${pack.id}`, { method: 'DELETE', token: owner.token })
    assert.equal(deleted.status, 200, JSON.stringify(deleted.body))
    const done = await generating
    assert.equal(done.status, 200, JSON.stringify(done.body))
    assert.equal(done.body.generated.length, 0)
    assert.equal(done.body.failed.length, ALL_TONES.length)

    const billed = (await aiRequests(marker)).length
    assert.ok(
      billed >= 1 && billed <= 4,
      `only the tones already in flight reached the provider (got ${billed})`,
    )
    assert.ok(
      done.body.failed.filter((f: { error: string }) => /Not attempted/.test(f.error)).length >=
        ALL_TONES.length - 4,
    )
    assert.deepEqual(await objectsOf(pack.id), [], "nothing is left in the deleted pack's folder")
  }
  const billedRows = await usageRows()
  assert.ok(billedRows >= 3, `every billed image is recorded (${billedRows})`)
  assert.equal(
    await callsToday(owner.id, 'tone_pack_image'),
    billedRows,
    'every billed image still counts against the cap',
  )
})

test('release_ai_calls never takes the counter below the calls billed that day, whoever asks', async () => {
  const user = await createUser()
  const service = createClient(API_URL, SERVICE_ROLE_KEY, {
    auth: { persistSession: false, autoRefreshToken: false },
  })
  await useUpTo(user.id, 'tone_pack_image', 5)
  for (let i = 0; i < 3; i++) {
    const { error } = await service.rpc('record_ai_usage', {
      user_id: user.id,
      usage_type: 'tone_pack_image',
      model: 'gpt-image-1',
      input_tokens: 10,
      output_tokens: 100,
      image_count: 1,
      image_quality: 'hd',
      entry_id: null,
      pack_id: null,
    })
    assert.equal(error, null)
  }
  const day = (await sql`select (now() at time zone 'UTC')::date::text as d`)[0].d as string
  const released = await service.rpc('release_ai_calls', {
    user_id: user.id,
    usage_type: 'tone_pack_image',
    day,
    calls: 5,
  })
  assert.equal(released.error, null)
  assert.equal(released.data, 3, 'two unbilled places back; the three billed ones stay')
  assert.equal(await callsToday(user.id, 'tone_pack_image'), 3)
})

test('AI_DAILY_CAP_<TYPE> overrides a default cap for the api; 0 turns it off', async () => {
  const owner = await createUser()
  const marker = aiMarker()
  const pack = await createPack(owner, { name: `Configured ${marker}` })
  const { app } = await import('../functions/api/app.ts')
  const call = async (body: unknown) => {
    const res = await app.fetch(
      new Request(`http://in-process/api/tone-packs/${pack.id}/generate-images`, {
        method: 'POST',
        headers: { authorization: `Bearer ${owner.token}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }),
    )
    return { status: res.status, body: await res.json(), headers: res.headers }
  }
  try {
    Deno.env.set('AI_DAILY_CAP_TONE_PACK_IMAGE', '1')
    const one = await call({ tones: ['calm', 'sad'] })
    assert.equal(one.body.generated.length, 1, JSON.stringify(one.body))
    assert.match(one.body.failed[0].error, /Daily limit/)
    assertError(await call({ tones: ['tired'] }), 429)
    Deno.env.set('AI_DAILY_CAP_TONE_PACK_IMAGE', '0')
    const cap = await capOf('tone_pack_image')
    await useUpTo(owner.id, 'tone_pack_image', (cap ?? 0) + 5)
    const unlimited = await call({ tones: ['tired'] })
    assert.equal(unlimited.body.generated.length, 1, JSON.stringify(unlimited.body))
  } finally {
    Deno.env.delete('AI_DAILY_CAP_TONE_PACK_IMAGE')
  }
})

test('image object names never collide: two images of one tone in the same millisecond are two objects', async () => {
  const owner = await createUser()
  const pack = await createPack(owner)
  const { app } = await import('../functions/api/app.ts')
  const put = (shade: number) => {
    const form = new FormData()
    form.append(
      'file',
      new Blob([pngOf(shade) as Uint8Array<ArrayBuffer>], { type: 'image/png' }),
      'icon.png',
    )
    return app.fetch(
      new Request(`http://in-process/api/tone-packs/${pack.id}/images/calm`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${owner.token}` },
        body: form,
      }),
    )
  }
  const realNow = Date.now
  const frozen = realNow()
  Date.now = () => frozen
  let replies
  try {
    replies = await Promise.all([put(1), put(2), put(3)])
  } finally {
    Date.now = realNow
  }
  const bodies = await Promise.all(replies.map((r) => r.json()))
  assert.deepEqual(replies.map((r) => r.status), [200, 200, 200], JSON.stringify(bodies))
  assert.equal(new Set(bodies.map((b) => b.image.url)).size, 3)
})
