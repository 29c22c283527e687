// Workout check-ins over HTTP and PostgREST: photos with EXIF (inside, outside, none), wrong and
// oversized files, decompression bombs refused from their headers (and slow photos decoded off
// the gateway's thread), one per day (also concurrently, without keeping refused photos, and
// across a time-zone change; POSIX zones refused), stored photos stripped of their metadata,
// pictures used before found by their perceptual hash, the check-in RPC that takes only photos
// the api read, locations and review reasons private to their owner, chips and the baton pass,
// the day status, the review queue and the notifications inbox.
import { strict as assert } from 'node:assert'
import exifr from 'exifr'
import {
  ANON_KEY,
  api,
  API_URL,
  apiFetch,
  assertError,
  clientAs,
  createUser,
  SERVICE_ROLE_KEY,
  sql,
  test,
  type TestUser,
} from './_helpers.ts'
import {
  dimensions,
  exifBlock,
  exifTime,
  gifWithXmp,
  hhmm,
  jpegDeclaring,
  jpegWithExif,
  metadataMarkers,
  middayZone,
  offsetText,
  oneColourJpeg,
  photoLikeJpeg,
  plainJpeg,
  plainPng,
  pngWithExif,
  profilesOf,
  reencodedJpeg,
  solidGif,
  webpWithCanvas,
  webpWithExif,
  withPngChunk,
} from './_workout_photos.ts'

const W = '/api/workout-window'

/** POSTs a multipart check-in. */
async function checkin(user: TestUser | null, fields: Record<string, string | Blob>) {
  const form = new FormData()
  for (const [k, v] of Object.entries(fields)) form.append(k, v)
  const res = await apiFetch(`${W}/checkin`, {
    method: 'POST',
    headers: user ? { authorization: `Bearer ${user.token}` } : {},
    body: form,
  })
  const text = await res.text()
  return { status: res.status, body: text ? JSON.parse(text) : null, headers: res.headers }
}

const photo = (bytes: Uint8Array, type = 'image/jpeg', name = 'p.jpg') =>
  new File([bytes as Uint8Array<ArrayBuffer>], name, { type })

/** A user whose window (in a zone where it is about midday) started `startedMinutesAgo` ago. */
async function userInWindow(startedMinutesAgo = 10, where = { lat: 10, lng: 20 }) {
  const user = await createUser()
  const zone = middayZone()
  const start = new Date(zone.local.getTime() - startedMinutesAgo * 60_000)
  const end = new Date(start.getTime() + 2 * 3600_000)
  const res = await api(`${W}/setup`, {
    token: user.token,
    body: {
      activityType: 'cardio',
      windowStartTime: hhmm(start),
      windowEndTime: hhmm(end),
      timezone: zone.tz,
    },
  })
  assert.equal(res.status, 200, JSON.stringify(res.body))
  await api(`${W}/update-location`, {
    method: 'PUT',
    token: user.token,
    body: { latitude: where.lat, longitude: where.lng, city: `C-${user.id}` },
  })
  return { user, zone }
}

/** POST /rest/v1/rpc/<fn> as a user (or anonymous), as a client could call it. */
async function rpc(fn: string, args: Record<string, unknown>, token?: string) {
  const res = await fetch(`${API_URL}/rest/v1/rpc/${fn}`, {
    method: 'POST',
    headers: {
      apikey: ANON_KEY,
      authorization: `Bearer ${token ?? ANON_KEY}`,
      'content-type': 'application/json',
    },
    body: JSON.stringify(args),
  })
  const text = await res.text()
  return { status: res.status, body: text ? JSON.parse(text) : null }
}

/** Puts an object straight into the check-in bucket with the service role (what no client may do). */
async function storeDirectly(name: string, bytes: Uint8Array, type = 'image/jpeg') {
  const res = await fetch(`${API_URL}/storage/v1/object/workout-checkins/${name}`, {
    method: 'POST',
    headers: { apikey: SERVICE_ROLE_KEY, authorization: `Bearer ${SERVICE_ROLE_KEY}`, 'content-type': type },
    body: bytes as Uint8Array<ArrayBuffer>,
  })
  assert.equal(res.status, 200, await res.text())
}

const objectsOf = async (user: TestUser) =>
  (await sql`select count(*)::int as n from storage.objects where bucket_id = 'workout-checkins' and name like ${
    user.id + '/%'
  }`)[0].n

test('check-in with EXIF inside the window and near: verified; the photo is public; a second is 409 and not kept', async () => {
  const { user, zone } = await userInWindow(10)
  const jpeg = jpegWithExif({
    taken: exifTime(zone.local),
    offset: offsetText(zone.offsetHours),
    gps: { lat: 10.01, lng: 20.01 },
  })
  const res = await checkin(user, {
    photo: photo(jpeg),
    activityType: 'Cardio',
    latitude: '10.0001',
    longitude: '20.0001',
  })
  assert.equal(res.status, 201, JSON.stringify(res.body))
  assert.equal(res.body.checkin.status, 'verified')
  assert.equal(res.body.checkin.reviewReason, null)
  assert.equal(res.body.checkin.date, zone.date)
  assert.equal(res.body.chainStatus, 'broken')
  assert.equal(res.body.battleChipsEarned, 1, '1 + 0.5 (first 30 minutes) floors to 1')
  assert.equal(res.body.nextUserNotified, false)
  assert.equal(
    Math.abs(Date.parse(res.body.checkin.photoTimestamp) - Date.now()) < 120_000,
    true,
    'EXIF time with its offset is now',
  )
  assert.equal(res.body.checkin.locationLat, 10.01, "the photo's GPS position is kept")
  assert.match(
    res.body.checkin.photoUrl,
    new RegExp(`/storage/v1/object/public/workout-checkins/${user.id}/`),
  )
  const stored = await fetch(res.body.checkin.photoUrl)
  assert.equal(stored.status, 200)
  assert.deepEqual(metadataMarkers(new Uint8Array(await stored.arrayBuffer())), [], 'stored without its EXIF')

  const again = await checkin(user, { photo: photo(jpeg), activityType: 'Cardio' })
  assertError(again, 409, 'already checked in')
  assert.equal(await objectsOf(user), 1, "the refused check-in's photo is not kept")

  const day = await api(`${W}/checkin/${zone.date}`, { token: user.token })
  assert.equal(day.body.status, 'completed')
  assert.equal(day.body.checkin.id, res.body.checkin.id)
})

test('concurrent check-ins of one user: one 201, the others 409, one photo kept', async () => {
  const { user } = await userInWindow(40)
  const results = await Promise.all(
    [1, 2, 3].map(() =>
      checkin(user, { photo: photo(plainPng(), 'image/png', 'p.png'), activityType: 'walk' })
    ),
  )
  assert.deepEqual(
    results.map((r) => r.status).sort(),
    [201, 409, 409],
    JSON.stringify(results.map((r) => r.body)),
  )
  const [{ n }] = await sql`select count(*)::int as n from public.workout_checkins where user_id = ${user.id}`
  assert.equal(n, 1)
  assert.equal(await objectsOf(user), 1)
})

test('EXIF outside the window, or none, or far away: pending with the reason (never refused)', async () => {
  const outside = await userInWindow(10)
  const sixHoursAgo = new Date(outside.zone.local.getTime() - 6 * 3600_000)
  const a = await checkin(outside.user, {
    photo: photo(
      jpegWithExif({ taken: exifTime(sixHoursAgo), offset: offsetText(outside.zone.offsetHours) }),
    ),
    activityType: 'cardio',
  })
  assert.equal(a.status, 201, JSON.stringify(a.body))
  assert.equal(a.body.checkin.status, 'pending')
  assert.match(a.body.checkin.reviewReason, /outside the window/)

  const none = await userInWindow(10)
  const b = await checkin(none.user, {
    photo: photo(plainPng(), 'image/png', 'p.png'),
    activityType: 'cardio',
  })
  assert.equal(b.status, 201)
  assert.equal(b.body.checkin.status, 'pending')
  assert.equal(b.body.checkin.reviewReason, 'no capture time (EXIF) in the photo')

  // Without an offset, the camera's wall clock is read in the window's zone.
  const local = await userInWindow(10)
  const c = await checkin(local.user, {
    photo: photo(jpegWithExif({ taken: exifTime(local.zone.local) })),
    activityType: 'cardio',
  })
  assert.equal(c.body.checkin.status, 'verified', JSON.stringify(c.body))

  const far = await userInWindow(10)
  const d = await checkin(far.user, {
    photo: photo(
      jpegWithExif({
        taken: exifTime(far.zone.local),
        offset: offsetText(far.zone.offsetHours),
        gps: { lat: -40, lng: 100 },
      }),
    ),
    activityType: 'cardio',
  })
  assert.equal(d.body.checkin.status, 'pending')
  assert.match(d.body.checkin.reviewReason, /km from your location/)
})

/** A PNG whose header claims 20000 x 20000 pixels (a decompression bomb's shape) over a tiny body. */
function hugePng() {
  const png = plainPng()
  const view = new DataView(png.buffer, png.byteOffset)
  view.setUint32(16, 20000)
  view.setUint32(20, 20000)
  // The IHDR chunk's CRC covers its type and data (bytes 12..28).
  let c = 0xffffffff
  for (const b of png.slice(12, 29)) {
    c ^= b
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
  }
  view.setUint32(29, (c ^ 0xffffffff) >>> 0)
  return png
}

test('check-in: wrong, disguised, oversized or missing files and bad fields are 400; nothing stored', async () => {
  const { user } = await userInWindow(10)
  const text = new TextEncoder().encode('not an image at all')
  const cases: [Record<string, string | Blob>, string][] = [
    [{ photo: photo(text, 'image/jpeg'), activityType: 'cardio' }, 'photo'],
    [{ photo: photo(plainPng(), 'image/jpeg'), activityType: 'cardio' }, 'photo'],
    [{ photo: photo(new Uint8Array(10 * 1024 * 1024 + 1).fill(0xff)), activityType: 'cardio' }, 'photo'],
    [{ photo: photo(new Uint8Array(0)), activityType: 'cardio' }, 'photo'],
    // JPEG and PNG signatures, but nothing an image decoder can read.
    [{
      photo: photo(
        new Uint8Array([0xff, 0xd8, 0xff, 0xe0, 0, 16, ...new TextEncoder().encode('JFIF but no picture')]),
      ),
      activityType: 'cardio',
    }, 'photo'],
    [{ photo: photo(hugePng(), 'image/png', 'p.png'), activityType: 'cardio' }, 'megapixels'],
    [{ photo: 'just a string', activityType: 'cardio' }, 'photo'],
    [{ activityType: 'cardio' }, 'photo'],
    [{ photo: photo(plainPng(), 'image/png') }, 'activityType'],
    [{ photo: photo(plainPng(), 'image/png'), activityType: 'x'.repeat(51) }, 'activityType'],
    [
      { photo: photo(plainPng(), 'image/png'), activityType: 'cardio', latitude: '91', longitude: '0' },
      'latitude',
    ],
    [{ photo: photo(plainPng(), 'image/png'), activityType: 'cardio', latitude: '1' }, 'latitude'],
    [
      { photo: photo(plainPng(), 'image/png'), activityType: 'cardio', longitude: 'east', latitude: '1' },
      'longitude',
    ],
    [{ photo: photo(plainPng(), 'image/png'), activityType: 'cardio', mood: 'great' }, 'mood'],
  ]
  for (const [fields, field] of cases) assertError(await checkin(user, fields), 400, field)
  const json = await api(`${W}/checkin`, { token: user.token, body: { activityType: 'cardio' } })
  assertError(json, 400, 'body')
  assert.equal(await objectsOf(user), 0)
  const [{ n }] = await sql`select count(*)::int as n from public.workout_checkins where user_id = ${user.id}`
  assert.equal(n, 0)
  // No window yet: refused, and the photo is not kept.
  const newcomer = await createUser()
  assertError(
    await checkin(newcomer, { photo: photo(plainPng(), 'image/png'), activityType: 'cardio' }),
    400,
    'window',
  )
  assert.equal(await objectsOf(newcomer), 0)
  assertError(await checkin(null, { photo: photo(plainPng(), 'image/png'), activityType: 'cardio' }), 401)
})

// ---- Decompression bombs -------------------------------------------------------------------

const frames = (n: number, width: number, height: number) =>
  Array.from({ length: n }, () => ({ width, height }))
const u32 = (n: number) => [n >>> 24, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff]

test('photos whose headers ask for more than a photo (every frame counted) are 400 in moments, before decoding', async () => {
  const { user } = await userInWindow(10)
  // Decompression bombs first: ten solid 6000x6000 frames in 158 KB took 8 s and 1.3 GB;
  // a 1x1 frame, then one of 60000x60000, took 40 s and about 10 GB, the gateway answering nothing.
  const bombs: [string, Uint8Array, string, RegExp][] = [
    [
      'ten 6000x6000 GIF frames',
      solidGif(6000, 6000, frames(10, 6000, 6000)),
      'image/gif',
      /at most 25 megapixels \(this one is 6000x6000\)/,
    ],
    [
      'a 1x1 GIF frame, then a 60000x60000 one',
      solidGif(1, 1, [{ width: 1, height: 1 }, { width: 60000, height: 60000 }]),
      'image/gif',
      /megapixels/,
    ],
    [
      'five 3000x3000 GIF frames (45 megapixels in all)',
      solidGif(3000, 3000, frames(5, 3000, 3000)),
      'image/gif',
      /40 megapixels over all frames/,
    ],
    ['51 small GIF frames', solidGif(10, 10, frames(51, 10, 10)), 'image/gif', /at most 50 frames/],
    [
      'a GIF frame larger than its screen',
      solidGif(100, 100, [{ width: 200, height: 200 }]),
      'image/gif',
      /outside the 100x100 image/,
    ],
    [
      'an APNG announcing 1,000 frames',
      withPngChunk(plainPng(), 'acTL', new Uint8Array([...u32(1000), ...u32(0)])),
      'image/png',
      /at most 50 frames/,
    ],
    ['a WebP canvas of 20000x20000', webpWithCanvas(20000, 20000), 'image/webp', /megapixels/],
    ['a JPEG frame of 60000x60000', jpegDeclaring(60000, 60000), 'image/jpeg', /megapixels/],
    ['a 40000x100 JPEG', jpegDeclaring(40000, 100), 'image/jpeg', /30000 pixels a side/],
  ]
  for (const [what, bytes, type, message] of bombs) {
    const started = performance.now()
    const res = await checkin(user, { photo: photo(bytes, type, 'bomb'), activityType: 'cardio' })
    const took = performance.now() - started
    assertError(res, 400, 'photo')
    assert.match(res.body.error, message, what)
    assert.ok(took < 3000, `${what} (${bytes.length} bytes): refused in ${Math.round(took)} ms`)
  }
  assert.equal(await objectsOf(user), 0)
})

test('a photo that takes long to decode holds up no other request: the gateway keeps answering meanwhile', async () => {
  const { user } = await userInWindow(10)
  // Four 3000x3000 frames: 36 megapixels, within the limits, a second or more of decoding.
  const heavy = solidGif(3000, 3000, frames(4, 3000, 3000))
  let done = false
  const pings: number[] = []
  const pinger = (async () => {
    while (!done) {
      const started = performance.now()
      const res = await fetch(`${API_URL}/functions/v1/health`)
      await res.body?.cancel()
      pings.push(performance.now() - started)
      await new Promise((r) => setTimeout(r, 20))
    }
  })()
  const started = performance.now()
  const res = await checkin(user, { photo: photo(heavy, 'image/gif', 'p.gif'), activityType: 'cardio' })
  const took = performance.now() - started
  done = true
  await pinger
  assert.equal(res.status, 201, JSON.stringify(res.body))
  assert.ok(took > 300, `the photo takes long enough to tell (${Math.round(took)} ms)`)
  const slowest = Math.max(...pings)
  assert.ok(
    slowest < took / 2,
    `the slowest of ${pings.length} health answers took ${Math.round(slowest)} ms, the check-in ${
      Math.round(took)
    } ms`,
  )
})

test('chain continued: the after user is told (baton pass) and earns +1 after the before user', async () => {
  const zone = middayZone()
  const first = await createUser()
  const second = await createUser()
  const city = `Relay-${crypto.randomUUID().slice(0, 6)}`
  // first: a window that ended an hour ago; second: one that started 40 minutes ago.
  const firstStart = new Date(zone.local.getTime() - 3 * 3600_000)
  const secondStart = new Date(zone.local.getTime() - 40 * 60_000)
  for (const [u, s] of [[first, firstStart], [second, secondStart]] as const) {
    await api(`${W}/setup`, {
      token: u.token,
      body: {
        activityType: 'walk',
        windowStartTime: hhmm(s),
        windowEndTime: hhmm(new Date(s.getTime() + 2 * 3600_000)),
        timezone: zone.tz,
      },
    })
    await api(`${W}/update-location`, { method: 'PUT', token: u.token, body: { city } })
  }
  await sql`update public.workout_windows set is_active = (user_id in (${first.id}, ${second.id}))`
  const gen = await api(`${W}/generate-chains`, { token: first.token, body: { date: zone.date } })
  assert.equal(gen.status, 200, JSON.stringify(gen.body))
  const chain = await api(`${W}/chain/${zone.date}`, { token: second.token })
  assert.equal(chain.body.chain.beforeUser.id, first.id)

  const a = await checkin(first, { photo: photo(plainPng(), 'image/png'), activityType: 'walk' })
  assert.equal(a.status, 201, JSON.stringify(a.body))
  assert.equal(a.body.nextUserNotified, true)
  const inbox = await api('/api/notifications', { token: second.token })
  assert.equal(inbox.status, 200)
  assert.equal(inbox.body.notifications[0].type, 'workout.baton_pass')
  assert.equal(inbox.body.notifications[0].payload.fromUserId, first.id)
  const firstInbox = await api('/api/notifications?type=workout.baton_pass', { token: first.token })
  assert.deepEqual(firstInbox.body.notifications, [], 'a user reads only their own notifications')

  const b = await checkin(second, { photo: photo(plainPng(), 'image/png'), activityType: 'walk' })
  assert.equal(b.body.chainStatus, 'continued')
  assert.equal(b.body.battleChipsEarned, 2)
  assert.equal(b.body.checkin.chainId, chain.body.chain.id)
  const chainAfter = await api(`${W}/chain/${zone.date}`, { token: second.token })
  assert.deepEqual(chainAfter.body.checkins.map((k: { userId: string }) => k.userId), [first.id, second.id])

  const marked = await api('/api/notifications/read', { token: second.token, body: {} })
  assert.equal(marked.body.marked >= 1, true)
  const unread = await api('/api/notifications?unread=true', { token: second.token })
  assert.deepEqual(unread.body.notifications, [])
})

test('review: super admins list pending check-ins and verify or reject them; others may not', async () => {
  const { user, zone } = await userInWindow(10)
  const admin = await createUser({ superAdmin: true })
  const made = await checkin(user, { photo: photo(plainPng(), 'image/png'), activityType: 'cardio' })
  const id = made.body.checkin.id
  const queue = await api(`${W}/admin/checkins?status=pending&limit=200`, { token: admin.token })
  assert.equal(queue.status, 200)
  assert.ok(
    queue.body.checkins.some((k: { id: string; user: { id: string } }) =>
      k.id === id && k.user.id === user.id
    ),
  )
  assertError(await api(`${W}/admin/checkins`, { token: user.token }), 403)
  assertError(await api(`${W}/admin/checkins`), 401)
  assertError(await api(`${W}/admin/checkins?status=lost`, { token: admin.token }), 400, 'status')
  assertError(await api(`${W}/admin/checkins/${id}/verify`, { token: user.token, body: {} }), 403)
  assertError(await api(`${W}/admin/checkins/${id}/reject`, { token: admin.token, body: {} }), 400, 'reason')
  assertError(
    await api(`${W}/admin/checkins/${crypto.randomUUID()}/verify`, { token: admin.token, body: {} }),
    404,
  )
  assertError(await api(`${W}/admin/checkins/not-a-uuid/verify`, { token: admin.token, body: {} }), 400, 'id')

  const verified = await api(`${W}/admin/checkins/${id}/verify`, { token: admin.token, body: {} })
  assert.equal(verified.status, 200, JSON.stringify(verified.body))
  assert.equal(verified.body.checkin.status, 'verified')
  const rejected = await api(`${W}/admin/checkins/${id}/reject`, {
    token: admin.token,
    body: { reason: 'a screenshot' },
  })
  assert.equal(rejected.body.checkin.status, 'rejected')
  assert.equal(rejected.body.checkin.reviewReason, 'a screenshot')
  const day = await api(`${W}/checkin/${zone.date}`, { token: user.token })
  assert.equal(day.body.checkin.status, 'rejected')
  assert.equal(day.body.status, 'pending', 'a rejected check-in does not complete the day')
  const told = await api('/api/notifications?type=workout.checkin_rejected', { token: user.token })
  assert.equal(told.body.notifications.length, 1)
})

test('check-in day status before any check-in: not_started, pending; other days null', async () => {
  const { user, zone } = await userInWindow(-60) // the window starts in an hour
  assert.deepEqual((await api(`${W}/checkin/${zone.date}`, { token: user.token })).body, {
    checkin: null,
    status: 'not_started',
  })
  const during = await userInWindow(10)
  assert.deepEqual((await api(`${W}/checkin/${zone.date}`, { token: during.user.token })).body, {
    checkin: null,
    status: 'pending',
  })
  assertError(await api(`${W}/checkin/2026-02-31`, { token: user.token }), 400, 'date')
  assertError(await api(`${W}/checkin/${zone.date}`), 401)
})

// ---- Privacy: locations and review reasons -------------------------------------------------

test('check-in locations and review reasons reach only their owner and super admins, on every path', async () => {
  const zone = middayZone()
  const [alice, bob, carol, stranger] = await Promise.all([1, 2, 3, 4].map(() => createUser()))
  const admin = await createUser({ superAdmin: true })
  const city = `Private-${crypto.randomUUID().slice(0, 6)}`
  // Start order alice (ended an hour ago), bob (running), carol (later): teams red, blue, red;
  // alice is bob's before user and carol's squad mate.
  const starts = [[alice, -180], [bob, -40], [carol, 60]] as const
  for (const [u, minutes] of starts) {
    const s = new Date(zone.local.getTime() + minutes * 60_000)
    await api(`${W}/setup`, {
      token: u.token,
      body: {
        activityType: 'walk',
        windowStartTime: hhmm(s),
        windowEndTime: hhmm(new Date(s.getTime() + 2 * 3600_000)),
        timezone: zone.tz,
      },
    })
    await api(`${W}/update-location`, {
      method: 'PUT',
      token: u.token,
      body: { city, latitude: 48.1234567, longitude: 11.7654321 },
    })
  }
  await sql`update public.workout_windows set is_active = (user_id in (${alice.id}, ${bob.id}, ${carol.id}))`
  const gen = await api(`${W}/generate-chains`, { token: admin.token, body: { date: zone.date } })
  assert.equal(gen.status, 200, JSON.stringify(gen.body))
  const made = await checkin(alice, {
    photo: photo(plainPng(), 'image/png', 'p.png'),
    activityType: 'walk',
    latitude: '48.1234567',
    longitude: '11.7654321',
  })
  assert.equal(made.status, 201, JSON.stringify(made.body))
  assert.equal(made.body.checkin.locationLat, 48.1234567, 'the owner sees where she checked in')
  assert.match(made.body.checkin.reviewReason, /no capture time/)
  const id = made.body.checkin.id

  const aliceIn = (list: { id: string }[]) =>
    list.find((k) => k.id === id) as Record<string, unknown> | undefined
  const hidden = (k: Record<string, unknown> | undefined, who: string) => {
    assert.ok(k, `${who} sees the check-in itself (its photo is the social proof)`)
    assert.equal(typeof k.photoUrl, 'string')
    assert.deepEqual(
      [k.locationLat, k.locationLng, k.reviewReason],
      [null, null, null],
      `${who} sees no location or review reason`,
    )
  }
  for (
    const [viewer, who] of [[bob, 'her chain neighbour'], [carol, 'her squad mate'], [
      stranger,
      'a stranger',
    ]] as const
  ) {
    const day = await api(`${W}/checkins/${zone.date}`, { token: viewer.token })
    assert.equal(day.status, 200)
    hidden(aliceIn(day.body.checkins), `${who} (GET /checkins)`)
    const viaRest = await rpc('workout_day_checkins', { target: zone.date }, viewer.token)
    assert.equal(viaRest.status, 200)
    hidden(aliceIn(viaRest.body.checkins), `${who} (rpc/workout_day_checkins)`)
    assert.doesNotMatch(JSON.stringify([day.body, viaRest.body]), /48\.123|11\.765|capture time/)
    const table = await clientAs(viewer.token).from('workout_checkins').select('*').eq('id', id)
    assert.deepEqual(table.data, [], `${who} reads no row of the table itself`)
  }
  const chain = await api(`${W}/chain/${zone.date}`, { token: bob.token })
  assert.equal(chain.body.chain.beforeUser.id, alice.id)
  hidden(aliceIn(chain.body.checkins), 'her chain neighbour (GET /chain)')
  hidden(
    aliceIn((await rpc('workout_chain', { target: zone.date }, bob.token)).body.checkins),
    'her chain neighbour (rpc/workout_chain)',
  )
  const squad = await api(`${W}/squad/${zone.date}`, { token: carol.token })
  assert.equal(squad.status, 200, JSON.stringify(squad.body))
  hidden(aliceIn(squad.body.checkins), 'her squad mate (GET /squad)')
  hidden(
    aliceIn((await rpc('workout_squad', { target: zone.date }, carol.token)).body.checkins),
    'her squad mate (rpc/workout_squad)',
  )

  // The owner and super admins see everything, on both paths.
  for (const [viewer, who] of [[alice, 'the owner'], [admin, 'a super admin']] as const) {
    const day = await api(`${W}/checkins/${zone.date}`, { token: viewer.token })
    const mine = aliceIn(day.body.checkins)!
    assert.deepEqual([mine.locationLat, mine.locationLng], [48.1234567, 11.7654321], who)
    assert.match(String(mine.reviewReason), /no capture time/, who)
    assert.equal(
      aliceIn((await rpc('workout_day_checkins', { target: zone.date }, viewer.token)).body.checkins)!
        .locationLat,
      48.1234567,
    )
  }
  assert.equal(
    (await api(`${W}/checkin/${zone.date}`, { token: alice.token })).body.checkin.locationLng,
    11.7654321,
  )
  const queue = await api(`${W}/admin/checkins?limit=200`, { token: admin.token })
  assert.equal(aliceIn(queue.body.checkins)!.locationLat, 48.1234567)
  // Anonymous: refused on both paths.
  assertError(await api(`${W}/checkins/${zone.date}`), 401)
  assert.ok(
    (await rpc('workout_day_checkins', { target: zone.date })).status >= 400,
    'anon may not call the RPC',
  )
})

// ---- Stored photos carry no metadata ------------------------------------------------------

test('stored check-in photos carry no EXIF, GPS, XMP, IPTC or comments (JPEG, PNG, WebP, GIF) and stand upright', async () => {
  const cases = [
    [
      'image/jpeg',
      'p.jpg',
      (o: Parameters<typeof jpegWithExif>[0]) => jpegWithExif(o, { xmp: true, iptc: true }),
      true,
    ],
    ['image/png', 'p.png', pngWithExif, true],
    ['image/webp', 'p.webp', webpWithExif, false],
    ['image/gif', 'p.gif', gifWithXmp, false],
  ] as const
  for (const [type, name, make, readable] of cases) {
    const { user, zone } = await userInWindow(10)
    const original = make({
      taken: exifTime(zone.local),
      offset: offsetText(zone.offsetHours),
      gps: { lat: 10.01, lng: 20.01 },
      orientation: 6,
    })
    assert.notDeepEqual(metadataMarkers(original), [], `the ${type} fixture does carry metadata`)
    const res = await checkin(user, { photo: photo(original, type, name), activityType: 'cardio' })
    assert.equal(res.status, 201, JSON.stringify(res.body))
    if (readable) {
      // What the review needs was read before the metadata went.
      assert.equal(res.body.checkin.status, 'verified', `${type}: ${res.body.checkin.reviewReason}`)
      assert.equal(res.body.checkin.locationLat, 10.01)
    }
    // Read back from /storage/v1 as anyone would.
    const stored = await fetch(res.body.checkin.photoUrl)
    assert.equal(stored.status, 200)
    assert.equal(stored.headers.get('content-type'), type)
    const bytes = new Uint8Array(await stored.arrayBuffer())
    assert.deepEqual(metadataMarkers(bytes), [], `${type}: no metadata marker left`)
    assert.deepEqual(profilesOf(bytes), [], `${type}: no profile or comment left`)
    if (type === 'image/jpeg' || type === 'image/png') {
      const tags = await exifr.parse(bytes, {
        tiff: true,
        exif: true,
        gps: true,
        xmp: true,
        iptc: true,
        icc: true,
        ihdr: false,
      })
      assert.equal(tags, undefined, `${type}: exifr finds nothing: ${JSON.stringify(tags)}`)
      assert.deepEqual(
        dimensions(bytes),
        [8, 16],
        `${type}: turned upright (EXIF orientation 6) before the tag went`,
      )
    }
  }
})

// ---- The check-in RPC trusts no client fact -----------------------------------------------

test('the check-in RPC takes only a photo the api stored and read for the caller, once: no foreign URL, no client facts', async () => {
  const { user: alice, zone } = await userInWindow(10)
  const { user: bob } = await userInWindow(10)
  // The ways around it: an object in Alice's folder, a URL on another host, facts made up.
  const planted = `${alice.id}/${crypto.randomUUID()}.jpg`
  await storeDirectly(planted, plainJpeg())
  const forged = await rpc('workout_checkin', {
    activity_type: 'cardio',
    photo_url: `https://evil.example/storage/v1/object/public/workout-checkins/${planted}`,
    photo_object: planted,
    photo_taken_local: zone.local.toISOString().slice(0, 19),
    photo_offset_minutes: zone.offsetHours * 60,
    photo_lat: 10,
    photo_lng: 20,
  }, alice.token)
  assert.ok(
    forged.status >= 400,
    `client-supplied URL and photo facts are refused: ${JSON.stringify(forged)}`,
  )
  // An object the api did not read (planted by the service role) is not a check-in photo either.
  const unread = await rpc('workout_checkin', { activity_type: 'cardio', photo_object: planted }, alice.token)
  assert.equal(unread.status, 400, JSON.stringify(unread))
  assert.match(unread.body.message, /photo/)
  assert.equal(
    (await sql`select count(*)::int as n from public.workout_checkins where user_id = ${alice.id}`)[0].n,
    0,
  )

  // Clients cannot put objects into the bucket themselves.
  const direct = await clientAs(alice.token).storage.from('workout-checkins')
    .upload(
      `${alice.id}/direct.png`,
      new Blob([plainPng() as Uint8Array<ArrayBuffer>], { type: 'image/png' }),
    )
  assert.ok(direct.error, 'a direct client upload into workout-checkins is refused')

  // Bob's photo, read and stored by the api, is not Alice's.
  const bobs = await checkin(bob, { photo: photo(plainPng(), 'image/png', 'p.png'), activityType: 'cardio' })
  assert.equal(bobs.status, 201)
  const bobsObject = new URL(bobs.body.checkin.photoUrl).pathname.split('/workout-checkins/')[1]
  const stolen = await rpc(
    'workout_checkin',
    { activity_type: 'cardio', photo_object: bobsObject },
    alice.token,
  )
  assert.equal(stolen.status, 400, JSON.stringify(stolen))

  // A photo is used once: Alice's own, already used, cannot check her in on another day.
  const first = await checkin(alice, {
    photo: photo(plainPng(), 'image/png', 'p.png'),
    activityType: 'cardio',
  })
  assert.equal(first.status, 201, JSON.stringify(first.body))
  const object = new URL(first.body.checkin.photoUrl).pathname.split('/workout-checkins/')[1]
  assert.ok(object.startsWith(`${alice.id}/`))
  await sql`update public.workout_checkins set date = date - 1 where id = ${first.body.checkin.id}`
  const again = await rpc('workout_checkin', { activity_type: 'cardio', photo_object: object }, alice.token)
  assert.equal(again.status, 409, JSON.stringify(again))
  assert.match(again.body.message, /already used/)
  const rows = await sql`select photo_url from public.workout_checkins where user_id = ${alice.id}`
  assert.equal(rows.length, 1)
  assert.ok(rows[0].photo_url.startsWith(`${API_URL}/storage/v1/object/public/workout-checkins/${alice.id}/`))
})

test('EXIF is a claim: a photo verifies only when it reached the server in the window, shortly after it was taken, and is new', async () => {
  const near = { lat: 10.01, lng: 20.01 }
  // Uploaded three hours after a window that is over, with EXIF claiming the window's middle.
  const late = await userInWindow(300)
  const inWindow = new Date(late.zone.local.getTime() - 240 * 60_000)
  const a = await checkin(late.user, {
    photo: photo(
      jpegWithExif({ taken: exifTime(inWindow), offset: offsetText(late.zone.offsetHours), gps: near }),
    ),
    activityType: 'cardio',
  })
  assert.equal(a.status, 201, JSON.stringify(a.body))
  assert.equal(a.body.checkin.status, 'pending')
  assert.match(a.body.checkin.reviewReason, /uploaded at .* outside the window/)

  // Capture time an hour after the upload (still inside the window).
  const future = await userInWindow(10)
  const b = await checkin(future.user, {
    photo: photo(
      jpegWithExif({
        taken: exifTime(new Date(future.zone.local.getTime() + 60 * 60_000)),
        offset: offsetText(future.zone.offsetHours),
        gps: near,
      }),
    ),
    activityType: 'cardio',
  })
  assert.equal(b.body.checkin.status, 'pending')
  assert.match(b.body.checkin.reviewReason, /after it was uploaded/)

  // Taken 25 minutes before a window that started 110 minutes ago: inside the grace, but 135
  // minutes before the upload.
  const old = await userInWindow(110)
  const c = await checkin(old.user, {
    photo: photo(
      jpegWithExif({
        taken: exifTime(new Date(old.zone.local.getTime() - 135 * 60_000)),
        offset: offsetText(old.zone.offsetHours),
        gps: near,
      }),
    ),
    activityType: 'cardio',
  })
  assert.equal(c.body.checkin.status, 'pending')
  assert.match(c.body.checkin.reviewReason, /taken 135 min before it was uploaded/)

  // The same picture twice, with fresh EXIF each time: the second waits for review.
  const pixels = plainJpeg()
  const first = await userInWindow(10)
  const second = await userInWindow(10)
  const fresh = (z: typeof first.zone) =>
    jpegWithExif({ taken: exifTime(z.local), offset: offsetText(z.offsetHours), gps: near }, {}, pixels)
  const d = await checkin(first.user, { photo: photo(fresh(first.zone)), activityType: 'cardio' })
  assert.equal(d.body.checkin.status, 'verified', JSON.stringify(d.body))
  const e = await checkin(second.user, { photo: photo(fresh(second.zone)), activityType: 'cardio' })
  assert.equal(e.body.checkin.status, 'pending')
  assert.match(e.body.checkin.reviewReason, /same picture/)
})

test('a picture used before waits for review, whoever sends it, re-encoded, re-tagged or with new EXIF', async () => {
  const near = { lat: 10.01, lng: 20.01 }
  const freshExif = (zone: ReturnType<typeof middayZone>, orientation?: number) => ({
    taken: exifTime(zone.local),
    offset: offsetText(zone.offsetHours),
    gps: near,
    orientation,
  })
  const sameUsed = /same picture .* already used/
  const alice = await userInWindow(10)
  const a = await checkin(alice.user, {
    photo: photo(jpegWithExif(freshExif(alice.zone), {}, photoLikeJpeg())),
    activityType: 'cardio',
  })
  assert.equal(a.body.checkin.status, 'verified', JSON.stringify(a.body))
  // Anyone may download the stored photo (it is public): its bytes are not what Alice sent.
  const stored = new Uint8Array(await (await fetch(a.body.checkin.photoUrl)).arrayBuffer())

  // Carol: Alice's stored photo with EXIF saying now and here (a replayed photo with forged facts).
  const carol = await userInWindow(10)
  const c = await checkin(carol.user, {
    photo: photo(jpegWithExif(freshExif(carol.zone), {}, stored)),
    activityType: 'cardio',
  })
  assert.equal(c.status, 201, JSON.stringify(c.body))
  assert.equal(c.body.checkin.status, 'pending')
  assert.match(c.body.checkin.reviewReason, sameUsed)
  // Dave: the same, saved again by an app (quality 70, 90 % of the size).
  const dave = await userInWindow(10)
  const d = await checkin(dave.user, {
    photo: photo(jpegWithExif(freshExif(dave.zone), {}, reencodedJpeg(stored, 70, 0.9))),
    activityType: 'cardio',
  })
  assert.equal(d.body.checkin.status, 'pending')
  assert.match(d.body.checkin.reviewReason, sameUsed)
  // Erin: the same, with an EXIF orientation that turns it on its side.
  const erin = await userInWindow(10)
  const e = await checkin(erin.user, {
    photo: photo(jpegWithExif(freshExif(erin.zone, 6), {}, stored)),
    activityType: 'cardio',
  })
  assert.equal(e.body.checkin.status, 'pending')
  assert.match(e.body.checkin.reviewReason, sameUsed)
  // Alice herself, the next day, with her own stored photo: the same picture too.
  await sql`update public.workout_checkins set date = date - 1, created_at = created_at - interval '1 day' where id = ${a.body.checkin.id}`
  const again = await checkin(alice.user, {
    photo: photo(jpegWithExif(freshExif(alice.zone), {}, stored)),
    activityType: 'cardio',
  })
  assert.equal(again.body.checkin.status, 'pending')
  assert.match(again.body.checkin.reviewReason, sameUsed)

  // PNG: Frank's stored PNG with an eXIf chunk added, sent by Gina.
  const frank = await userInWindow(10)
  const f = await checkin(frank.user, {
    photo: photo(pngWithExif(freshExif(frank.zone)), 'image/png', 'p.png'),
    activityType: 'cardio',
  })
  assert.equal(f.body.checkin.status, 'verified', JSON.stringify(f.body))
  const storedPng = new Uint8Array(await (await fetch(f.body.checkin.photoUrl)).arrayBuffer())
  const gina = await userInWindow(10)
  const g = await checkin(gina.user, {
    photo: photo(withPngChunk(storedPng, 'eXIf', exifBlock(freshExif(gina.zone))), 'image/png', 'p.png'),
    activityType: 'cardio',
  })
  assert.equal(g.body.checkin.status, 'pending')
  assert.match(g.body.checkin.reviewReason, sameUsed)

  // Other pictures verify.
  for (const pixels of [photoLikeJpeg(), photoLikeJpeg()]) {
    const other = await userInWindow(10)
    const o = await checkin(other.user, {
      photo: photo(jpegWithExif(freshExif(other.zone), {}, pixels)),
      activityType: 'cardio',
    })
    assert.equal(o.body.checkin.status, 'verified', JSON.stringify(o.body))
  }
  // A picture of one colour shows nothing to tell it from others: it waits for review.
  const plain = await userInWindow(10)
  const p = await checkin(plain.user, {
    photo: photo(jpegWithExif(freshExif(plain.zone), {}, oneColourJpeg())),
    activityType: 'cardio',
  })
  assert.equal(p.body.checkin.status, 'pending')
  assert.match(p.body.checkin.reviewReason, /too plain/)
})

// ---- Time-zone changes ----------------------------------------------------------------------

/** A window (12:00-14:00, local) in a zone, set up through the api. */
async function windowIn(user: TestUser, timezone: string) {
  const res = await api(`${W}/setup`, {
    token: user.token,
    body: { activityType: 'walk', windowStartTime: '12:00', windowEndTime: '14:00', timezone },
  })
  assert.equal(res.status, 200, JSON.stringify(res.body))
}

test('a time-zone change applies to check-ins from the next local day, westward and eastward, on every path', async () => {
  const west = await createUser()
  await windowIn(west, 'Pacific/Kiritimati') // UTC+14
  assert.equal(
    (await checkin(west, { photo: photo(plainPng(), 'image/png'), activityType: 'walk' })).status,
    201,
  )
  await windowIn(west, 'Pacific/Pago_Pago') // UTC-11: a local date one or two days earlier
  const w2 = await checkin(west, { photo: photo(plainPng(), 'image/png'), activityType: 'walk' })
  assertError(w2, 409, 'already checked in')
  assert.equal(await objectsOf(west), 1, 'the refused photo is not kept')

  const east = await createUser()
  await windowIn(east, 'Pacific/Pago_Pago')
  assert.equal(
    (await checkin(east, { photo: photo(plainPng(), 'image/png'), activityType: 'walk' })).status,
    201,
  )
  await windowIn(east, 'Pacific/Kiritimati') // a later local date, while Pago Pago's day still runs
  const e2 = await checkin(east, { photo: photo(plainPng(), 'image/png'), activityType: 'walk' })
  assertError(e2, 409, 'next local day')

  // Deleting the window and making a new one in another zone through PostgREST changes nothing.
  const sly = await createUser()
  await windowIn(sly, 'Pacific/Pago_Pago')
  assert.equal(
    (await checkin(sly, { photo: photo(plainPng(), 'image/png'), activityType: 'walk' })).status,
    201,
  )
  const db = clientAs(sly.token)
  assert.equal((await db.from('workout_windows').delete().eq('user_id', sly.id)).error, null)
  const made = await db.from('workout_windows').insert({
    user_id: sly.id,
    activity_type: 'walk',
    window_start_time: '12:00',
    window_end_time: '14:00',
    timezone: 'Pacific/Kiritimati',
  })
  assert.equal(made.error, null)
  assertError(await checkin(sly, { photo: photo(plainPng(), 'image/png'), activityType: 'walk' }), 409)
  const [{ n }] =
    await sql`select count(*)::int as n from public.workout_checkins where user_id in (${west.id}, ${east.id}, ${sly.id})`
  assert.equal(n, 3, 'one check-in each')
})

test("a POSIX time zone cannot move a user's day: refused through PostgREST, so no past check-in and no chains a week ahead", async () => {
  const user = await createUser()
  await windowIn(user, 'UTC')
  const today = new Date().toISOString().slice(0, 10)
  const addDays = (n: number) =>
    new Date(Date.parse(`${today}T00:00:00Z`) + n * 86400_000).toISOString().slice(0, 10)
  // A backfill through the time zone: a zone 150 hours behind puts "today" six days back; one
  // 167 hours ahead, a week on.
  for (const timezone of ['ABC+150', 'ABC-167', 'ABC+167']) {
    const setup = await rpc('setup_workout_window', {
      activity_type: 'walk',
      custom_activity: null,
      window_start_time: '23:00',
      window_end_time: '01:00',
      timezone,
    }, user.token)
    assert.equal(setup.status, 400, JSON.stringify(setup))
    assert.match(setup.body.message, /timezone: .* is not an IANA time zone/)
    const patch = await fetch(`${API_URL}/rest/v1/workout_windows?user_id=eq.${user.id}`, {
      method: 'PATCH',
      headers: {
        apikey: ANON_KEY,
        authorization: `Bearer ${user.token}`,
        'content-type': 'application/json',
        prefer: 'return=representation',
      },
      body: JSON.stringify({ timezone }),
    })
    assert.equal(patch.status, 400, await patch.text())
  }
  const [window] =
    await sql`select timezone, window_start_time::text from public.workout_windows where user_id = ${user.id}`
  assert.deepEqual(window, { timezone: 'UTC', window_start_time: '12:00:00' })
  const c = await checkin(user, { photo: photo(plainPng(), 'image/png'), activityType: 'walk' })
  assert.equal(c.status, 201, JSON.stringify(c.body))
  assert.equal(c.body.checkin.date, today, 'the check-in counts for today, never a past date')
  assertError(
    await api(`${W}/generate-chains`, { token: user.token, body: { date: addDays(8) } }),
    403,
    'today and tomorrow',
  )
  assertError(
    await api(`${W}/generate-chains`, { token: user.token, body: { date: addDays(-7) } }),
    403,
    'today and tomorrow',
  )
  const [{ n }] = await sql`select count(*)::int as n from public.workout_chains where date in (${
    addDays(8)
  }, ${addDays(-7)}) and user_id = ${user.id}`
  assert.equal(n, 0)
})

test('a time-zone change cannot give a second check-in even when the check-ins race it', async () => {
  const user = await createUser()
  await windowIn(user, 'Pacific/Kiritimati')
  const first = await sql.reserve()
  const second = await sql.reserve()
  try {
    await first`begin`
    await first`select private.record_workout_checkin(${user.id}::uuid, 'walk', 'https://example.test/a.png', null, null, null, null, null, null, null)`
    // Meanwhile the window moves west, and a second check-in starts under the new zone.
    await sql`update public.workout_windows set timezone = 'Pacific/Pago_Pago' where user_id = ${user.id}`
    let settled = false
    const racing =
      second`select private.record_workout_checkin(${user.id}::uuid, 'walk', 'https://example.test/b.png', null, null, null, null, null, null, null)`
        .then(() => 'checked in', (e) => e.code as string)
        .finally(() => settled = true)
    await new Promise((r) => setTimeout(r, 300))
    assert.equal(settled, false, 'the second check-in waits for the first')
    await first`commit`
    assert.equal(await racing, '23505')
  } finally {
    first.release()
    second.release()
  }
  const [{ n }] = await sql`select count(*)::int as n from public.workout_checkins where user_id = ${user.id}`
  assert.equal(n, 1)
})
