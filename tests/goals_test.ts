// /api/goals: the caller's own goals, their check-ins, validation and pagination.
import { strict as assert } from 'node:assert'
import { api, assertError, badTokensFor, clientAs, createUser, sql, test, type TestUser } from './_helpers.ts'

const GOAL_FIELDS = [
  'created_at',
  'description',
  'id',
  'row_version',
  'status',
  'target_date',
  'title',
  'updated_at',
  'user_id',
]
const CHECK_IN_FIELDS = ['created_at', 'goal_id', 'id', 'notes', 'status', 'user_id']

async function newGoal(u: TestUser, body: Record<string, unknown> = { title: 'Run a 10k' }) {
  const res = await api('/api/goals', { token: u.token, body })
  assert.equal(res.status, 201, JSON.stringify(res.body))
  return res.body
}
const goalCount = async (u: TestUser) =>
  (await sql`select count(*)::int as n from public.goals where user_id = ${u.id}`)[0].n
const checkInCount = async (goalId: string) =>
  (await sql`select count(*)::int as n from public.goal_check_ins where goal_id = ${goalId}`)[0].n

test('POST /api/goals: 201 goal; status defaults to active; target_date is a YYYY-MM-DD date', async () => {
  const u = await createUser()
  const g = await newGoal(u, {
    title: '  Read 12 books ',
    description: 'One a month',
    target_date: '2026-12-31',
  })
  assert.deepEqual(Object.keys(g).sort(), GOAL_FIELDS)
  assert.equal(g.user_id, u.id)
  assert.equal(g.title, 'Read 12 books')
  assert.equal(g.description, 'One a month')
  assert.equal(g.target_date, '2026-12-31')
  assert.equal(g.status, 'active')
  const [row] =
    await sql`select status, to_char(target_date, 'YYYY-MM-DD') as target_date from public.goals where id = ${g.id}`
  assert.deepEqual({ ...row }, { status: 'active', target_date: '2026-12-31' })

  const bare = await newGoal(u, { title: 'Just a title' })
  assert.equal(bare.status, 'active')
  assert.equal(bare.target_date, null)
  assert.equal(bare.description, '')
  const leap = await newGoal(u, { title: 'Leap day', target_date: '2028-02-29', status: 'paused' })
  assert.equal(leap.target_date, '2028-02-29')
  assert.equal(leap.status, 'paused')
})

test('POST /api/goals: bad bodies are 400 naming the field; nothing written', async () => {
  const u = await createUser()
  const other = await createUser()
  const cases: [unknown, string][] = [
    [{}, 'title'],
    [{ description: 'no title' }, 'title'],
    [{ title: '' }, 'title'],
    [{ title: '   ' }, 'title'],
    [{ title: 10 }, 'title'],
    [{ title: 't'.repeat(201) }, 'title'],
    [{ title: 'x', description: 5 }, 'description'],
    [{ title: 'x', description: 'd'.repeat(5001) }, 'description'],
    [{ title: 'x', target_date: '2026-02-30' }, 'target_date'],
    [{ title: 'x', target_date: '2027-02-29' }, 'target_date'],
    [{ title: 'x', target_date: '2026-13-01' }, 'target_date'],
    [{ title: 'x', target_date: '2026/12/31' }, 'target_date'],
    [{ title: 'x', target_date: '31-12-2026' }, 'target_date'],
    [{ title: 'x', target_date: '2026-12-31T00:00:00Z' }, 'target_date'],
    [{ title: 'x', target_date: 'tomorrow' }, 'target_date'],
    [{ title: 'x', target_date: 20261231 }, 'target_date'],
    [{ title: 'x', status: '' }, 'status'],
    [{ title: 'x', status: 1 }, 'status'],
    [{ title: 'x', status: 's'.repeat(31) }, 'status'],
    [{ title: 'x', user_id: other.id }, 'user_id'],
    [{ title: 'x', id: 'not-a-uuid' }, 'id'], // a client-chosen id must be a UUID (journal_retry_test)
    [{ title: 'x', priority: 'high' }, 'priority'],
    [['title'], ''],
  ]
  for (const [body, field] of cases) {
    assertError(await api('/api/goals', { token: u.token, body }), 400, field)
  }
  assertError(await api('/api/goals', { token: u.token, rawBody: '{"title":"x"' }), 400, 'Malformed JSON')
  assertError(await api('/api/goals', { token: u.token, method: 'POST' }), 400)
  assert.equal(await goalCount(u), 0)
  assert.equal(await goalCount(other), 0)
})

test('goal endpoints: anonymous and bad tokens are 401 and change nothing', async () => {
  const u = await createUser()
  const g = await newGoal(u)
  const bad = await badTokensFor(u)
  const calls: [string, string, unknown?][] = [
    ['GET', '/api/goals'],
    ['GET', `/api/goals/${g.id}`],
    ['POST', '/api/goals', { title: 'anon' }],
    ['PUT', `/api/goals/${g.id}`, { title: 'anon' }],
    ['DELETE', `/api/goals/${g.id}`],
    ['POST', `/api/goals/${g.id}/check-ins`, { status: 'completed', notes: 'anon' }],
  ]
  for (const [method, path, body] of calls) {
    assertError(await api(path, { method, body }), 401)
    for (const [kind, token] of Object.entries(bad)) {
      assert.equal((await api(path, { method, body, token })).status, 401, `${method} ${path} with ${kind}`)
    }
  }
  assert.equal(await goalCount(u), 1)
  assert.equal(await checkInCount(g.id), 0)
  const [row] = await sql`select title from public.goals where id = ${g.id}`
  assert.equal(row.title, 'Run a 10k')
})

test("GET /api/goals: the caller's goals only, newest first, paginated and filterable by status", async () => {
  const u = await createUser()
  const other = await createUser()
  const made: string[] = []
  for (let i = 0; i < 5; i++) {
    made.push((await newGoal(u, { title: `goal ${i}`, status: i % 2 ? 'done' : 'active' })).id)
  }
  await newGoal(other, { title: 'not yours' })
  const all = await api('/api/goals', { token: u.token })
  assert.equal(all.status, 200)
  assert.deepEqual(Object.keys(all.body).sort(), ['goals', 'next_cursor'])
  assert.deepEqual(all.body.goals.map((g: any) => g.id), [...made].reverse())
  assert.equal(all.body.next_cursor, null)
  assert.deepEqual(Object.keys(all.body.goals[0]).sort(), GOAL_FIELDS)
  assert.ok(all.body.goals.every((g: any) => g.user_id === u.id))

  const seen: string[] = []
  let cursor: string | null = null
  let pages = 0
  do {
    const res: any = await api(`/api/goals?limit=2${cursor ? `&before=${encodeURIComponent(cursor)}` : ''}`, {
      token: u.token,
    })
    assert.equal(res.status, 200)
    assert.ok(res.body.goals.length <= 2)
    seen.push(...res.body.goals.map((g: any) => g.id))
    cursor = res.body.next_cursor
    pages++
  } while (cursor)
  assert.deepEqual(seen, [...made].reverse())
  assert.equal(pages, 3)
  const active = await api('/api/goals?status=active', { token: u.token })
  assert.deepEqual(active.body.goals.map((g: any) => g.id), [made[4], made[2], made[0]])
  assert.deepEqual((await api('/api/goals', { token: (await createUser()).token })).body.goals, [])
  for (const q of ['limit=0', 'limit=101', 'limit=two', 'before=nope', 'status=', 'user_id=' + other.id]) {
    assertError(await api(`/api/goals?${q}`, { token: u.token }), 400, q.split('=')[0])
  }
})

test("GET /api/goals/:id: the goal with its check-ins, newest first; another user's goal is 404 like a missing id", async () => {
  const u = await createUser()
  const other = await createUser()
  const g = await newGoal(u, { title: 'Meditate', target_date: '2026-06-01' })
  const empty = await api(`/api/goals/${g.id}`, { token: u.token })
  assert.equal(empty.status, 200)
  assert.deepEqual(empty.body, { ...g, check_ins: [] })
  const made: string[] = []
  for (const [status, notes] of [['completed', 'day 1'], ['missed', 'sick'], ['completed', 'day 3']]) {
    const res = await api(`/api/goals/${g.id}/check-ins`, { token: u.token, body: { status, notes } })
    assert.equal(res.status, 201, JSON.stringify(res.body))
    made.push(res.body.id)
  }
  const res = await api(`/api/goals/${g.id}`, { token: u.token })
  assert.equal(res.status, 200)
  assert.deepEqual(Object.keys(res.body).sort(), [...GOAL_FIELDS, 'check_ins'].sort())
  assert.equal(res.body.title, 'Meditate')
  assert.equal(res.body.check_ins.length, 3)
  assert.deepEqual(Object.keys(res.body.check_ins[0]).sort(), CHECK_IN_FIELDS)
  assert.deepEqual(res.body.check_ins.map((c: any) => c.id), [...made].reverse())
  assert.deepEqual(res.body.check_ins.map((c: any) => c.notes), ['day 3', 'sick', 'day 1'])
  assert.ok(res.body.check_ins.every((c: any) => c.goal_id === g.id && c.user_id === u.id))

  const hidden = await api(`/api/goals/${g.id}`, { token: other.token })
  const missing = await api(`/api/goals/${crypto.randomUUID()}`, { token: other.token })
  assertError(hidden, 404)
  assert.deepEqual({ status: hidden.status, body: hidden.body }, {
    status: missing.status,
    body: missing.body,
  })
  assertError(await api('/api/goals/goal-1', { token: u.token }), 400, 'id')
  // Check-ins stay private through PostgREST too.
  const direct = await clientAs(other.token).from('goal_check_ins').select('id').eq('goal_id', g.id)
  assert.deepEqual(direct.data, [])
})

test('POST /api/goals/:id/check-ins: own goals only; defaults; bad bodies 400; nothing written', async () => {
  const u = await createUser()
  const other = await createUser()
  const g = await newGoal(u)
  const res = await api(`/api/goals/${g.id}/check-ins`, {
    token: u.token,
    body: { status: 'completed', notes: 'Ran 5k' },
  })
  assert.equal(res.status, 201, JSON.stringify(res.body))
  assert.deepEqual(Object.keys(res.body).sort(), CHECK_IN_FIELDS)
  assert.equal(res.body.goal_id, g.id)
  assert.equal(res.body.user_id, u.id)
  assert.equal(res.body.status, 'completed')
  assert.equal(res.body.notes, 'Ran 5k')
  const defaults = await api(`/api/goals/${g.id}/check-ins`, { token: u.token, body: {} })
  assert.equal(defaults.status, 201)
  assert.equal(defaults.body.status, 'completed')
  assert.equal(defaults.body.notes, '')
  assert.equal(await checkInCount(g.id), 2)

  // Another user's goal: 404, the same as a goal that does not exist.
  const theirs = await api(`/api/goals/${g.id}/check-ins`, {
    token: other.token,
    body: { status: 'completed', notes: 'not mine' },
  })
  const missing = await api(`/api/goals/${crypto.randomUUID()}/check-ins`, {
    token: other.token,
    body: { status: 'completed', notes: 'x' },
  })
  assertError(theirs, 404)
  assert.deepEqual({ status: theirs.status, body: theirs.body }, {
    status: missing.status,
    body: missing.body,
  })
  const direct = await clientAs(other.token).from('goal_check_ins').insert({
    goal_id: g.id,
    status: 'completed',
    notes: 'direct',
  })
  assert.ok(direct.error, "PostgREST refuses a check-in on someone else's goal")

  const cases: [unknown, string][] = [
    [{ status: 5 }, 'status'],
    [{ status: '' }, 'status'],
    [{ status: 's'.repeat(31) }, 'status'],
    [{ notes: ['x'] }, 'notes'],
    [{ notes: 'n'.repeat(5001) }, 'notes'],
    [{ status: 'completed', goal_id: crypto.randomUUID() }, 'goal_id'],
    [{ status: 'completed', user_id: other.id }, 'user_id'],
    ['completed', ''],
  ]
  for (const [body, field] of cases) {
    assertError(await api(`/api/goals/${g.id}/check-ins`, { token: u.token, body }), 400, field)
  }
  assertError(
    await api(`/api/goals/${g.id}/check-ins`, { token: u.token, rawBody: '{"status":' }),
    400,
    'Malformed JSON',
  )
  assertError(
    await api('/api/goals/x/check-ins', { token: u.token, body: { status: 'completed' } }),
    400,
    'id',
  )
  assert.equal(await checkInCount(g.id), 2)
  const [{ n }] = await sql`select count(*)::int as n from public.goal_check_ins where user_id = ${other.id}`
  assert.equal(n, 0)
})

test('PUT /api/goals/:id: the owner updates; others get 404; bad bodies 400 and change nothing', async () => {
  const u = await createUser()
  const other = await createUser()
  const g = await newGoal(u, { title: 'Swim', description: 'laps', target_date: '2026-05-01' })
  await new Promise((r) => setTimeout(r, 5))
  const res = await api(`/api/goals/${g.id}`, {
    method: 'PUT',
    token: u.token,
    body: { status: 'completed', target_date: '2026-07-15' },
  })
  assert.equal(res.status, 200, JSON.stringify(res.body))
  assert.deepEqual(Object.keys(res.body).sort(), GOAL_FIELDS)
  assert.equal(res.body.status, 'completed')
  assert.equal(res.body.target_date, '2026-07-15')
  assert.equal(res.body.title, 'Swim')
  assert.equal(res.body.description, 'laps')
  assert.ok(Date.parse(res.body.updated_at) > Date.parse(g.updated_at))
  const cleared = await api(`/api/goals/${g.id}`, {
    method: 'PUT',
    token: u.token,
    body: { target_date: null, title: 'Swim more' },
  })
  assert.equal(cleared.body.target_date, null)
  assert.equal(cleared.body.title, 'Swim more')
  const snapshot = async () => ({
    ...(await sql`select title, description, status, target_date, user_id from public.goals where id = ${g.id}`)[
      0
    ],
  })
  const before = await snapshot()

  const theirs = await api(`/api/goals/${g.id}`, {
    method: 'PUT',
    token: other.token,
    body: { title: 'mine' },
  })
  const missing = await api(`/api/goals/${crypto.randomUUID()}`, {
    method: 'PUT',
    token: other.token,
    body: { title: 'mine' },
  })
  assertError(theirs, 404)
  assert.deepEqual({ status: theirs.status, body: theirs.body }, {
    status: missing.status,
    body: missing.body,
  })
  const cases: [unknown, string][] = [
    [{}, 'Nothing to update'],
    [{ title: '' }, 'title'],
    [{ title: null }, 'title'],
    [{ description: false }, 'description'],
    [{ target_date: '2026-02-30' }, 'target_date'],
    [{ target_date: '2026-2-3' }, 'target_date'],
    [{ status: '' }, 'status'],
    [{ user_id: other.id }, 'user_id'],
    [{ created_at: '2020-01-01T00:00:00Z' }, 'created_at'],
    [{ check_ins: [] }, 'check_ins'],
  ]
  for (const [body, field] of cases) {
    assertError(await api(`/api/goals/${g.id}`, { method: 'PUT', token: u.token, body }), 400, field)
  }
  assertError(
    await api(`/api/goals/${g.id}`, { method: 'PUT', token: u.token, rawBody: 'status=done' }),
    400,
    'Malformed JSON',
  )
  assertError(await api('/api/goals/7', { method: 'PUT', token: u.token, body: { title: 'x' } }), 400, 'id')
  assert.deepEqual(await snapshot(), before)
})

test('DELETE /api/goals/:id: the owner deletes the goal and its check-ins; others get 404', async () => {
  const u = await createUser()
  const other = await createUser()
  const g = await newGoal(u)
  await api(`/api/goals/${g.id}/check-ins`, { token: u.token, body: { status: 'completed', notes: 'x' } })
  const theirs = await api(`/api/goals/${g.id}`, { method: 'DELETE', token: other.token })
  const missing = await api(`/api/goals/${crypto.randomUUID()}`, { method: 'DELETE', token: other.token })
  assertError(theirs, 404)
  assert.deepEqual({ status: theirs.status, body: theirs.body }, {
    status: missing.status,
    body: missing.body,
  })
  assertError(await api('/api/goals/abc', { method: 'DELETE', token: u.token }), 400, 'id')
  assert.equal(await goalCount(u), 1)

  const res = await api(`/api/goals/${g.id}`, { method: 'DELETE', token: u.token })
  assert.equal(res.status, 200, JSON.stringify(res.body))
  assert.equal(typeof res.body.message, 'string')
  assert.equal(await goalCount(u), 0)
  assert.equal(await checkInCount(g.id), 0)
  assertError(await api(`/api/goals/${g.id}`, { token: u.token }), 404)
  assertError(await api(`/api/goals/${g.id}`, { method: 'DELETE', token: u.token }), 404)
  assertError(
    await api(`/api/goals/${g.id}/check-ins`, { token: u.token, body: { status: 'completed' } }),
    404,
  )
})

test("super admins read any goal but do not check in, edit or delete on the owner's behalf", async () => {
  const u = await createUser()
  const admin = await createUser({ superAdmin: true })
  const g = await newGoal(u, { title: 'Private goal' })
  const read = await api(`/api/goals/${g.id}`, { token: admin.token })
  assert.equal(read.status, 200)
  assert.equal(read.body.title, 'Private goal')
  assertError(
    await api(`/api/goals/${g.id}/check-ins`, { token: admin.token, body: { status: 'completed' } }),
    403,
  )
  assertError(
    await api(`/api/goals/${g.id}`, { method: 'PUT', token: admin.token, body: { title: 'edited' } }),
    403,
  )
  assertError(await api(`/api/goals/${g.id}`, { method: 'DELETE', token: admin.token }), 403)
  assert.equal(await checkInCount(g.id), 0)
  assert.equal(await goalCount(u), 1)
  // The list is the caller's own goals, even for a super admin.
  assert.ok(
    !(await api('/api/goals?limit=100', { token: admin.token })).body.goals.some((x: any) => x.id === g.id),
  )
})
