// Image transformations on /storage/v1/render/image: getPublicUrl(path, {transform}),
// download(path, {transform}) and createSignedUrl(path, s, {transform}) through supabase-js;
// every result is decoded to check its size and format. Sizes, modes, formats and quality as
// Storage takes them; private objects only for who may read them; bounded input.
import { strict as assert } from 'node:assert'
import { clientAs, createUser, test } from './_helpers.ts'
import { makeBuckets, png, STORAGE } from './_storage.ts'
import {
  dimensions,
  jpegDeclaring,
  jpegWithExif,
  photoLikeJpeg,
  profilesOf,
  solidGif,
} from './_workout_photos.ts'

const blob = (bytes: Uint8Array, type = 'image/png') => new Blob([bytes as Uint8Array<ArrayBuffer>], { type })
const ascii = (bytes: Uint8Array, from: number, to: number) => String.fromCharCode(...bytes.slice(from, to))
/** The format the bytes are (by their signature). */
function formatOf(b: Uint8Array) {
  if (b[0] === 0x89 && ascii(b, 1, 4) === 'PNG') return 'png'
  if (ascii(b, 0, 4) === 'RIFF' && ascii(b, 8, 12) === 'WEBP') return 'webp'
  if (ascii(b, 4, 8) === 'ftyp' && ascii(b, 8, 12) === 'avif') return 'avif'
  if (b[0] === 0xff && b[1] === 0xd8) return 'jpeg'
  return 'unknown'
}
async function image(url: string, init?: RequestInit) {
  const res = await fetch(url, init)
  const bytes = new Uint8Array(await res.arrayBuffer())
  if (res.status !== 200) throw new Error(`${res.status} ${new TextDecoder().decode(bytes)} for ${url}`)
  return {
    bytes,
    type: res.headers.get('content-type'),
    format: formatOf(bytes),
    size: dimensions(bytes),
    headers: res.headers,
  }
}

test('storage render: getPublicUrl with a transform gives the size, mode, format and quality asked', async () => {
  const buckets = await makeBuckets('st-render')
  try {
    const A = await createUser({ prefix: 'st-render' })
    const pub = clientAs(A.token).storage.from(buckets.pub)
    const square = `${A.id}/icons/tone.png`
    const wide = `${A.id}/icons/wide.png`
    const original = png(1024, 1024)
    assert.equal((await pub.upload(square, blob(original))).error, null)
    assert.equal((await pub.upload(wide, blob(png(400, 200)))).error, null)
    const url = (path: string, transform: Record<string, unknown>) =>
      pub.getPublicUrl(path, { transform: transform as never }).data.publicUrl

    // A 64-px tone icon instead of the 1024x1024 original, in the original's format.
    const icon = await image(url(square, { width: 64, height: 64 }))
    assert.equal(
      url(square, { width: 64, height: 64 }),
      `${STORAGE}/render/image/public/${buckets.pub}/${square}?width=64&height=64`,
    )
    assert.deepEqual([icon.size, icon.type, icon.format], [[64, 64], 'image/png', 'png'])
    assert.ok(icon.bytes.length < original.length / 10, `${icon.bytes.length} bytes`)
    assert.equal(icon.headers.get('access-control-allow-origin'), '*')
    assert.deepEqual((await image(url(square, { width: 32 }))).size, [32, 32])

    // Resize modes on a 400x200 picture.
    assert.deepEqual((await image(url(wide, { width: 64 }))).size, [64, 32]) // one side: aspect kept
    assert.deepEqual((await image(url(wide, { height: 50 }))).size, [100, 50])
    assert.deepEqual((await image(url(wide, { width: 64, height: 64 }))).size, [64, 64]) // cover (default): cropped
    assert.deepEqual((await image(url(wide, { width: 64, height: 64, resize: 'cover' }))).size, [64, 64])
    assert.deepEqual((await image(url(wide, { width: 64, height: 64, resize: 'contain' }))).size, [64, 32])
    assert.deepEqual((await image(url(wide, { width: 64, height: 64, resize: 'fill' }))).size, [64, 64]) // stretched
    assert.deepEqual((await image(url(wide, { width: 4000 }))).size, [400, 200]) // never enlarged

    // Formats: asked for, or WebP for a client that accepts it (as a browser's <img> does).
    const webp = await image(url(square, { width: 64, height: 64, format: 'webp' }))
    assert.deepEqual([webp.size, webp.type, webp.format], [[64, 64], 'image/webp', 'webp'])
    const avif = await image(url(square, { width: 48, height: 48, format: 'avif' }))
    assert.deepEqual([avif.size, avif.type, avif.format], [[48, 48], 'image/avif', 'avif'])
    const accepted = await image(url(square, { width: 64 }), {
      headers: { accept: 'image/avif,image/webp,*/*' },
    })
    assert.deepEqual([accepted.format, accepted.headers.get('vary')], ['webp', 'Accept'])
    const origin = await image(url(square, { width: 64, format: 'origin' }), {
      headers: { accept: 'image/webp' },
    })
    assert.equal(origin.format, 'png')

    // Quality: lower is smaller (on a photo-like JPEG, kept a JPEG).
    const photo = `${A.id}/photo.jpg`
    assert.equal((await pub.upload(photo, blob(photoLikeJpeg(), 'image/jpeg'))).error, null)
    const lo = await image(url(photo, { width: 200, quality: 20 }))
    const hi = await image(url(photo, { width: 200, quality: 95 }))
    assert.deepEqual([lo.format, lo.size, hi.size], ['jpeg', [200, 150], [200, 150]])
    assert.ok(lo.bytes.length * 2 < hi.bytes.length, `${lo.bytes.length} vs ${hi.bytes.length}`)

    // Bad options are Storage's 400; what is not an image, or too large to decode, 422.
    for (const q of ['width=abc', 'height=-5', 'quality=5', 'quality=101', 'resize=stretch', 'format=gif']) {
      const res = await fetch(`${STORAGE}/render/image/public/${buckets.pub}/${square}?${q}`)
      const body = await res.json()
      assert.deepEqual([res.status, body.statusCode], [400, '400'], q)
    }
    assert.equal(
      (await pub.upload(`${A.id}/notes.txt`, new Blob(['not an image'], { type: 'text/plain' }))).error,
      null,
    )
    const notImage = await fetch(url(`${A.id}/notes.txt`, { width: 64 }))
    assert.deepEqual([notImage.status, (await notImage.json()).statusCode], [422, '422'])
    assert.equal(
      (await pub.upload(`${A.id}/huge.jpg`, blob(jpegDeclaring(6000, 6000), 'image/jpeg'))).error,
      null,
    )
    const huge = await fetch(url(`${A.id}/huge.jpg`, { width: 64 }))
    const hugeBody = await huge.json()
    assert.equal(huge.status, 422)
    assert.match(hugeBody.message, /megapixels/)
    assert.equal(await fetch(url(`${A.id}/missing.png`, { width: 64 })).then((r) => r.status), 404)

    // A camera's sideways JPEG comes out upright and without its EXIF; a GIF as its first frame.
    const sideways = `${A.id}/sideways.jpg` // 16x8 pixels, EXIF orientation 6 (turned 90°)
    assert.equal(
      (await pub.upload(
        sideways,
        blob(
          jpegWithExif({ taken: '2026:01:02 10:00:00', orientation: 6, gps: { lat: 1, lng: 2 } }),
          'image/jpeg',
        ),
      )).error,
      null,
    )
    const upright = await image(url(sideways, { width: 4 }))
    assert.deepEqual([upright.size, upright.format], [[4, 8], 'jpeg'])
    assert.deepEqual(profilesOf(upright.bytes).filter((p) => p === 'exif' || p === 'xmp'), [])
    const gif = `${A.id}/anim.gif`
    assert.equal(
      (await pub.upload(
        gif,
        blob(solidGif(100, 60, [{ width: 100, height: 60 }, { width: 100, height: 60 }]), 'image/gif'),
      )).error,
      null,
    )
    const still = await image(url(gif, { width: 30, height: 30 }))
    assert.deepEqual([still.size, still.type], [[30, 30], 'image/gif'])
  } finally {
    await buckets.cleanup()
  }
})

test('storage render: private images only for who may read them, signed image URLs carry the transform', async () => {
  const buckets = await makeBuckets('st-render-priv')
  try {
    const A = await createUser({ prefix: 'st-render-a' })
    const B = await createUser({ prefix: 'st-render-b' })
    const a = clientAs(A.token).storage.from(buckets.priv)
    const key = `${A.id}/avatar.png`
    assert.equal((await a.upload(key, blob(png(300, 300)))).error, null)

    // Not through the public route, whoever asks.
    const viaPublic = await fetch(a.getPublicUrl(key, { transform: { width: 64 } }).data.publicUrl)
    assert.equal(viaPublic.status, 400)
    await viaPublic.body?.cancel()

    // download with a transform: the owner, not a stranger.
    const mine = await a.download(key, { transform: { width: 64, height: 64 } })
    assert.equal(mine.error, null)
    assert.deepEqual(dimensions(new Uint8Array(await mine.data!.arrayBuffer())), [64, 64])
    const theirs = await clientAs(B.token).storage.from(buckets.priv).download(key, {
      transform: { width: 64 },
    })
    assert.equal(theirs.data, null)
    assert.equal(
      (await clientAs().storage.from(buckets.priv).download(key, { transform: { width: 64 } })).data,
      null,
    )

    // A signed URL with a transform points at /render/image/sign and renders for anyone holding it.
    // storage-js types `format` as 'origin' only; Storage takes webp and avif too.
    const signed = await a.createSignedUrl(key, 60, {
      transform: { width: 40, height: 40, format: 'webp' as never },
    })
    assert.equal(signed.error, null)
    const signedUrl = new URL(signed.data!.signedUrl)
    assert.equal(signedUrl.pathname, `/storage/v1/render/image/sign/${buckets.priv}/${key}`)
    const img = await image(signed.data!.signedUrl)
    assert.deepEqual([img.size, img.format], [[40, 40], 'webp'])
    // The transform is the token's: query parameters added to the URL change nothing.
    assert.deepEqual((await image(`${signed.data!.signedUrl}&width=200`)).size, [40, 40])
    const token = signedUrl.searchParams.get('token')!
    const tampered = await fetch(
      `${STORAGE}/render/image/sign/${buckets.priv}/${key}?token=${token.slice(0, -2)}xx`,
    )
    assert.deepEqual([tampered.status, (await tampered.json()).error], [400, 'InvalidJWT'])
    assert.equal(
      (await clientAs(B.token).storage.from(buckets.priv).createSignedUrl(key, 60, {
        transform: { width: 40 },
      })).data,
      null,
    )
  } finally {
    await buckets.cleanup()
  }
})
