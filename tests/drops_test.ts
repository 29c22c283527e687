// The drops endpoints: balance, history with pagination, monthly awards, the cron route.
import { strict as assert } from 'node:assert'
import { api, assertError, clientAs, createUser, env, SERVICE_ROLE_KEY, sql, test } from './_helpers.ts'

const cronHeaders = () => ({ 'x-cron-secret': env('DROPS_CRON_SECRET') })

test('balance starts at the 50-drop signup bonus; history shows it', async () => {
  const user = await createUser()
  const bal = await api('/api/drops/balance', { token: user.token })
  assert.deepEqual(bal.body, { balance: 50 })
  const history = await api('/api/drops/transactions', { token: user.token })
  assert.equal(history.status, 200)
  assert.equal(history.body.transactions.length, 1)
  assert.equal(history.body.transactions[0].type, 'signup_bonus')
  assert.equal(history.body.transactions[0].amount, 50)
  assert.equal(history.body.next_cursor, null)
})

test("history is newest first, paginated by cursor, filterable by type, and only the caller's", async () => {
  const user = await createUser()
  const other = await createUser()
  for (let i = 1; i <= 7; i++) {
    await sql`select public.admin_adjust_drops(${user.id}, ${i}, ${'grant ' + i}, 'test')`
  }
  const seen: number[] = []
  let cursor: string | null = null
  let pages = 0
  do {
    const q: string = `/api/drops/transactions?limit=3${cursor ? `&before=${cursor}` : ''}`
    const res = await api(q, { token: user.token })
    assert.equal(res.status, 200, JSON.stringify(res.body))
    seen.push(...res.body.transactions.map((t: { amount: number }) => t.amount))
    cursor = res.body.next_cursor
    pages++
  } while (cursor)
  assert.deepEqual(seen, [7, 6, 5, 4, 3, 2, 1, 50])
  assert.equal(pages, 3)
  const grants = await api('/api/drops/transactions?type=admin_adjustment&limit=100', { token: user.token })
  assert.equal(grants.body.transactions.length, 7)
  assert.equal(grants.body.transactions[0].reason, 'grant 7')
  assert.equal(grants.body.transactions[0].source, 'test')
  const theirs = await api('/api/drops/transactions', { token: other.token })
  assert.deepEqual(theirs.body.transactions.map((t: { type: string }) => t.type), ['signup_bonus'])
  assert.deepEqual((await api('/api/drops/balance', { token: user.token })).body, { balance: 78 })
})

test('history: bad limit, cursor or type are 400 naming the parameter', async () => {
  const user = await createUser()
  for (
    const [q, field] of [
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['limit=abc', 'limit'],
      ['limit=2.5', 'limit'],
      ['before=garbage', 'before'],
      ['before=' + btoa('["2026-01-01T00:00:00Z","1 or 1=1"]'), 'before'],
      ['type=gift', 'type'],
      ['sort=asc', 'sort'],
    ]
  ) {
    assertError(await api(`/api/drops/transactions?${q}`, { token: user.token }), 400, field)
  }
})

test('drops endpoints need a signed-in user', async () => {
  assertError(await api('/api/drops/balance'), 401)
  assertError(await api('/api/drops/transactions'), 401)
  assertError(await api('/api/drops/award-monthly', { method: 'POST' }), 401)
})

test('POST award-monthly awards the caller once this month: 30, or 250 when premium', async () => {
  const user = await createUser()
  const premium = await createUser()
  await sql`insert into public.subscriptions (user_id, status) values (${premium.id}, 'active')`
  const first = await api('/api/drops/award-monthly', { method: 'POST', token: user.token })
  assert.equal(first.status, 200)
  assert.equal(first.body.awarded, true)
  assert.equal(first.body.amount, 30)
  assert.equal(first.body.balance, 80)
  assert.match(first.body.month, /^\d{4}-\d{2}$/)
  const second = await api('/api/drops/award-monthly', { method: 'POST', token: user.token })
  assert.equal(second.body.awarded, false)
  assert.equal(second.body.balance, 80)
  const p = await api('/api/drops/award-monthly', { method: 'POST', token: premium.token })
  assert.equal(p.body.amount, 250)
  assert.equal(p.body.balance, 300)
})

test('cron award-monthly-all: wrong or missing secret is refused and awards nothing', async () => {
  const user = await createUser()
  const admin = await createUser({ superAdmin: true })
  for (
    const headers of [{}, { 'x-cron-secret': 'wrong' }, { 'x-cron-secret': '' }] as Record<string, string>[]
  ) {
    assertError(await api('/api/drops/cron/award-monthly-all', { method: 'POST', headers }), 401)
  }
  // With DROPS_CRON_SECRET configured, bearer tokens do not replace it.
  assertError(await api('/api/drops/cron/award-monthly-all', { method: 'POST', token: admin.token }), 401)
  assertError(
    await api('/api/drops/cron/award-monthly-all', { method: 'POST', token: SERVICE_ROLE_KEY }),
    401,
  )
  const [{ n }] =
    await sql`select count(*)::int as n from public.monthly_drop_awards where user_id = ${user.id}`
  assert.equal(n, 0)
})

test('cron award-monthly-all: two concurrent runs award each user exactly once', async () => {
  const users = await Promise.all(Array.from({ length: 5 }, () => createUser()))
  const [a, b] = await Promise.all([
    api('/api/drops/cron/award-monthly-all', { method: 'POST', headers: cronHeaders() }),
    api('/api/drops/cron/award-monthly-all', { method: 'POST', headers: cronHeaders() }),
  ])
  assert.equal(a.status, 200, JSON.stringify(a.body))
  assert.equal(b.status, 200, JSON.stringify(b.body))
  const [{ total }] = await sql`select count(*)::int as total from public.profiles`
  // Every user was either awarded by one run or skipped by it.
  assert.equal(a.body.awarded + a.body.skipped, total)
  assert.equal(b.body.awarded + b.body.skipped, total)
  const rows = await sql`select user_id, count(*)::int as n from public.drops_transactions
                         where type = 'monthly_recurring' and created_at >= date_trunc('month', now())
                         group by user_id having count(*) > 1`
  assert.equal(rows.length, 0, JSON.stringify(rows))
  for (const u of users) {
    const [r] = await sql`select drops_balance from public.profiles where id = ${u.id}`
    assert.equal(r.drops_balance, 80)
  }
  const third = await api('/api/drops/cron/award-monthly-all', { method: 'POST', headers: cronHeaders() })
  assert.equal(third.body.awarded, 0)
  assert.equal(third.body.skipped, total)
  // The invariant: every stored balance equals the sum of its ledger.
  const drift = await sql`select p.id from public.profiles p
                          where p.drops_balance <> (select coalesce(sum(amount), 0) from public.drops_transactions t where t.user_id = p.id)`
  assert.equal(drift.length, 0, JSON.stringify(drift))
})

test('award_monthly_drops_chunk: chunks in id order; a run killed halfway and a new run award each user once', async () => {
  const users = await Promise.all(Array.from({ length: 7 }, () => createUser()))
  const inactive = await createUser()
  await sql`update public.profiles set is_active = false where id = ${inactive.id}`
  // The first run: three chunks of 2, then it is "killed" (never called again).
  let after: string | null = null
  for (let i = 0; i < 3; i++) {
    const [r]: any = await sql`select * from public.award_monthly_drops_chunk(${after}::uuid, 2)`
    assert.equal(r.awarded + r.skipped, 2)
    assert.ok(r.last_id && (!after || r.last_id > after), 'the cursor moves forward in id order')
    after = r.last_id
  }
  // A new run from the start completes the month.
  after = null
  let chunks = 0
  do {
    const [r]: any = await sql`select * from public.award_monthly_drops_chunk(${after}::uuid, 5)`
    after = r.last_id
    chunks++
  } while (after)
  assert.ok(chunks >= 2)
  const month = sql`date_trunc('month', now() at time zone 'UTC')::date`
  const twice = await sql`select user_id from public.monthly_drop_awards where award_month = ${month}
                          group by user_id having count(*) > 1
                          union all
                          select user_id from public.drops_transactions where type = 'monthly_recurring'
                             and created_at >= date_trunc('month', now()) group by user_id having count(*) > 1`
  assert.equal(twice.length, 0, JSON.stringify(twice))
  for (const u of users) {
    const [r] = await sql`select p.drops_balance, a.amount from public.profiles p
                            left join public.monthly_drop_awards a on a.user_id = p.id and a.award_month = ${month}
                           where p.id = ${u.id}`
    assert.deepEqual([r.drops_balance, r.amount], [80, 30])
  }
  const [none] =
    await sql`select count(*)::int as n from public.monthly_drop_awards where user_id = ${inactive.id}`
  assert.equal(none.n, 0, 'inactive users are skipped')
  const drift = await sql`select p.id from public.profiles p
                          where p.drops_balance <> (select coalesce(sum(amount), 0) from public.drops_transactions t where t.user_id = p.id)`
  assert.equal(drift.length, 0, JSON.stringify(drift))
  // Two walkers sharing the id range at a bound (until_id inclusive, after_id exclusive) see every user once.
  const [{ mid, total }] =
    await sql`select (array_agg(id order by id))[count(*) / 2] as mid, count(*)::int as total from public.profiles`
  let seenByWalkers = 0
  for (const [start, until] of [[null, mid], [mid, null]]) {
    let cursor: string | null = start
    do {
      const [r]: any =
        await sql`select * from public.award_monthly_drops_chunk(${cursor}::uuid, 3, ${until}::uuid)`
      seenByWalkers += r.awarded + r.skipped
      cursor = r.last_id
    } while (cursor)
  }
  assert.ok(seenByWalkers >= total, `${seenByWalkers} of ${total}`)
  // Only trusted callers; chunk sizes within bounds.
  assert.equal((await clientAs(users[0].token).rpc('award_monthly_drops_chunk', {})).error?.code, '42501')
  await assert.rejects(
    sql`select * from public.award_monthly_drops_chunk(null, 0)`,
    /chunk_size: must be between 1 and 100000/,
  )
})

test('PostgREST: the ledger is read-only for clients and private to its owner', async () => {
  const a = await createUser()
  const b = await createUser()
  const db = clientAs(a.token)
  const ins = await db.from('drops_transactions').insert({
    user_id: a.id,
    amount: 1000,
    type: 'admin_adjustment',
    description: 'x',
    reason: 'x',
    source: 'x',
  })
  assert.equal(ins.error?.code, '42501')
  const del = await db.from('drops_transactions').delete().eq('user_id', a.id)
  assert.equal(del.error?.code, '42501')
  const theirs = await db.from('drops_transactions').select('id').eq('user_id', b.id)
  assert.deepEqual(theirs.data, [])
  const rpc = await db.rpc('admin_adjust_drops', { target_user_id: a.id, delta: 100, reason: 'self-service' })
  assert.equal(rpc.error?.code, '42501')
  const all = await db.rpc('award_monthly_drops_all')
  assert.equal(all.error?.code, '42501')
  assert.deepEqual((await api('/api/drops/balance', { token: a.token })).body, { balance: 50 })
})

test('super admins adjust drops through RPC; the balance never goes below zero', async () => {
  const admin = await createUser({ superAdmin: true })
  const user = await createUser()
  const db = clientAs(admin.token)
  const up = await db.rpc('admin_adjust_drops', {
    target_user_id: user.id,
    delta: 20,
    reason: 'support make-good',
  })
  assert.equal(up.error, null)
  assert.equal(up.data.created_by, admin.id)
  const down = await db.rpc('admin_adjust_drops', { target_user_id: user.id, delta: -71, reason: 'too much' })
  assert.equal(down.error?.code, '23514')
  assert.match(down.error!.message, /insufficient drops/)
  assert.deepEqual((await api('/api/drops/balance', { token: user.token })).body, { balance: 70 })
})
