// Workout battles, the mosaic and synthetic users over HTTP: robot power and daily stats,
// deterministic execution (super admin or cron), history, the mosaic PNG decoded and measured,
// and the super-admin AI-user endpoints with the synthetic check-in job.
import { strict as assert } from 'node:assert'
import { decode } from 'fast-png'
import { api, assertError, createUser, env, sql, test, type TestUser } from './_helpers.ts'

const W = '/api/workout-window'
const cron = () => ({ 'x-cron-secret': env('WORKOUT_WINDOW_CRON_SECRET') })

/** A Monday in a far year, different per test. */
function uniqueMonday(fromYear = 2050) {
  const d = new Date(Date.UTC(fromYear, 0, 1) + Math.floor(Math.random() * 400) * 7 * 86400_000)
  d.setUTCDate(d.getUTCDate() + ((8 - d.getUTCDay()) % 7)) // next Monday (or the same day)
  return d.toISOString().slice(0, 10)
}
const addDays = (date: string, n: number) =>
  new Date(Date.parse(`${date}T00:00:00Z`) + n * 86400_000).toISOString().slice(0, 10)

/** Chains for the users on a date with given teams, and check-ins with given chips (direct SQL fixture). */
async function dayOf(
  date: string,
  rows: { user: TestUser; team: 'red' | 'blue'; chips?: number; status?: string }[],
) {
  for (const r of rows) {
    await sql`insert into public.workout_windows (user_id, activity_type, window_start_time, window_end_time, timezone)
              values (${r.user.id}, 'cardio', '06:00', '08:00', 'UTC') on conflict do nothing`
    await sql`insert into public.workout_chains (date, user_id, team_color) values (${date}, ${r.user.id}, ${r.team})`
    if (r.chips !== undefined) {
      await sql`insert into public.workout_checkins (user_id, date, activity_type, photo_url, photo_timestamp, status, battle_chips_earned)
                values (${r.user.id}, ${date}, 'cardio', 'https://example.test/p.png', now(), ${
        r.status ?? 'verified'
      }, ${r.chips})`
    }
  }
}

test('battle week: team totals, robot power = floor(chips*10 + members*5 + (chips/members)*20), daily stats', async () => {
  const [r1, r2, r3, b1, b2] = await Promise.all([1, 2, 3, 4, 5].map(() => createUser()))
  const monday = uniqueMonday()
  await dayOf(monday, [
    { user: r1, team: 'red', chips: 2 },
    { user: r2, team: 'red', chips: 1 },
    { user: r3, team: 'red' },
    { user: b1, team: 'blue', chips: 4 },
    { user: b2, team: 'blue', chips: 3, status: 'rejected' },
  ])
  await dayOf(addDays(monday, 2), [{ user: r1, team: 'blue', chips: 2 }])
  const res = await api(`${W}/battle/week/${monday}`, { token: r1.token })
  assert.equal(res.status, 200, JSON.stringify(res.body))
  assert.equal(res.body.battle, null, 'no battle generated for that week yet')
  assert.equal(res.body.redTeam.totalChips, 3)
  assert.equal(res.body.redTeam.memberCount, 3)
  assert.equal(res.body.redTeam.robotPower, Math.floor(3 * 10 + 3 * 5 + (3 / 3) * 20))
  assert.equal(
    res.body.blueTeam.totalChips,
    6,
    "b1 4 + r1 2 on Wednesday as blue; b2's rejected 3 do not count",
  )
  assert.equal(res.body.blueTeam.memberCount, 3)
  assert.equal(res.body.blueTeam.robotPower, Math.floor(6 * 10 + 3 * 5 + (6 / 3) * 20))
  assert.equal(res.body.dailyStats.length, 7)
  assert.deepEqual(res.body.dailyStats[0], { date: monday, redTeamChips: 3, blueTeamChips: 4 })
  assert.deepEqual(res.body.dailyStats[2], { date: addDays(monday, 2), redTeamChips: 0, blueTeamChips: 2 })
  assertError(await api(`${W}/battle/week/${addDays(monday, 1)}`, { token: r1.token }), 400, 'Monday')
  assertError(await api(`${W}/battle/week/2050-1-3`, { token: r1.token }), 400, 'weekStartDate')
  assertError(await api(`${W}/battle/week/${monday}`), 401)
})

test('battle execute: super admin or cron only; 3-5 rounds; same result twice; history and user stats', async () => {
  const [red, blue] = await Promise.all([createUser(), createUser()])
  const admin = await createUser({ superAdmin: true })
  const monday = uniqueMonday(2060)
  await dayOf(monday, [{ user: red, team: 'red', chips: 3 }, { user: blue, team: 'blue', chips: 1 }])
  await dayOf(addDays(monday, 1), [{ user: red, team: 'red', chips: 2 }, {
    user: blue,
    team: 'blue',
    chips: 1,
  }])
  assertError(await api(`${W}/battle/execute/${monday}`, { method: 'POST', token: red.token }), 403)
  assertError(await api(`${W}/battle/execute/${monday}`, { method: 'POST' }), 401)
  assertError(
    await api(`${W}/battle/execute/${addDays(monday, 6)}`, { method: 'POST', token: admin.token }),
    400,
    'Monday',
  )

  const first = await api(`${W}/battle/execute/${monday}`, { method: 'POST', token: admin.token })
  assert.equal(first.status, 200, JSON.stringify(first.body))
  const result = first.body.battleResult
  assert.equal(first.body.alreadyExecuted, false)
  assert.ok(result.rounds.length >= 3 && result.rounds.length <= 5)
  assert.equal(result.redRobotPower, Math.floor(5 * 10 + 1 * 5 + 5 * 20))
  assert.equal(result.blueRobotPower, Math.floor(2 * 10 + 1 * 5 + 2 * 20))
  const red_ = result.rounds.reduce((n: number, r: { redDamage: number }) => n + r.redDamage, 0)
  const blue_ = result.rounds.reduce((n: number, r: { blueDamage: number }) => n + r.blueDamage, 0)
  assert.equal(first.body.winner, red_ > blue_ ? 'red' : blue_ > red_ ? 'blue' : 'tie')
  for (const r of result.rounds) {
    assert.ok(r.redDamage <= Math.ceil(result.badGuyPower * 0.4), 'no round exceeds 40% of the opponent')
  }
  assert.equal(first.body.battle.battleStatus, 'completed')

  const second = await api(`${W}/battle/execute/${monday}`, { method: 'POST', headers: cron() })
  assert.equal(second.status, 200)
  assert.equal(second.body.alreadyExecuted, true)
  assert.deepEqual(second.body.battleResult, result)
  assert.equal(second.body.battle.executedAt, first.body.battle.executedAt, 'the second run changes nothing')

  const week = await api(`${W}/battle/week/${monday}`, { token: blue.token })
  assert.equal(week.body.battle.winner, first.body.winner)
  const history = await api(`${W}/battle/history`, { token: red.token })
  assert.equal(history.status, 200)
  assert.ok(history.body.battles.some((b: { weekStartDate: string }) => b.weekStartDate === monday))
  assert.deepEqual(history.body.userStats, {
    totalChipsContributed: 5,
    battlesWon: first.body.winner === 'red' ? 1 : 0,
    longestChain: 2,
  })
  const told = await api('/api/notifications?type=workout.battle_result', { token: blue.token })
  assert.equal(told.body.notifications[0].payload.winner, first.body.winner)
  assertError(await api(`${W}/battle/history?limit=0`, { token: red.token }), 400, 'limit')
})

test("battle cron/generate-weekly: secret required; creates this week's battle once", async () => {
  assertError(await api(`${W}/battle/cron/generate-weekly`, { method: 'POST' }), 401)
  const a = await api(`${W}/battle/cron/generate-weekly`, { method: 'POST', headers: cron() })
  assert.equal(a.status, 200, JSON.stringify(a.body))
  const b = await api(`${W}/battle/cron/generate-weekly`, { method: 'POST', headers: cron() })
  assert.equal(b.body.battle.id, a.body.battle.id)
  assert.equal(b.body.created, false)
  const monday = new Date()
  monday.setUTCDate(monday.getUTCDate() - ((monday.getUTCDay() + 6) % 7))
  assert.equal(a.body.battle.weekStartDate, monday.toISOString().slice(0, 10))
})

test('mosaic: a real PNG, one tile per participant by team and status; regenerating replaces it', async () => {
  const users = await Promise.all([1, 2, 3, 4, 5].map(() => createUser()))
  const admin = await createUser({ superAdmin: true })
  const date = addDays(uniqueMonday(2015), 2) // a past date: windows without check-ins have failed
  await sql`update public.profiles set full_name = 'Tile One' where id = ${users[0].id}`
  await dayOf(date, [
    { user: users[0], team: 'red', chips: 1 },
    { user: users[1], team: 'red' },
    { user: users[2], team: 'blue', chips: 2 },
    { user: users[3], team: 'blue' },
    { user: users[4], team: 'blue', chips: 1 },
  ])
  assertError(await api(`${W}/mosaic/${date}`, { token: users[0].token }), 404)
  assertError(await api(`${W}/mosaic/generate/${date}`, { method: 'POST', token: users[0].token }), 403)
  const made = await api(`${W}/mosaic/generate/${date}`, { method: 'POST', token: admin.token })
  assert.equal(made.status, 200, JSON.stringify(made.body))
  assert.equal(typeof made.body.message, 'string')
  const got = await api(`${W}/mosaic/${date}`, { token: users[3].token })
  const mosaic = got.body.mosaic
  assert.deepEqual(mosaic.stats, { totalParticipants: 5, completed: 3, failed: 2, pending: 0 })
  assert.equal(mosaic.sections.length, 5)
  assert.equal(mosaic.sections.find((s: { userId: string }) => s.userId === users[0].id).userName, 'Tile One')

  const png = decode(new Uint8Array(await (await fetch(mosaic.imageUrl)).arrayBuffer()))
  // Three on the larger team: 2 columns x 2 rows per panel, 24px tiles, 2px gaps, 8px between.
  assert.equal(png.width, 2 * (2 + 2 * 26) + 8)
  assert.equal(png.height, 2 + 2 * 26)
  const colour = (
    x: number,
    y: number,
  ) => [...png.data.slice((y * png.width + x) * png.channels, (y * png.width + x) * png.channels + 3)]
  const expected: Record<string, number[]> = {
    'red/completed': [229, 57, 53],
    'red/failed': [93, 26, 26],
    'blue/completed': [30, 136, 229],
    'blue/failed': [13, 42, 77],
  }
  for (const s of mosaic.sections) {
    const { x, y, width, height } = s.coordinates
    assert.deepEqual(
      colour(x + width / 2, y + height / 2),
      expected[`${s.teamColor}/${s.status}`],
      `${s.teamColor}/${s.status}`,
    )
    if (s.teamColor === 'red') assert.ok(x < png.width / 2, 'red tiles on the left')
    else assert.ok(x > png.width / 2, 'blue tiles on the right')
  }
  assert.deepEqual(colour(0, 0), [245, 245, 245], 'background between tiles')

  // Regenerate through the cron secret: same date, new image, the old object deleted.
  await sql`update public.workout_checkins set status = 'rejected' where user_id = ${
    users[0].id
  } and date = ${date}`
  const again = await api(`${W}/mosaic/generate/${date}`, { method: 'POST', headers: cron() })
  assert.equal(again.status, 200, JSON.stringify(again.body))
  assert.notEqual(again.body.mosaic.imageUrl, mosaic.imageUrl)
  assert.deepEqual(again.body.mosaic.stats, { totalParticipants: 5, completed: 2, failed: 3, pending: 0 })
  assert.equal((await fetch(mosaic.imageUrl)).status, 404)
  const [{ n }] = await sql`select count(*)::int as n from public.workout_mosaics where date = ${date}`
  assert.equal(n, 1)
  assertError(
    await api(`${W}/mosaic/generate/2015-02-30`, { method: 'POST', token: admin.token }),
    400,
    'date',
  )
})

test('AI users: super admin generates in bulk with SPEC defaults; list, toggle, teams, delete (AI only)', async () => {
  const admin = await createUser({ superAdmin: true })
  const user = await createUser()
  const G = `${W}/admin/ai-users`
  const before = (await sql`select count(*)::int as n from public.workout_ai_users`)[0].n
  assertError(await api(`${G}/generate`, { token: user.token, body: { count: 2 } }), 403)
  assertError(await api(`${G}/generate`, { body: { count: 2 } }), 401)
  for (
    const [body, field] of [
      [{ count: 0 }, 'count'],
      [{ count: 1001 }, 'count'],
      [{ count: 2.5 }, 'count'],
      [{}, 'count'],
      [{ count: 2, config: { regions: { Atlantis: 10 } } }, 'Atlantis'],
      [{ count: 2, config: { activities: { cardio: -1 } } }, 'activities'],
      [{ count: 2, config: { windows: { '25:00': 1 } } }, '25:00'],
      [{ count: 2, config: { checkInProbability: 2 } }, 'checkInProbability'],
      [{ count: 2, config: { colour: 'red' } }, 'colour'],
    ] as const
  ) {
    assertError(await api(`${G}/generate`, { token: admin.token, body }), 400, field)
  }
  assert.equal(
    (await sql`select count(*)::int as n from public.workout_ai_users`)[0].n,
    before,
    'bad requests created nobody',
  )

  const made = await api(`${G}/generate`, { token: admin.token, body: { count: 40 } })
  assert.equal(made.status, 201, JSON.stringify(made.body))
  assert.equal(made.body.created, 40)
  assert.equal(made.body.failed, 0)
  assert.deepEqual(made.body.errors, [])
  assert.equal(made.body.users.length, 40)
  const regions = new Set(made.body.users.map((u: { region: string }) => u.region))
  for (const r of regions) {
    assert.ok(['West Coast', 'East Coast', 'Midwest', 'South', 'Mountain West'].includes(r as string))
  }
  assert.ok(regions.size >= 3, 'the default distribution spreads users over regions')
  for (const u of made.body.users) {
    assert.equal(u.isAi, true)
    assert.equal(u.checkInProbability, 0.85)
    assert.match(u.windowStartTime, /^(06|08|12|14|16|18):00$/)
  }
  const ids = made.body.users.map((u: { id: string }) => u.id)
  const [{ profiles, windows, locations }] = await sql`
    select (select count(*)::int from public.profiles where id = any(${ids}::uuid[]) and is_ai and full_name is not null) as profiles,
           (select count(*)::int from public.workout_windows where user_id = any(${ids}::uuid[]) and is_active) as windows,
           (select count(*)::int from public.workout_locations where user_id = any(${ids}::uuid[]) and city is not null) as locations`
  assert.deepEqual({ profiles, windows, locations }, { profiles: 40, windows: 40, locations: 40 })

  const custom = await api(`${G}/generate`, {
    token: admin.token,
    body: {
      count: 5,
      config: {
        regions: { Midwest: 1 },
        activities: { reading: 1 },
        windows: { '07:30': 1 },
        checkInProbability: 1,
      },
    },
  })
  assert.deepEqual(new Set(custom.body.users.map((u: { region: string }) => u.region)), new Set(['Midwest']))
  assert.ok(
    custom.body.users.every((u: { windowStartTime: string; activityType: string }) =>
      u.windowStartTime === '07:30' && u.activityType === 'reading'
    ),
  )

  const list = await api(G, { token: admin.token })
  assert.equal(list.status, 200)
  assert.equal(list.body.users.length, before + 45)
  assertError(await api(G, { token: user.token }), 403)

  const target = ids[0]
  const off = await api(`${G}/${target}/toggle`, {
    method: 'PUT',
    token: admin.token,
    body: { isActive: false },
  })
  assert.equal(off.status, 200, JSON.stringify(off.body))
  assert.equal(off.body.user.isActive, false)
  const [{ is_active }] = await sql`select is_active from public.workout_windows where user_id = ${target}`
  assert.equal(is_active, false, 'a paused synthetic user is not matched')
  assertError(
    await api(`${G}/${target}/toggle`, { method: 'PUT', token: admin.token, body: { isActive: 'no' } }),
    400,
    'isActive',
  )
  assertError(
    await api(`${G}/${user.id}/toggle`, { method: 'PUT', token: admin.token, body: { isActive: true } }),
    404,
  )

  // Teams of a date (within the year chain generation accepts): synthetic users are matched like everyone.
  const date = addDays(new Date().toISOString().slice(0, 10), 30 + Math.floor(Math.random() * 300))
  await sql`delete from public.workout_chains where date = ${date}`
  await sql`delete from public.workout_squads where date = ${date}`
  assertError(await api(`${W}/generate-chains`, { token: user.token, body: { date } }), 403)
  const generated = await api(`${W}/generate-chains`, { token: admin.token, body: { date } })
  assert.equal(generated.status, 200, JSON.stringify(generated.body))
  const teams = await api(`${W}/admin/teams/${date}`, { token: admin.token })
  assert.equal(teams.status, 200, JSON.stringify(teams.body))
  const [{ active }] = await sql`select count(*)::int as active from public.workout_ai_users where is_active`
  assert.equal(
    teams.body.redTeam.aiMembers + teams.body.blueTeam.aiMembers,
    active,
    'every active synthetic user is on a team',
  )
  assert.ok(teams.body.redTeam.squads.length > 0)
  assertError(await api(`${W}/admin/teams/${date}`, { token: user.token }), 403)

  // Delete: a real user is 404 and untouched; a synthetic one goes with all its data.
  assertError(await api(`${G}/${user.id}`, { method: 'DELETE', token: admin.token }), 404)
  assert.equal((await sql`select count(*)::int as n from auth.users where id = ${user.id}`)[0].n, 1)
  const victim = ids[1]
  const del = await api(`${G}/${victim}`, { method: 'DELETE', token: admin.token })
  assert.equal(del.status, 200, JSON.stringify(del.body))
  const [{ left }] = await sql`
    select (select count(*) from auth.users where id = ${victim}) + (select count(*) from public.profiles where id = ${victim})
         + (select count(*) from public.workout_windows where user_id = ${victim})
         + (select count(*) from public.workout_chains where user_id = ${victim})
         + (select count(*) from public.workout_ai_users where user_id = ${victim}) as left`
  assert.equal(Number(left), 0)
  assertError(await api(`${G}/${victim}`, { method: 'DELETE', token: admin.token }), 404)
  assertError(await api(`${G}/${ids[2]}`, { method: 'DELETE', token: user.token }), 403)

  // The synthetic check-in job: users with probability 1 check in (once) during their window.
  const windowMid = new Date(`${date}T07:30:00Z`)
  await sql`update public.workout_ai_users set timezone = 'UTC' where user_id = any(${
    custom.body.users.map((u: { id: string }) => u.id)
  }::uuid[])`
  await sql`update public.workout_windows set timezone = 'UTC', window_start_time = '07:00', window_end_time = '09:00'
             where user_id = any(${custom.body.users.map((u: { id: string }) => u.id)}::uuid[])`
  const late = new Date(windowMid.getTime() + 80 * 60_000) // 08:50, after every drawn minute (< 110)
  const [{ run1 }] = await sql`select private.run_workout_jobs(${late.toISOString()}::timestamptz) as run1`
  const [{ run2 }] = await sql`select private.run_workout_jobs(${late.toISOString()}::timestamptz) as run2`
  assert.ok(run1.aiCheckins >= 5, JSON.stringify(run1))
  assert.equal(run2.aiCheckins, 0, 'a second run adds nothing')
  const [{ n }] = await sql`select count(*)::int as n from public.workout_checkins
                             where date = ${date} and user_id = any(${
    custom.body.users.map((u: { id: string }) => u.id)
  }::uuid[])`
  assert.equal(n, 5)
})
