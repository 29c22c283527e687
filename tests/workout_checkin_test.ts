// Workout check-ins over HTTP: photos with EXIF (inside, outside, none), wrong and oversized
// files, one per day (also concurrently, without keeping refused photos), chips and the
// baton pass, the day status, the review queue and the notifications inbox.
import { strict as assert } from 'node:assert'
import { API_URL, api, assertError, createUser, sql, test, type TestUser } from './_helpers.ts'
import { exifTime, hhmm, jpegWithExif, middayZone, offsetText, plainPng } from './workout_photos.ts'

const W = '/api/workout-window'

/** POSTs a multipart check-in. */
async function checkin(user: TestUser | null, fields: Record<string, string | Blob>) {
  const form = new FormData()
  for (const [k, v] of Object.entries(fields)) form.append(k, v)
  const res = await fetch(`${API_URL}/functions/v1${W}/checkin`, {
    method: 'POST',
    headers: user ? { authorization: `Bearer ${user.token}` } : {},
    body: form,
  })
  const text = await res.text()
  return { status: res.status, body: text ? JSON.parse(text) : null, headers: res.headers }
}

const photo = (bytes: Uint8Array, type = 'image/jpeg', name = 'p.jpg') => new File([bytes as Uint8Array<ArrayBuffer>], name, { type })

/** A user whose window (in a zone where it is about midday) started `startedMinutesAgo` ago. */
async function userInWindow(startedMinutesAgo = 10, where = { lat: 10, lng: 20 }) {
  const user = await createUser()
  const zone = middayZone()
  const start = new Date(zone.local.getTime() - startedMinutesAgo * 60_000)
  const end = new Date(start.getTime() + 2 * 3600_000)
  const res = await api(`${W}/setup`, {
    token: user.token,
    body: { activityType: 'cardio', windowStartTime: hhmm(start), windowEndTime: hhmm(end), timezone: zone.tz },
  })
  assert.equal(res.status, 200, JSON.stringify(res.body))
  await api(`${W}/update-location`, { method: 'PUT', token: user.token, body: { latitude: where.lat, longitude: where.lng, city: `C-${user.id}` } })
  return { user, zone }
}

const objectsOf = async (user: TestUser) =>
  (await sql`select count(*)::int as n from storage.objects where bucket_id = 'workout-checkins' and name like ${user.id + '/%'}`)[0].n

test('check-in with EXIF inside the window and near: verified; the photo is public; a second is 409 and not kept', async () => {
  const { user, zone } = await userInWindow(10)
  const jpeg = jpegWithExif({ taken: exifTime(zone.local), offset: offsetText(zone.offsetHours), gps: { lat: 10.01, lng: 20.01 } })
  const res = await checkin(user, { photo: photo(jpeg), activityType: 'Cardio', latitude: '10.0001', longitude: '20.0001' })
  assert.equal(res.status, 201, JSON.stringify(res.body))
  assert.equal(res.body.checkin.status, 'verified')
  assert.equal(res.body.checkin.reviewReason, null)
  assert.equal(res.body.checkin.date, zone.date)
  assert.equal(res.body.chainStatus, 'broken')
  assert.equal(res.body.battleChipsEarned, 1, '1 + 0.5 (first 30 minutes) floors to 1')
  assert.equal(res.body.nextUserNotified, false)
  assert.equal(Math.abs(Date.parse(res.body.checkin.photoTimestamp) - Date.now()) < 120_000, true, 'EXIF time with its offset is now')
  assert.equal(res.body.checkin.locationLat, 10.01, 'the photo\'s GPS position is kept')
  assert.match(res.body.checkin.photoUrl, new RegExp(`/storage/v1/object/public/workout-checkins/${user.id}/`))
  const stored = await fetch(res.body.checkin.photoUrl)
  assert.equal(stored.status, 200)
  assert.deepEqual(new Uint8Array(await stored.arrayBuffer()), jpeg)

  const again = await checkin(user, { photo: photo(jpeg), activityType: 'Cardio' })
  assertError(again, 409, 'already checked in')
  assert.equal(await objectsOf(user), 1, 'the refused check-in\'s photo is not kept')

  const day = await api(`${W}/checkin/${zone.date}`, { token: user.token })
  assert.equal(day.body.status, 'completed')
  assert.equal(day.body.checkin.id, res.body.checkin.id)
})

test('concurrent check-ins of one user: one 201, the others 409, one photo kept', async () => {
  const { user } = await userInWindow(40)
  const results = await Promise.all([1, 2, 3].map(() => checkin(user, { photo: photo(plainPng(), 'image/png', 'p.png'), activityType: 'walk' })))
  assert.deepEqual(results.map((r) => r.status).sort(), [201, 409, 409], JSON.stringify(results.map((r) => r.body)))
  const [{ n }] = await sql`select count(*)::int as n from public.workout_checkins where user_id = ${user.id}`
  assert.equal(n, 1)
  assert.equal(await objectsOf(user), 1)
})

test('EXIF outside the window, or none, or far away: pending with the reason (never refused)', async () => {
  const outside = await userInWindow(10)
  const sixHoursAgo = new Date(outside.zone.local.getTime() - 6 * 3600_000)
  const a = await checkin(outside.user, {
    photo: photo(jpegWithExif({ taken: exifTime(sixHoursAgo), offset: offsetText(outside.zone.offsetHours) })),
    activityType: 'cardio',
  })
  assert.equal(a.status, 201, JSON.stringify(a.body))
  assert.equal(a.body.checkin.status, 'pending')
  assert.match(a.body.checkin.reviewReason, /outside the window/)

  const none = await userInWindow(10)
  const b = await checkin(none.user, { photo: photo(plainPng(), 'image/png', 'p.png'), activityType: 'cardio' })
  assert.equal(b.status, 201)
  assert.equal(b.body.checkin.status, 'pending')
  assert.equal(b.body.checkin.reviewReason, 'no capture time (EXIF) in the photo')

  // Without an offset, the camera's wall clock is read in the window's zone.
  const local = await userInWindow(10)
  const c = await checkin(local.user, { photo: photo(jpegWithExif({ taken: exifTime(local.zone.local) })), activityType: 'cardio' })
  assert.equal(c.body.checkin.status, 'verified', JSON.stringify(c.body))

  const far = await userInWindow(10)
  const d = await checkin(far.user, {
    photo: photo(jpegWithExif({ taken: exifTime(far.zone.local), offset: offsetText(far.zone.offsetHours), gps: { lat: -40, lng: 100 } })),
    activityType: 'cardio',
  })
  assert.equal(d.body.checkin.status, 'pending')
  assert.match(d.body.checkin.reviewReason, /km from your location/)
})

test('check-in: wrong, disguised, oversized or missing files and bad fields are 400; nothing stored', async () => {
  const { user } = await userInWindow(10)
  const text = new TextEncoder().encode('not an image at all')
  const cases: [Record<string, string | Blob>, string][] = [
    [{ photo: photo(text, 'image/jpeg'), activityType: 'cardio' }, 'photo'],
    [{ photo: photo(plainPng(), 'image/jpeg'), activityType: 'cardio' }, 'photo'],
    [{ photo: photo(new Uint8Array(10 * 1024 * 1024 + 1).fill(0xff)), activityType: 'cardio' }, 'photo'],
    [{ photo: photo(new Uint8Array(0)), activityType: 'cardio' }, 'photo'],
    [{ photo: 'just a string', activityType: 'cardio' }, 'photo'],
    [{ activityType: 'cardio' }, 'photo'],
    [{ photo: photo(plainPng(), 'image/png') }, 'activityType'],
    [{ photo: photo(plainPng(), 'image/png'), activityType: 'x'.repeat(51) }, 'activityType'],
    [{ photo: photo(plainPng(), 'image/png'), activityType: 'cardio', latitude: '91', longitude: '0' }, 'latitude'],
    [{ photo: photo(plainPng(), 'image/png'), activityType: 'cardio', latitude: '1' }, 'latitude'],
    [{ photo: photo(plainPng(), 'image/png'), activityType: 'cardio', longitude: 'east', latitude: '1' }, 'longitude'],
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
  assertError(await checkin(newcomer, { photo: photo(plainPng(), 'image/png'), activityType: 'cardio' }), 400, 'window')
  assert.equal(await objectsOf(newcomer), 0)
  assertError(await checkin(null, { photo: photo(plainPng(), 'image/png'), activityType: 'cardio' }), 401)
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
      body: { activityType: 'walk', windowStartTime: hhmm(s), windowEndTime: hhmm(new Date(s.getTime() + 2 * 3600_000)), timezone: zone.tz },
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
  assert.ok(queue.body.checkins.some((k: { id: string; user: { id: string } }) => k.id === id && k.user.id === user.id))
  assertError(await api(`${W}/admin/checkins`, { token: user.token }), 403)
  assertError(await api(`${W}/admin/checkins`), 401)
  assertError(await api(`${W}/admin/checkins?status=lost`, { token: admin.token }), 400, 'status')
  assertError(await api(`${W}/admin/checkins/${id}/verify`, { token: user.token, body: {} }), 403)
  assertError(await api(`${W}/admin/checkins/${id}/reject`, { token: admin.token, body: {} }), 400, 'reason')
  assertError(await api(`${W}/admin/checkins/${crypto.randomUUID()}/verify`, { token: admin.token, body: {} }), 404)
  assertError(await api(`${W}/admin/checkins/not-a-uuid/verify`, { token: admin.token, body: {} }), 400, 'id')

  const verified = await api(`${W}/admin/checkins/${id}/verify`, { token: admin.token, body: {} })
  assert.equal(verified.status, 200, JSON.stringify(verified.body))
  assert.equal(verified.body.checkin.status, 'verified')
  const rejected = await api(`${W}/admin/checkins/${id}/reject`, { token: admin.token, body: { reason: 'a screenshot' } })
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
  assert.deepEqual((await api(`${W}/checkin/${zone.date}`, { token: user.token })).body, { checkin: null, status: 'not_started' })
  const during = await userInWindow(10)
  assert.deepEqual((await api(`${W}/checkin/${zone.date}`, { token: during.user.token })).body, { checkin: null, status: 'pending' })
  assertError(await api(`${W}/checkin/2026-02-31`, { token: user.token }), 400, 'date')
  assertError(await api(`${W}/checkin/${zone.date}`), 401)
})
