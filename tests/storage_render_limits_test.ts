// What an image transformation may cost (security review, issue 34), through supabase-js:
// renders are kept by object version and options (asked again: no CPU), a changed object is
// rendered anew, the cache never answers who may not read the object; an AVIF past 1024x1024
// is made as WebP; a client starts a bounded number of renders a minute (429 SlowDown).
import { strict as assert } from 'node:assert'
import { encode } from 'fast-png'
import { clientAs, createUser, test } from './_helpers.ts'
import { makeBuckets, png } from './_storage.ts'
import { dimensions } from './_workout_photos.ts'
import { RENDERS_PER_MINUTE } from '../scripts/lib/storage/render_rate.ts'

const blob = (bytes: Uint8Array) => new Blob([bytes as Uint8Array<ArrayBuffer>], { type: 'image/png' })
/** A solid PNG: large in pixels, small in bytes, quick to make. */
const solidPng = (side: number) =>
  encode({ width: side, height: side, data: new Uint8Array(side * side * 3).fill(120), channels: 3 })

async function get(url: string, init?: RequestInit) {
  const res = await fetch(url, init)
  const bytes = new Uint8Array(await res.arrayBuffer())
  return { status: res.status, bytes, type: res.headers.get('content-type'), cache: res.headers.get('x-render-cache') }
}

test('storage render cache: the same render twice is made once; a new version of the object is rendered anew', async () => {
  const buckets = await makeBuckets('st-rcache')
  try {
    const A = await createUser({ prefix: 'st-rcache-a' })
    const B = await createUser({ prefix: 'st-rcache-b' })
    const pub = clientAs(A.token).storage.from(buckets.pub)
    const key = `${A.id}/icon.png`
    assert.equal((await pub.upload(key, blob(png(300, 300)))).error, null)
    const url = pub.getPublicUrl(key, { transform: { width: 64, height: 64 } }).data.publicUrl

    const first = await get(url)
    const again = await get(url)
    assert.deepEqual([first.status, first.cache, again.status, again.cache], [200, 'miss', 200, 'hit'])
    assert.deepEqual(again.bytes, first.bytes)
    // The options are normalized (order in the query); the Accept header that picks WebP is part of the key.
    const reordered = url.replace('width=64&height=64', 'height=64&width=64')
    assert.notEqual(reordered, url)
    assert.equal((await get(reordered)).cache, 'hit')
    const webp = await get(url, { headers: { accept: 'image/webp' } })
    assert.deepEqual([webp.type, webp.cache], ['image/webp', 'miss'])

    // A new version (upsert) is never answered from the old render.
    assert.equal((await pub.upload(key, blob(png(200, 100)), { upsert: true })).error, null)
    const wide = pub.getPublicUrl(key, { transform: { width: 64 } }).data.publicUrl
    const before = await get(wide)
    assert.deepEqual([before.cache, dimensions(before.bytes)], ['miss', [64, 32]])
    assert.equal((await get(url)).cache, 'miss')

    // Private: the cache answers only after the caller's right to the object is checked.
    const priv = clientAs(A.token).storage.from(buckets.priv)
    const secret = `${A.id}/secret.png`
    assert.equal((await priv.upload(secret, blob(png(120, 120)))).error, null)
    const mine = await priv.download(secret, { transform: { width: 40, height: 40 } })
    assert.equal(mine.error, null)
    const theirs = await clientAs(B.token).storage.from(buckets.priv).download(secret, {
      transform: { width: 40, height: 40 },
    })
    assert.equal(theirs.data, null)
    assert.equal((theirs.error as any)?.originalError?.status, 404)
  } finally {
    await buckets.cleanup()
  }
})

test('storage render cost: an AVIF past 1024x1024 is made as WebP; smaller ones stay AVIF', async () => {
  const buckets = await makeBuckets('st-rcost')
  try {
    const A = await createUser({ prefix: 'st-rcost' })
    const pub = clientAs(A.token).storage.from(buckets.pub)
    const key = `${A.id}/poster.png`
    assert.equal((await pub.upload(key, blob(solidPng(1100)))).error, null)
    const url = (transform: Record<string, unknown>) =>
      pub.getPublicUrl(key, { transform: transform as never }).data.publicUrl

    const large = await get(url({ width: 1100, height: 1100, format: 'avif' }))
    assert.deepEqual([large.status, large.type, dimensions(large.bytes)], [200, 'image/webp', [1100, 1100]])
    const small = await get(url({ width: 200, height: 200, format: 'avif' }))
    assert.deepEqual([small.status, small.type], [200, 'image/avif'])
  } finally {
    await buckets.cleanup()
  }
})

test('storage render rate: a client starts a bounded number of renders a minute, then 429 SlowDown; cached renders and other clients go on', async () => {
  const buckets = await makeBuckets('st-rrate')
  try {
    const A = await createUser({ prefix: 'st-rrate-a' })
    const B = await createUser({ prefix: 'st-rrate-b' })
    const priv = clientAs(A.token).storage.from(buckets.priv)
    const key = `${A.id}/dot.png`
    assert.equal((await priv.upload(key, blob(png(8, 8)))).error, null)

    // Each width is another render (another cache key), cheap as it is; four at a time (the
    // client's places in the render queue). The bucket refills while they run, so the 429
    // comes after RENDERS_PER_MINUTE renders and a few more.
    let width = 0
    let rendered = 0
    let res: Response | undefined
    while (!res && width < 3 * RENDERS_PER_MINUTE) {
      const batch = await Promise.all(
        [1, 2, 3, 4].map(() => priv.download(key, { transform: { width: ++width } })),
      )
      for (const { error } of batch) {
        if (!error) rendered++
        else res ??= (error as any).originalError as Response
      }
    }
    assert.equal(res?.status, 429, `no 429 after ${rendered} renders`)
    assert.ok(rendered >= RENDERS_PER_MINUTE, `${rendered} renders before the 429`)
    const body = await res.json()
    assert.deepEqual([body.statusCode, body.error], ['429', 'SlowDown'])
    assert.match(body.message, /^Rate limit exceeded, retry in \d+ seconds$/)

    // An image already rendered is served from the cache; another user renders as before.
    assert.equal((await priv.download(key, { transform: { width: 1 } })).error, null)
    const other = clientAs(B.token).storage.from(buckets.priv)
    assert.equal((await other.upload(`${B.id}/dot.png`, blob(png(8, 8)))).error, null)
    assert.equal((await other.download(`${B.id}/dot.png`, { transform: { width: 3 } })).error, null)
  } finally {
    await buckets.cleanup()
  }
})
