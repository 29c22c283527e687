// Super admins: the user list (balances, this month's usage), role changes (audited, never the
// last super admin) and the tokens-to-drops conversion rate with its history.
import { strict as assert } from 'node:assert'
import postgres from 'postgres'
import { api, assertError, clientAs, createUser, env, SERVICE_ROLE_KEY, sql, test } from './_helpers.ts'
import { createClient } from '@supabase/supabase-js'
import { API_URL } from './_helpers.ts'

const service = () =>
  createClient(API_URL, SERVICE_ROLE_KEY, { auth: { persistSession: false, autoRefreshToken: false } })

// ---------------------------------------------------------------------------------------
// GET /api/admin/users

test('GET /api/admin/users: super admins only (403 for users, 401 without a token, also through PostgREST)', async () => {
  const user = await createUser()
  assertError(await api('/api/admin/users', { token: user.token }), 403)
  assertError(await api('/api/admin/users'), 401)
  const { error } = await clientAs(user.token).rpc('admin_list_users', {})
  assert.equal(error?.code, '42501')
  assert.ok((await clientAs().rpc('admin_list_users', {})).error)
})

test("GET /api/admin/users: newest first with e-mail, name, role, flags, balance and this month's usage", async () => {
  const admin = await createUser({ superAdmin: true })
  const tag = crypto.randomUUID().slice(0, 8)
  const older = await createUser({ prefix: `list-${tag}-a` })
  const newer = await createUser({ prefix: `list-${tag}-b` })
  await sql`update public.profiles set full_name = ${'Ada ' + tag}, is_ai = true where id = ${newer.id}`
  await sql`select public.admin_adjust_drops(${older.id}, 25, 'test', 'test')`
  await service().rpc('record_ai_usage', {
    user_id: older.id,
    usage_type: 'tone_analysis',
    model: 'gpt-4o-mini',
    input_tokens: 1_000_000,
    output_tokens: 1_000_000,
  })
  await service().rpc('record_ai_usage', {
    user_id: older.id,
    usage_type: 'entry_background',
    model: 'dall-e-3',
    image_count: 1,
    image_quality: 'hd',
  })
  // Last month's usage is not this month's.
  await sql`insert into public.ai_usage (user_id, usage_type, model, input_tokens, created_at)
            values (${older.id}, 'tone_analysis', 'gpt-4o-mini', 5000000, date_trunc('month', now()) - interval '1 day')`

  const res = await api(`/api/admin/users?q=list-${tag}`, { token: admin.token })
  assert.equal(res.status, 200, JSON.stringify(res.body))
  assert.deepEqual(res.body.users.map((u: { id: string }) => u.id), [newer.id, older.id])
  const [b, a] = res.body.users
  assert.deepEqual(
    {
      email: b.email,
      full_name: b.full_name,
      role: b.role,
      is_ai: b.is_ai,
      is_active: b.is_active,
      drops_balance: b.drops_balance,
    },
    {
      email: newer.email,
      full_name: `Ada ${tag}`,
      role: 'user',
      is_ai: true,
      is_active: true,
      drops_balance: 50,
    },
  )
  assert.equal(a.drops_balance, 75)
  assert.deepEqual(a.token_usage, {
    total_tokens: 2_000_000,
    total_cost: 0.83,
    calls: 2,
    breakdown: {
      Tone: { calls: 1, tokens: 2_000_000, images: 0, cost: 0.75 },
      Images: { calls: 1, tokens: 0, images: 1, cost: 0.08 },
      Packs: { calls: 0, tokens: 0, images: 0, cost: 0 },
    },
  })
  assert.equal(b.token_usage.total_cost, 0)
  assert.equal(res.body.next_cursor, null)
})

test('GET /api/admin/users: search by part of the e-mail or the name (case-insensitive, wildcards literal); pages', async () => {
  const admin = await createUser({ superAdmin: true })
  const tag = crypto.randomUUID().slice(0, 8)
  const users = []
  for (let i = 0; i < 5; i++) users.push(await createUser({ prefix: `page-${tag}-${i}` }))
  await sql`update public.profiles set full_name = ${'Grace Hopper ' + tag} where id = ${users[2].id}`
  const byName = await api(`/api/admin/users?q=${encodeURIComponent('grace HOPPER ' + tag)}`, {
    token: admin.token,
  })
  assert.deepEqual(byName.body.users.map((u: { id: string }) => u.id), [users[2].id])
  const wildcard = await api(`/api/admin/users?q=${encodeURIComponent(`page_${tag}`)}`, {
    token: admin.token,
  })
  assert.deepEqual(wildcard.body.users, [], '_ matches only itself')
  const percent = await api(`/api/admin/users?q=${encodeURIComponent('%')}&limit=1`, { token: admin.token })
  assert.deepEqual(percent.body.users, [])

  const seen: string[] = []
  let cursor: string | null = null
  let pages = 0
  do {
    const res: any = await api(`/api/admin/users?q=page-${tag}&limit=2${cursor ? `&before=${cursor}` : ''}`, {
      token: admin.token,
    })
    assert.equal(res.status, 200)
    seen.push(...res.body.users.map((u: { id: string }) => u.id))
    cursor = res.body.next_cursor
    pages++
  } while (cursor)
  assert.deepEqual(seen, users.map((u) => u.id).reverse())
  assert.equal(pages, 3)
  for (
    const [q, field] of [
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['before=xyz', 'before'],
      ['q=', 'q'],
      ['role=user', 'role'],
    ]
  ) {
    assertError(await api(`/api/admin/users?${q}`, { token: admin.token }), 400, field)
  }
})

test('GET /api/admin/users: the search follows a changed address or name, a deleted user leaves it, and reads trigram indexes', async () => {
  const admin = await createUser({ superAdmin: true })
  const tag = crypto.randomUUID().slice(0, 8)
  const user = await createUser({ prefix: `old-${tag}` })
  const search = async (
    q: string,
  ) => ((await api(`/api/admin/users?q=${encodeURIComponent(q)}`, { token: admin.token })).body.users as {
    id: string
    email: string
  }[])
  assert.deepEqual((await search(`old-${tag}`)).map((u) => u.id), [user.id])
  await sql`update auth.users set email = ${`new-${tag}@test.local`} where id = ${user.id}`
  assert.deepEqual(await search(`old-${tag}`), [])
  assert.deepEqual((await search(`NEW-${tag}`)).map((u) => [u.id, u.email]), [[
    user.id,
    `new-${tag}@test.local`,
  ]])
  await sql`delete from auth.users where id = ${user.id}`
  assert.deepEqual(await search(`new-${tag}`), [])
  assert.equal(
    (await sql`select count(*)::int as n from private.user_search where user_id = ${user.id}`)[0].n,
    0,
  )
  // A renamed user is found by the new name.
  const named = await createUser({ prefix: `named-${tag}` })
  await sql`update public.profiles set full_name = ${'Hedy Lamarr ' + tag} where id = ${named.id}`
  assert.deepEqual((await search(`hedy lamarr ${tag}`)).map((u) => u.id), [named.id])
  // The search's plan: the two trigram indexes (a bitmap scan each), not a scan of every user.
  const plan = await sql.begin(async (tx) => {
    await tx`set local enable_seqscan = off`
    return (await tx.unsafe(`explain (format json) select user_id from private.user_search
                              where email ilike '%new-${tag}%' or full_name ilike '%new-${tag}%'`))[0][
      'QUERY PLAN'
    ]
  })
  assert.match(JSON.stringify(plan), /user_search_email_trgm/)
  assert.match(JSON.stringify(plan), /user_search_name_trgm/)
})

test('GET /api/admin/users: a term with an @ is the start of an address, read as a range of one index', async () => {
  const admin = await createUser({ superAdmin: true })
  const tag = crypto.randomUUID().slice(0, 8)
  const sam = await createUser({ prefix: `sam-${tag}` })
  const tosam = await createUser({ prefix: `tosam-${tag}` })
  const ids = async (q: string) =>
    ((await api(`/api/admin/users?q=${encodeURIComponent(q)}`, { token: admin.token })).body.users as {
      id: string
    }[])
      .map((u) => u.id)
  const [{ email }] = await sql`select email from auth.users where id = ${sam.id}`
  assert.deepEqual(await ids(email.toUpperCase()), [sam.id], 'the whole address, any case')
  assert.deepEqual(await ids(`SAM-${tag}`), [tosam.id, sam.id], 'no @: anywhere in the address')
  const start = email.slice(0, email.indexOf('@') + 2)
  assert.deepEqual(await ids(start), [sam.id], 'with an @: from the start only, so tosam is not found')
  assert.deepEqual(await ids(`%${tag}@`), [], 'wildcards are literal')
  // A leading @ is a part matched anywhere (no address starts with an @).
  const domain = (await api('/api/admin/users?q=%40test.local&limit=5', { token: admin.token })).body
    .users as {
      email: string
    }[]
  assert.equal(domain.length, 5)
  assert.ok(domain.every((u) => u.email.endsWith('@test.local')))
  // The predicate the function uses for a start: a range of user_search_email_start.
  const plan = await sql.begin(async (tx) => {
    await tx`set local enable_seqscan = off`
    return (await tx.unsafe(`explain (format json) select user_id from private.user_search m
                              where (lower(m.email) collate "C") >= ('${start}' collate "C")
                                and (lower(m.email) collate "C") < (('${start}' || chr(1114111)) collate "C")
                                and starts_with(lower(m.email), '${start}')`))[0]['QUERY PLAN']
  })
  assert.match(JSON.stringify(plan), /user_search_email_start/)
  assert.doesNotMatch(JSON.stringify(plan), /trgm/)
})

// ---------------------------------------------------------------------------------------
// PUT /api/admin/users/:id/role

test('PUT /api/admin/users/:id/role: super admins promote and demote; each change is audited; a repeat changes nothing', async () => {
  const admin = await createUser({ superAdmin: true })
  const user = await createUser()
  const promote = await api(`/api/admin/users/${user.id}/role`, {
    method: 'PUT',
    token: admin.token,
    body: { role: 'super_admin' },
  })
  assert.equal(promote.status, 200, JSON.stringify(promote.body))
  assert.deepEqual(promote.body, { id: user.id, role: 'super_admin', previous_role: 'user', changed: true })
  // Effective on the user's next request.
  assert.equal((await api('/api/admin/users?limit=1', { token: user.token })).status, 200)
  const again = await api(`/api/admin/users/${user.id}/role`, {
    method: 'PUT',
    token: admin.token,
    body: { role: 'super_admin' },
  })
  assert.deepEqual(again.body, {
    id: user.id,
    role: 'super_admin',
    previous_role: 'super_admin',
    changed: false,
  })
  const demote = await api(`/api/admin/users/${user.id}/role`, {
    method: 'PUT',
    token: admin.token,
    body: { role: 'user' },
  })
  assert.equal(demote.body.role, 'user')
  assertError(await api('/api/admin/users?limit=1', { token: user.token }), 403)

  const audit = await sql`select user_id, old_role, new_role, changed_by, changed_via from public.role_changes
                           where user_id = ${user.id} order by id`
  assert.deepEqual(audit.map((r) => ({ ...r })), [
    {
      user_id: user.id,
      old_role: 'user',
      new_role: 'super_admin',
      changed_by: admin.id,
      changed_via: 'authenticated',
    },
    {
      user_id: user.id,
      old_role: 'super_admin',
      new_role: 'user',
      changed_by: admin.id,
      changed_via: 'authenticated',
    },
  ])
  // Super admins read the audit through PostgREST; users do not.
  assert.equal(
    (await clientAs(admin.token).from('role_changes').select('id').eq('user_id', user.id)).data?.length,
    2,
  )
  assert.deepEqual((await clientAs(user.token).from('role_changes').select('id')).data, [])
})

test('PUT /api/admin/users/:id/role: users get 403 and nothing changes; bad input 400; unknown user 404', async () => {
  const admin = await createUser({ superAdmin: true })
  const user = await createUser()
  const other = await createUser()
  assertError(
    await api(`/api/admin/users/${user.id}/role`, {
      method: 'PUT',
      token: user.token,
      body: { role: 'super_admin' },
    }),
    403,
  )
  assertError(
    await api(`/api/admin/users/${other.id}/role`, {
      method: 'PUT',
      token: user.token,
      body: { role: 'super_admin' },
    }),
    403,
  )
  const viaRest = await clientAs(user.token).rpc('set_user_role', { user_id: user.id, role: 'super_admin' })
  assert.equal(viaRest.error?.code, '42501')
  const patch = await clientAs(user.token).from('profiles').update({ role: 'super_admin' }).eq('id', user.id)
    .select()
  assert.ok(patch.error)
  const [{ role }] = await sql`select role from public.profiles where id = ${user.id}`
  assert.equal(role, 'user')
  assert.deepEqual([
    ...await sql`select id from public.role_changes where user_id in (${user.id}, ${other.id})`,
  ], [])

  for (
    const [body, field] of [[{ role: 'owner' }, 'role'], [{}, 'role'], [
      { role: 'user', extra: 1 },
      'extra',
    ]] as const
  ) {
    assertError(
      await api(`/api/admin/users/${user.id}/role`, { method: 'PUT', token: admin.token, body }),
      400,
      field,
    )
  }
  assertError(
    await api(`/api/admin/users/nope/role`, { method: 'PUT', token: admin.token, body: { role: 'user' } }),
    400,
    'id',
  )
  assertError(
    await api(`/api/admin/users/${crypto.randomUUID()}/role`, {
      method: 'PUT',
      token: admin.token,
      body: { role: 'user' },
    }),
    404,
  )
})

test('a PostgREST PATCH of role by a super admin is audited too', async () => {
  const admin = await createUser({ superAdmin: true })
  const user = await createUser()
  const { error } = await clientAs(admin.token).from('profiles').update({ role: 'super_admin' }).eq(
    'id',
    user.id,
  )
  assert.equal(error, null)
  const rows =
    await sql`select old_role, new_role, changed_by from public.role_changes where user_id = ${user.id}`
  assert.deepEqual(rows.map((r) => ({ ...r })), [{
    old_role: 'user',
    new_role: 'super_admin',
    changed_by: admin.id,
  }])
})

test('the last super admin cannot be demoted (409), even by two demotions at once', async () => {
  const a = await createUser({ superAdmin: true })
  const b = await createUser({ superAdmin: true })
  // Leave a and b as the only super admins for this test; restore the others afterwards.
  const others =
    (await sql`select id from public.profiles where role = 'super_admin' and id not in (${a.id}, ${b.id})`)
      .map((r) => r.id as string)
  if (others.length) await sql`update public.profiles set role = 'user' where id = any(${others})`
  const second = postgres(env('SUPABASE_DB_URL'), { max: 1, onnotice: () => {} })
  try {
    // Two transactions each demote one of the two: exactly one may win.
    const results = await Promise.allSettled([
      sql.begin(async (tx) => {
        await tx`update public.profiles set role = 'user' where id = ${a.id}`
        await new Promise((r) => setTimeout(r, 300)) // b's demotion now waits for this one
      }),
      (async () => {
        await new Promise((r) => setTimeout(r, 100))
        await second.begin((tx) => tx`update public.profiles set role = 'user' where id = ${b.id}`)
      })(),
    ])
    assert.deepEqual(results.map((r) => r.status), ['fulfilled', 'rejected'])
    assert.equal((results[1] as PromiseRejectedResult).reason.code, 'PT409')
    const [{ n }] = await sql`select count(*)::int as n from public.profiles where role = 'super_admin'`
    assert.equal(n, 1)
    // Through the API the last one gets 409 {error}, also for demoting themselves.
    const res = await api(`/api/admin/users/${b.id}/role`, {
      method: 'PUT',
      token: b.token,
      body: { role: 'user' },
    })
    assertError(res, 409, 'last super admin')
    // With a second super admin again, the demotion goes through.
    assert.equal(
      (await api(`/api/admin/users/${a.id}/role`, {
        method: 'PUT',
        token: b.token,
        body: { role: 'super_admin' },
      })).status,
      200,
    )
    assert.equal(
      (await api(`/api/admin/users/${b.id}/role`, { method: 'PUT', token: b.token, body: { role: 'user' } }))
        .status,
      200,
    )
  } finally {
    await second.end()
    if (others.length) await sql`update public.profiles set role = 'super_admin' where id = any(${others})`
  }
})

// ---------------------------------------------------------------------------------------
// Conversion rates

test('conversion rates: a new rate is current at once; history keeps every rate unchanged, newest first, paged', async () => {
  const admin = await createUser({ superAdmin: true })
  const set = (body: Record<string, unknown>) =>
    api('/api/admin/conversion/rates', { token: admin.token, body })
  const first = await set({ tokens_per_drop: 1000 })
  assert.equal(first.status, 201, JSON.stringify(first.body))
  assert.equal(first.body.rate.tokens_per_drop, 1000)
  assert.equal(first.body.rate.created_by, admin.id)
  assert.deepEqual(first.body.current, first.body.rate)
  const second = await set({ tokens_per_drop: 1250.5 })
  assert.equal(second.body.current.id, second.body.rate.id)

  const list = await api('/api/admin/conversion/rates?limit=2', { token: admin.token })
  assert.equal(list.status, 200)
  assert.deepEqual(list.body.current, second.body.rate)
  const ids = list.body.history.map((r: { id: number }) => r.id)
  assert.ok(
    ids.indexOf(second.body.rate.id) >= 0 &&
      ids.indexOf(second.body.rate.id) < ids.indexOf(first.body.rate.id),
    'newest effective first',
  )
  assert.deepEqual(
    list.body.history.find((r: { id: number }) => r.id === first.body.rate.id),
    first.body.rate,
    'the earlier rate is kept as it was',
  )
  if (list.body.next_cursor) {
    const next = await api(`/api/admin/conversion/rates?limit=2&before=${list.body.next_cursor}`, {
      token: admin.token,
    })
    assert.equal(next.status, 200)
    assert.ok(next.body.history.every((r: { id: number }) => r.id < first.body.rate.id))
  }

  // A scheduled rate is history now and current only from its moment.
  const later = new Date(Date.now() + 3600_000).toISOString()
  const scheduled = await set({ tokens_per_drop: 9999, effective_at: later })
  assert.equal(scheduled.status, 201)
  assert.equal(scheduled.body.current.id, second.body.rate.id)
  assert.equal(new Date(scheduled.body.rate.effective_at).toISOString(), later)
  const [{ n }] =
    await sql`select count(*)::int as n from public.token_conversion_rates where id in (${first.body.rate.id}, ${second.body.rate.id}) and tokens_per_drop in (1000, 1250.5)`
  assert.equal(n, 2)
})

test('conversion rates: users get 403 and nothing is written; bad input 400; history cannot be rewritten', async () => {
  const admin = await createUser({ superAdmin: true })
  const user = await createUser()
  const [{ before }] = await sql`select count(*)::int as before from public.token_conversion_rates`
  assertError(
    await api('/api/admin/conversion/rates', { token: user.token, body: { tokens_per_drop: 1 } }),
    403,
  )
  assertError(await api('/api/admin/conversion/rates', { token: user.token }), 403)
  assertError(await api('/api/admin/conversion/rates', { body: { tokens_per_drop: 1 } }), 401)
  const rest = await clientAs(user.token).from('token_conversion_rates').insert({ tokens_per_drop: 1 })
  assert.ok(rest.error)
  for (
    const [body, field] of [
      [{ tokens_per_drop: 0 }, 'tokens_per_drop'],
      [{ tokens_per_drop: -5 }, 'tokens_per_drop'],
      [{ tokens_per_drop: '100' }, 'tokens_per_drop'],
      [{}, 'tokens_per_drop'],
      [{ tokens_per_drop: 10, effective_at: 'tomorrow' }, 'effective_at'],
      [{ tokens_per_drop: 10, effective_at: '2020-01-01T00:00:00Z' }, 'effective_at'],
      [{ tokens_per_drop: 10, note: 'x' }, 'note'],
    ] as const
  ) {
    assertError(await api('/api/admin/conversion/rates', { token: admin.token, body }), 400, field)
  }
  const [{ after }] = await sql`select count(*)::int as after from public.token_conversion_rates`
  assert.equal(after, before)
  const created = await api('/api/admin/conversion/rates', {
    token: admin.token,
    body: { tokens_per_drop: 777 },
  })
  const asAdmin = clientAs(admin.token)
  assert.ok(
    (await asAdmin.from('token_conversion_rates').update({ tokens_per_drop: 1 }).eq(
      'id',
      created.body.rate.id,
    ).select()).error,
  )
  assert.ok(
    (await asAdmin.from('token_conversion_rates').delete().eq('id', created.body.rate.id).select()).error,
  )
  await assert.rejects(
    sql`update public.token_conversion_rates set tokens_per_drop = 1 where id = ${created.body.rate.id}`,
  )
})

// ---------------------------------------------------------------------------------------
// GET /api/admin/users/{id} (the console's user page)

test('GET /api/admin/users/{id}: one user as the list shows them, with their role changes; 404, 400, 403, 401', async () => {
  const admin = await createUser({ superAdmin: true })
  const tag = crypto.randomUUID().slice(0, 8)
  const user = await createUser({ prefix: `one-${tag}` })
  await sql`select public.admin_adjust_drops(${user.id}, 7, 'test', 'test')`
  assert.equal((await api(`/api/admin/users/${user.id}/role`, { method: 'PUT', token: admin.token, body: { role: 'super_admin' } })).status, 200)
  assert.equal((await api(`/api/admin/users/${user.id}/role`, { method: 'PUT', token: admin.token, body: { role: 'user' } })).status, 200)

  const res = await api(`/api/admin/users/${user.id}`, { token: admin.token })
  assert.equal(res.status, 200, JSON.stringify(res.body))
  const listed = await api(`/api/admin/users?q=one-${tag}`, { token: admin.token })
  assert.deepEqual(res.body.user, listed.body.users[0], 'the same row as the list')
  const [{ drops_balance }] = await sql`select drops_balance from public.profiles where id = ${user.id}`
  assert.equal(res.body.user.drops_balance, drops_balance)
  assert.ok(drops_balance >= 7)
  assert.equal(res.body.user.role, 'user')
  assert.deepEqual(
    res.body.role_changes.map((r: { old_role: string; new_role: string; changed_by: string }) => [r.old_role, r.new_role, r.changed_by]),
    [['super_admin', 'user', admin.id], ['user', 'super_admin', admin.id]],
    'newest first, by the admin',
  )

  assertError(await api(`/api/admin/users/${crypto.randomUUID()}`, { token: admin.token }), 404, 'No such user')
  assertError(await api('/api/admin/users/not-a-uuid', { token: admin.token }), 400, 'id')
  assertError(await api(`/api/admin/users/${user.id}`, { token: user.token }), 403)
  assertError(await api(`/api/admin/users/${user.id}`), 401)
  const { error } = await clientAs(user.token).rpc('admin_get_user', { target_user_id: user.id })
  assert.equal(error?.code, '42501', 'the RPC refuses a non-super-admin too')
})
