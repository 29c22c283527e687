// Workout windows over HTTP: setup and locations (validation, privacy), chains, squads, team
// stats and generation (manual, cron, concurrent). Check-ins: workout_checkin_test.ts;
// battles, mosaic and synthetic users: workout_battle_test.ts.
import { strict as assert } from 'node:assert'
import {
  ANON_KEY,
  api,
  API_URL,
  assertError,
  clientAs,
  createUser,
  env,
  SERVICE_ROLE_KEY,
  sql,
  test,
  type TestUser,
} from './_helpers.ts'

const W = '/api/workout-window'

async function setup(user: TestUser, start: string, end: string, tz = 'UTC', activityType = 'cardio') {
  const res = await api(`${W}/setup`, {
    token: user.token,
    body: { activityType, windowStartTime: start, windowEndTime: end, timezone: tz },
  })
  assert.equal(res.status, 200, JSON.stringify(res.body))
  return res.body.window
}

async function place(user: TestUser, body: Record<string, unknown>) {
  const res = await api(`${W}/update-location`, { method: 'PUT', token: user.token, body })
  assert.equal(res.status, 200, JSON.stringify(res.body))
  return res.body.location
}

/** Only these users' windows take part (other tests' windows are paused). */
async function onlyThese(users: TestUser[]) {
  const ids = users.map((u) => u.id)
  await sql`update public.workout_windows set is_active = (user_id = any(${ids}::uuid[]))`
}

const uniqueCity = () => `Town-${crypto.randomUUID().slice(0, 8)}`
const addDays = (date: string, n: number) =>
  new Date(Date.parse(`${date}T00:00:00Z`) + n * 86400_000).toISOString().slice(0, 10)
const todayUtc = () => new Date().toISOString().slice(0, 10)
/** The local date in a time zone. */
const localDate = (tz: string, at = new Date()) =>
  new Intl.DateTimeFormat('en-CA', { timeZone: tz }).format(at)

const usedDates = new Set<string>()
/**
 * A date of its own per test, within the year around today that chain generation accepts (a
 * month or more ahead by default, or as far behind with `past`), cleared of rows other test
 * files may have left, so tests never share a chain day.
 */
async function uniqueDate(o: { past?: boolean } = {}) {
  let date: string
  do date = addDays(todayUtc(), (o.past ? -1 : 1) * (30 + Math.floor(Math.random() * 300)))
  while (usedDates.has(date))
  usedDates.add(date)
  await sql`delete from public.workout_checkins where date = ${date}`
  await sql`delete from public.workout_squads where date = ${date}`
  await sql`delete from public.workout_chains where date = ${date}`
  return date
}

/** POST /rest/v1/rpc/<fn> with a token (a user's, the service role's) or anonymously. */
async function rpc(fn: string, args: Record<string, unknown>, token?: string) {
  const key = token === SERVICE_ROLE_KEY ? SERVICE_ROLE_KEY : ANON_KEY
  const res = await fetch(`${API_URL}/rest/v1/rpc/${fn}`, {
    method: 'POST',
    headers: {
      apikey: key,
      authorization: `Bearer ${token ?? ANON_KEY}`,
      'content-type': 'application/json',
    },
    body: JSON.stringify(args),
  })
  const text = await res.text()
  return { status: res.status, body: text ? JSON.parse(text) : null }
}

test('setup stores one 2-hour window per user; my-window returns it; setting up again replaces it', async () => {
  const user = await createUser()
  const empty = await api(`${W}/my-window`, { token: user.token })
  assert.deepEqual(empty.body, { window: null, location: null })
  const res = await api(`${W}/setup`, {
    token: user.token,
    body: {
      activityType: 'other',
      customActivity: 'Rowing',
      windowStartTime: '23:00',
      windowEndTime: '01:00',
      timezone: 'Europe/Paris',
    },
  })
  assert.equal(res.status, 200, JSON.stringify(res.body))
  assert.equal(typeof res.body.message, 'string')
  assert.equal(res.body.window.custom_activity, 'Rowing')
  assert.equal(res.body.window.window_start_time, '23:00:00')
  assert.equal(res.body.window.window_end_time, '01:00:00')
  await setup(user, '06:30', '08:30', 'America/Chicago', 'walk')
  const mine = await api(`${W}/my-window`, { token: user.token })
  assert.equal(mine.body.window.activity_type, 'walk')
  assert.equal(mine.body.window.custom_activity, null)
  assert.equal(mine.body.window.timezone, 'America/Chicago')
  const [{ n }] = await sql`select count(*)::int as n from public.workout_windows where user_id = ${user.id}`
  assert.equal(n, 1)
})

test('setup: bad input is 400 naming the field, and nothing is stored', async () => {
  const user = await createUser()
  const ok = { activityType: 'cardio', windowStartTime: '06:00', windowEndTime: '08:00', timezone: 'UTC' }
  const cases: [Record<string, unknown>, string][] = [
    [{ ...ok, windowEndTime: '09:00' }, 'windowEndTime'],
    [{ ...ok, windowEndTime: '07:59' }, 'windowEndTime'],
    [{ ...ok, windowStartTime: '24:00' }, 'windowStartTime'],
    [{ ...ok, windowStartTime: '6:00' }, 'windowStartTime'],
    [{ ...ok, activityType: 'swimming' }, 'activityType'],
    [{ ...ok, customActivity: 'Rowing' }, 'customActivity'],
    [{ ...ok, activityType: 'other', customActivity: 'x'.repeat(101) }, 'customActivity'],
    [{ ...ok, timezone: 'Mars/Olympus' }, 'timezone'],
    [{ ...ok, timezone: 'A'.repeat(51) }, 'timezone'],
    [{ ...ok, timezone: undefined }, 'timezone'],
    [{ ...ok, colour: 'red' }, 'colour'],
  ]
  for (const [body, field] of cases) {
    assertError(await api(`${W}/setup`, { token: user.token, body }), 400, field)
  }
  const [{ n }] = await sql`select count(*)::int as n from public.workout_windows where user_id = ${user.id}`
  assert.equal(n, 0)
  assertError(await api(`${W}/setup`, { body: ok }), 401)
  assertError(await api(`${W}/my-window`), 401)
})

test('time zones are IANA names on every write path: POSIX strings (ABC-167) and non-zones are 400, names are stored as IANA spells them', async () => {
  const user = await createUser()
  const db = clientAs(user.token)
  const ok = { activityType: 'cardio', windowStartTime: '10:00', windowEndTime: '12:00' }
  const window = {
    user_id: user.id,
    activity_type: 'cardio',
    window_start_time: '10:00',
    window_end_time: '12:00',
  }
  const restWrite = async (method: string, path: string, body: unknown) => {
    const res = await fetch(`${API_URL}/rest/v1/${path}`, {
      method,
      headers: {
        apikey: ANON_KEY,
        authorization: `Bearer ${user.token}`,
        'content-type': 'application/json',
        prefer: 'return=representation',
      },
      body: JSON.stringify(body),
    })
    return { status: res.status, body: await res.json() }
  }
  // POSIX strings Postgres would take for a zone 167 hours ahead or behind, and names that are no one's zone.
  for (
    const timezone of [
      'ABC-167',
      'ABC+167',
      '<+167>-167',
      'XYZ-12ABC',
      'posixrules',
      'Factory',
      'posix/Europe/Paris',
      'localtime',
    ]
  ) {
    const viaRpc = await rpc('setup_workout_window', {
      activity_type: 'cardio',
      custom_activity: null,
      window_start_time: '10:00',
      window_end_time: '12:00',
      timezone,
    }, user.token)
    assert.equal(viaRpc.status, 400, `${timezone}: ${JSON.stringify(viaRpc.body)}`)
    assert.match(viaRpc.body.message, /^timezone: /)
    assert.equal((await restWrite('POST', 'workout_windows', { ...window, timezone })).status, 400, timezone)
    assert.equal(
      (await restWrite('POST', 'workout_locations', { user_id: user.id, timezone })).status,
      400,
      timezone,
    )
    assertError(await api(`${W}/setup`, { token: user.token, body: { ...ok, timezone } }), 400, 'timezone')
  }
  assert.equal(
    (await sql`select count(*)::int as n from public.workout_windows where user_id = ${user.id}`)[0].n,
    0,
  )

  // Once set up, a PATCH cannot move the zone to a POSIX string either, nor the location's.
  await setup(user, '10:00', '12:00', 'UTC')
  await place(user, { city: 'Lyon', timezone: 'Europe/Paris' })
  for (const timezone of ['ABC+167', 'ABC-167']) {
    const patched = await restWrite('PATCH', `workout_windows?user_id=eq.${user.id}`, { timezone })
    assert.equal(patched.status, 400, JSON.stringify(patched.body))
    assert.match(patched.body.message, /timezone: .* is not an IANA time zone/)
    assert.equal(
      (await restWrite('PATCH', `workout_locations?user_id=eq.${user.id}`, { timezone })).status,
      400,
    )
    assert.equal((await rpc('update_workout_location', { patch: { timezone } }, user.token)).status, 400)
    assertError(
      await api(`${W}/update-location`, { method: 'PUT', token: user.token, body: { timezone } }),
      400,
      'timezone',
    )
  }
  const [stored] = await sql`select w.timezone as window, l.timezone as location from public.workout_windows w
                               join public.workout_locations l using (user_id) where user_id = ${user.id}`
  assert.deepEqual(stored, { window: 'UTC', location: 'Europe/Paris' })

  // IANA names, in any case, are kept as IANA spells them; Etc/GMT-14 (UTC+14) is one.
  const lower = await db.from('workout_windows').update({ timezone: 'america/new_york' }).eq(
    'user_id',
    user.id,
  ).select('timezone').single()
  assert.equal(lower.error, null)
  assert.equal(lower.data!.timezone, 'America/New_York')
  assert.equal((await setup(user, '10:00', '12:00', 'Etc/GMT-14')).timezone, 'Etc/GMT-14')
})

test('update-location: each field optional, kept when absent; bad values are 400; private to the user', async () => {
  const user = await createUser()
  const other = await createUser()
  const admin = await createUser({ superAdmin: true })
  await place(user, { city: 'Lyon', country: 'fr', latitude: 45.76404, longitude: 4.83566 })
  const after = await place(user, { ipAddress: '2001:db8::1', timezone: 'Europe/Paris' })
  assert.equal(after.city, 'Lyon')
  assert.equal(after.country, 'FR')
  assert.equal(Number(after.latitude), 45.76404)
  assert.equal(after.ip_address, '2001:db8::1')
  for (
    const [body, field] of [
      [{ latitude: 90.5 }, 'latitude'],
      [{ longitude: -181 }, 'longitude'],
      [{ latitude: 1.123456789 }, 'latitude'],
      [{ country: 'FRA' }, 'country'],
      [{ ipAddress: '300.1.1.1' }, 'ipAddress'],
      [{ timezone: 'Nowhere/Land' }, 'timezone'],
      [{ city: '' }, 'city'],
      [{ street: 'x' }, 'street'],
      [{}, 'body'],
    ] as const
  ) {
    assertError(await api(`${W}/update-location`, { method: 'PUT', token: user.token, body }), 400, field)
  }
  const [row] =
    await sql`select city, ip_address::text from public.workout_locations where user_id = ${user.id}`
  assert.equal(row.city, 'Lyon')
  // PostgREST: another user sees nothing; a super admin sees it; anonymous is refused.
  const theirs = await clientAs(other.token).from('workout_locations').select('*').eq('user_id', user.id)
  assert.deepEqual(theirs.data, [])
  const adminView = await clientAs(admin.token).from('workout_locations').select('city').eq(
    'user_id',
    user.id,
  )
  assert.deepEqual(adminView.data, [{ city: 'Lyon' }])
  const anon = await clientAs().from('workout_locations').select('*')
  assert.ok(anon.error, 'anon must be refused')
  assert.equal((await api(`${W}/my-window`, { token: other.token })).body.location, null)
})

test('chains: neighbours, team and squad by date; cards carry name and window, never a location', async () => {
  const [a, b, c, d] = await Promise.all([1, 2, 3, 4].map(() => createUser()))
  const city = uniqueCity()
  await sql`update public.profiles set full_name = 'Ann' where id = ${a.id}`
  await setup(a, '06:00', '08:00')
  await setup(b, '08:00', '10:00')
  await setup(c, '10:00', '12:00')
  await setup(d, '07:00', '09:00')
  for (const [u, lng] of [[a, 0], [b, 0.01], [c, 0.02], [d, 0.03]] as const) {
    await place(u, { city, country: 'US', latitude: 10, longitude: lng })
  }
  await onlyThese([a, b, c, d])
  const date = await uniqueDate()
  const admin = await createUser({ superAdmin: true }) // a date a month or more ahead: super admins only
  const run = await api(`${W}/generate-chains`, { token: admin.token, body: { date } })
  assert.equal(run.status, 200, JSON.stringify(run.body))
  assert.deepEqual({ ...run.body, date: undefined }, {
    date: undefined,
    participants: 4,
    created: 4,
    relinked: 0,
    squadsCreated: 2,
  })

  const chainB = await api(`${W}/chain/${date}`, { token: b.token })
  assert.equal(chainB.status, 200, JSON.stringify(chainB.body))
  assert.equal(chainB.body.chain.beforeUser.id, a.id)
  assert.equal(chainB.body.chain.beforeUser.name, 'Ann')
  assert.equal(chainB.body.chain.beforeUser.window.windowStartTime, '06:00')
  assert.equal(chainB.body.chain.currentUser.id, b.id)
  assert.equal(chainB.body.chain.afterUser.id, c.id)
  assert.deepEqual(chainB.body.checkins, [])
  assert.doesNotMatch(JSON.stringify(chainB.body), /latitude|longitude|city|Town-/)
  // Order by start: a 06, d 07, b 08, c 10 → red a, blue d, red b, blue c; squads of two.
  assert.equal(chainB.body.chain.teamColor, 'red')
  const squad = await api(`${W}/squad/${date}`, { token: b.token })
  assert.equal(squad.status, 200)
  assert.deepEqual([squad.body.squad.user1.id, squad.body.squad.user2.id], [a.id, b.id])
  assert.equal(squad.body.squad.user3, null)
  assert.equal(squad.body.squad.teamColor, 'red')

  const chainA = await api(`${W}/chain/${date}`, { token: a.token })
  assert.equal(chainA.body.chain.beforeUser, null)
  assert.equal(
    chainA.body.chain.afterUser.id,
    b.id,
    'd (07-09) ends after b starts: b is the window starting first after 08:00',
  )

  const stats = await api(`${W}/team-stats/${date}`, { token: c.token })
  assert.equal(stats.status, 200)
  assert.equal(stats.body.redTeam.totalMembers, 2)
  assert.equal(stats.body.blueTeam.totalMembers, 2)
  assert.equal(stats.body.redTeam.failed, 0, 'a future date: nothing has failed yet')
  assert.equal(stats.body.redTeam.pending, 2)

  // A second run changes nothing; a stranger without a chain gets 404; bad dates are 400.
  const again = await api(`${W}/generate-chains`, { token: admin.token, body: { date } })
  assert.equal(again.body.created, 0)
  assert.equal(again.body.squadsCreated, 0)
  const stranger = await createUser()
  assertError(await api(`${W}/chain/${date}`, { token: stranger.token }), 404)
  assertError(await api(`${W}/squad/${date}`, { token: stranger.token }), 404)
  for (const bad of ['2040-13-01', '20400101', '2040-02-30', 'today']) {
    assertError(await api(`${W}/chain/${bad}`, { token: a.token }), 400, 'date')
    assertError(await api(`${W}/team-stats/${bad}`, { token: a.token }), 400, 'date')
    assertError(await api(`${W}/checkins/${bad}`, { token: a.token }), 400, 'date')
  }
  assertError(await api(`${W}/generate-chains`, { token: a.token, body: { date: '2040-1-1' } }), 400, 'date')
  assertError(await api(`${W}/chain/${date}`), 401)
  assertError(await api(`${W}/generate-chains`, { body: { date } }), 401)
})

test('team stats: a past window without a check-in has failed', async () => {
  const [a, b] = await Promise.all([createUser(), createUser()])
  const city = uniqueCity()
  for (const u of [a, b]) {
    await setup(u, '06:00', '08:00')
    await place(u, { city })
  }
  await onlyThese([a, b])
  const past = await uniqueDate({ past: true })
  const admin = await createUser({ superAdmin: true })
  await api(`${W}/generate-chains`, { token: admin.token, body: { date: past } })
  const stats = await api(`${W}/team-stats/${past}`, { token: a.token })
  assert.deepEqual(
    [
      stats.body.redTeam.failed + stats.body.blueTeam.failed,
      stats.body.redTeam.completionRate,
      stats.body.redTeam.totalChips,
    ],
    [2, 0, 0],
  )
  const day = await api(`${W}/checkin/${past}`, { token: a.token })
  assert.deepEqual(day.body, { checkin: null, status: 'failed' })
  const list = await api(`${W}/checkins/${past}`, { token: a.token })
  assert.deepEqual(list.body, { checkins: [], stats: { total: 2, completed: 0, failed: 2 } })
})

test('generate-chains: concurrent runs for one date give one row per user', async () => {
  const users = await Promise.all(Array.from({ length: 7 }, () => createUser()))
  const city = uniqueCity()
  for (const [i, u] of users.entries()) {
    await setup(u, `${String(6 + i).padStart(2, '0')}:00`, `${String(8 + i).padStart(2, '0')}:00`)
    await place(u, { city })
  }
  await onlyThese(users)
  const date = await uniqueDate()
  const admins = await Promise.all([1, 2, 3, 4].map(() => createUser({ superAdmin: true })))
  const runs = await Promise.all(
    admins.map((u) => api(`${W}/generate-chains`, { token: u.token, body: { date } })),
  )
  for (const r of runs) assert.equal(r.status, 200, JSON.stringify(r.body))
  assert.equal(runs.reduce((n, r) => n + r.body.created, 0), 7, 'exactly one run created the rows')
  const [{ rows, distinct_users, squads }] = await sql`
    select count(*)::int as rows, count(distinct user_id)::int as distinct_users,
           (select count(*)::int from public.workout_squads where date = ${date}) as squads
      from public.workout_chains where date = ${date}`
  assert.deepEqual({ rows, distinct_users, squads }, { rows: 7, distinct_users: 7, squads: 3 })
})

test('generate-chains in parts: runs of different splits side by side give one row per user and the chains of one call', async () => {
  // 12 users in four cities (so in several buckets), windows an hour apart in each city.
  const users = await Promise.all(Array.from({ length: 12 }, () => createUser()))
  const cities = [uniqueCity(), uniqueCity(), uniqueCity(), uniqueCity()]
  for (const [i, u] of users.entries()) {
    await setup(
      u,
      `${String(6 + (i % 3) * 2).padStart(2, '0')}:00`,
      `${String(8 + (i % 3) * 2).padStart(2, '0')}:00`,
    )
    await place(u, { city: cities[i % 4], latitude: i, longitude: i })
  }
  await onlyThese(users)
  const [together, apart] = [await uniqueDate(), await uniqueDate()]
  const admin = await createUser({ superAdmin: true })
  const part = (date: string, p: number, n: number) =>
    rpc('generate_workout_chains_part', { target: date, part: p, parts: n }, admin.token)
  // Side by side: the whole day, two halves and three thirds of it, all at once.
  const runs = await Promise.all([
    rpc('generate_workout_chains', { target: together }, admin.token),
    part(together, 0, 2),
    part(together, 1, 2),
    part(together, 0, 3),
    part(together, 1, 3),
    part(together, 2, 3),
  ])
  for (const r of runs) assert.equal(r.status, 200, JSON.stringify(r.body))
  assert.equal(
    runs.reduce((n, r) => n + r.body.created, 0),
    12,
    "each user's row was created by exactly one run",
  )
  // The other date in one call: the same neighbours, teams and squads.
  assert.equal((await rpc('generate_workout_chains', { target: apart }, admin.token)).body.created, 12)
  const shape = (date: string) =>
    sql`select c.user_id, c.before_user_id, c.after_user_id, c.team_color,
               (select array[s.user_1_id, s.user_2_id, s.user_3_id] from public.workout_squads s where s.id = c.squad_id) as squad
          from public.workout_chains c where c.date = ${date} order by c.user_id`
  const [a, b] = [await shape(together), await shape(apart)]
  assert.equal(a.length, 12)
  assert.deepEqual(a, b)
  assert.ok(
    a.some((r) => r.squad) && a.some((r) => r.before_user_id),
    'the fixture has squads and neighbours',
  )
  // Parts are for trusted callers; a split must make sense.
  const bad = await part(together, 2, 2)
  assert.deepEqual([bad.status, bad.body.code], [400, '22023'], JSON.stringify(bad.body))
  const byUser = await rpc(
    'generate_workout_chains_part',
    { target: together, part: 0, parts: 2 },
    users[0].token,
  )
  assert.deepEqual([byUser.status, byUser.body.code], [403, '42501'], JSON.stringify(byUser.body))
})

test('cron/generate-chains needs the workout-window secret and generates today', async () => {
  const user = await createUser()
  await setup(user, '06:00', '08:00')
  await onlyThese([user])
  assertError(await api(`${W}/cron/generate-chains`, { method: 'POST' }), 401)
  assertError(
    await api(`${W}/cron/generate-chains`, { method: 'POST', headers: { 'x-cron-secret': 'wrong' } }),
    401,
  )
  assertError(await api(`${W}/cron/generate-chains`, { method: 'POST', token: user.token }), 401)
  const res = await api(`${W}/cron/generate-chains`, {
    method: 'POST',
    headers: { 'x-cron-secret': env('WORKOUT_WINDOW_CRON_SECRET') },
  })
  assert.equal(res.status, 200, JSON.stringify(res.body))
  assert.equal(res.body.date, new Date().toISOString().slice(0, 10))
  const [{ n }] =
    await sql`select count(*)::int as n from public.workout_chains where user_id = ${user.id} and date = ${res.body.date}`
  assert.equal(n, 1)
})

test("generate-chains: a user may generate only today and tomorrow in their window's zone; other dates are for super admins and the service role; absurd dates are 400 everywhere", async () => {
  const user = await createUser()
  const admin = await createUser({ superAdmin: true })
  const tz = 'Pacific/Kiritimati' // UTC+14: the user's today is often the UTC tomorrow
  await setup(user, '06:00', '08:00', tz)
  await place(user, { city: uniqueCity() })
  await onlyThese([user])
  const today = localDate(tz)
  const tomorrow = addDays(today, 1)

  // The user: today (also by default) and tomorrow, through /api and PostgREST.
  const own = await api(`${W}/generate-chains`, { token: user.token, body: {} })
  assert.equal(own.status, 200, JSON.stringify(own.body))
  assert.equal(own.body.date, today, "the default date is today in the user's own zone")
  assert.equal(
    (await api(`${W}/generate-chains`, { token: user.token, body: { date: tomorrow } })).status,
    200,
  )
  assert.equal((await rpc('generate_workout_chains', { target: today }, user.token)).status, 200)
  for (const date of [addDays(today, -1), addDays(today, 2), addDays(today, 200)]) {
    assertError(
      await api(`${W}/generate-chains`, { token: user.token, body: { date } }),
      403,
      'today and tomorrow',
    )
    const viaRest = await rpc('generate_workout_chains', { target: date }, user.token)
    assert.equal(viaRest.status, 403, JSON.stringify(viaRest))
  }
  // Outside the year around today: 400 naming the date, for everyone, on every path.
  for (const date of ['9999-12-31', '0001-01-01', addDays(todayUtc(), 400), addDays(todayUtc(), -400)]) {
    for (const token of [user.token, admin.token]) {
      assertError(await api(`${W}/generate-chains`, { token, body: { date } }), 400, 'date')
      const viaRest = await rpc('generate_workout_chains', { target: date }, token)
      assert.equal(viaRest.status, 400, JSON.stringify(viaRest))
      assert.match(viaRest.body.message, /date/)
    }
    assert.equal((await rpc('generate_workout_chains', { target: date }, SERVICE_ROLE_KEY)).status, 400)
  }
  const [{ n }] =
    await sql`select count(*)::int as n from public.workout_chains where date in ('9999-12-31', '0001-01-01')`
  assert.equal(n, 0)

  // Super admins and the service role: any date within the year.
  const later = await uniqueDate()
  const byAdmin = await api(`${W}/generate-chains`, { token: admin.token, body: { date: later } })
  assert.equal(byAdmin.status, 200, JSON.stringify(byAdmin.body))
  assert.equal(byAdmin.body.created, 1)
  const byAdminRest = await rpc(
    'generate_workout_chains',
    { target: await uniqueDate({ past: true }) },
    admin.token,
  )
  assert.equal(byAdminRest.status, 200, JSON.stringify(byAdminRest))
  const byService = await rpc('generate_workout_chains', { target: await uniqueDate() }, SERVICE_ROLE_KEY)
  assert.equal(byService.status, 200, JSON.stringify(byService))
  // Anonymous: refused on both paths.
  assertError(await api(`${W}/generate-chains`, { body: { date: today } }), 401)
  assert.ok((await rpc('generate_workout_chains', { target: today })).status >= 400)
})

test('a user deleted while chains are being written is never left as a neighbour', async () => {
  // x has a row for the date and has checked in (so a rerun keeps x's links); b joins later,
  // and the rerun links b to x (b's window ends as x's starts) without touching x's row.
  const [x, b] = await Promise.all([createUser(), createUser()])
  const city = uniqueCity()
  await setup(x, '08:00', '10:00')
  await place(x, { city })
  await onlyThese([x])
  const date = await uniqueDate()
  const admin = await createUser({ superAdmin: true })
  assert.equal((await api(`${W}/generate-chains`, { token: admin.token, body: { date } })).body.created, 1)
  await sql`insert into public.workout_checkins (user_id, date, activity_type, photo_url, photo_timestamp, status)
            values (${x.id}, ${date}, 'cardio', 'https://example.test/p.jpg', now(), 'verified')`
  await setup(b, '06:00', '08:00')
  await place(b, { city })
  await onlyThese([x, b])
  const run = await sql.reserve()
  try {
    await run`begin`
    const [{ r }] = await run`select public.generate_workout_chains(${date}::date) as r`
    assert.equal(r.created, 1)
    const [mid] =
      await run`select after_user_id from public.workout_chains where user_id = ${b.id} and date = ${date}`
    assert.equal(mid.after_user_id, x.id, 'the uncommitted run links b to x')
    // x's account is deleted meanwhile: the delete waits for the run, then clears the link.
    let deleted = false
    const deleting = sql`delete from auth.users where id = ${x.id}`.then(() => deleted = true)
    await new Promise((r) => setTimeout(r, 300))
    assert.equal(deleted, false, 'the delete waits while a generation is writing')
    await run`commit`
    await deleting
  } finally {
    run.release()
  }
  const [row] =
    await sql`select after_user_id from public.workout_chains where user_id = ${b.id} and date = ${date}`
  assert.equal(row.after_user_id, null, 'b is not left passing the baton to a deleted user')
})

test('chain rows have no foreign key to their owner, so deletes and generation refuse repeatable read', async () => {
  // Under repeatable read a delete's snapshot may predate a run's rows (the trigger would miss
  // them), and a run's may predate a delete (it would write rows for a deleted user).
  const x = await createUser()
  await setup(x, '08:00', '10:00')
  await place(x, { city: uniqueCity() })
  const date = await uniqueDate()
  const tx = await sql.reserve()
  try {
    for (
      const [what, statement] of [
        ['a generation', () => tx`select public.generate_workout_chains(${date}::date)`],
        ['a delete', () => tx`delete from auth.users where id = ${x.id}`],
      ] as const
    ) {
      await tx`begin isolation level repeatable read`
      const e = await statement().then(() => null, (e) => e)
      await tx`rollback`
      assert.equal(e?.code, '0A000', `${what} at repeatable read is refused`)
    }
  } finally {
    tx.release()
  }
  await onlyThese([x])
  const admin = await createUser({ superAdmin: true })
  assert.equal((await api(`${W}/generate-chains`, { token: admin.token, body: { date } })).body.created, 1)
  await sql`delete from auth.users where id = ${x.id}`
  const [{ n }] = await sql`select count(*)::int as n from public.workout_chains where user_id = ${x.id}`
  assert.equal(n, 0, "at read committed the delete takes the user's chain rows with it")
})
