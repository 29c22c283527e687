// GET/PUT /api/user/profile and the same rules through PostgREST.
import { strict as assert } from 'node:assert'
import {
  api,
  API_URL,
  assertError,
  avatarUrl,
  badTokensFor,
  clientAs,
  createUser,
  SERVICE_ROLE_KEY,
  sql,
  test,
} from './_helpers.ts'

test('GET profile: the caller gets their own profile with defaults', async () => {
  const user = await createUser()
  const res = await api('/api/user/profile', { token: user.token })
  assert.equal(res.status, 200)
  assert.equal(res.body.id, user.id)
  assert.equal(res.body.email, user.email)
  assert.equal(res.body.role, 'user')
  // The balance is the ledger's (the signup bonus itself is tested with the drops, drops_test.ts).
  const [{ ledger }] =
    await sql`select coalesce(sum(amount), 0)::int as ledger from public.drops_transactions where user_id = ${user.id}`
  assert.equal(res.body.drops_balance, ledger)
  assert.equal(res.body.is_active, true)
  assert.equal(res.body.is_ai, false)
  assert.equal(res.body.read_notes_enabled, false)
  assert.equal(res.body.check_in_enabled, false)
  assert.deepEqual(res.body.preferences, { theme: 'system', notifications: true })
})

test('GET profile: anonymous and bad tokens are 401', async () => {
  const user = await createUser()
  assertError(await api('/api/user/profile'), 401)
  for (const [kind, token] of Object.entries(await badTokensFor(user))) {
    const res = await api('/api/user/profile', { token })
    assert.equal(res.status, 401, kind)
  }
  // The service role is not a user.
  assertError(await api('/api/user/profile', { token: SERVICE_ROLE_KEY }), 401)
})

test('PUT profile: updates own fields and merges preferences', async () => {
  const user = await createUser()
  const res = await api('/api/user/profile', {
    method: 'PUT',
    token: user.token,
    body: { full_name: 'Ada L', avatar_url: avatarUrl(user.id), preferences: { theme: 'dark' } },
  })
  assert.equal(res.status, 200, JSON.stringify(res.body))
  assert.equal(res.body.full_name, 'Ada L')
  assert.equal(res.body.avatar_url, avatarUrl(user.id))
  assert.deepEqual(res.body.preferences, { theme: 'dark', notifications: true })
  const again = await api('/api/user/profile', {
    method: 'PUT',
    token: user.token,
    body: { preferences: { notifications: false } },
  })
  assert.deepEqual(again.body.preferences, { theme: 'dark', notifications: false })
  const [row] = await sql`select full_name, preferences from public.profiles where id = ${user.id}`
  assert.equal(row.full_name, 'Ada L')
  assert.deepEqual(row.preferences, { theme: 'dark', notifications: false })
})

test('PUT profile: bad bodies are 400 naming the field and write nothing', async () => {
  const user = await createUser()
  const [{ drops_balance: atSignup }] =
    await sql`select drops_balance from public.profiles where id = ${user.id}`
  const cases: [unknown, string][] = [
    [{ role: 'super_admin' }, 'role'],
    [{ drops_balance: 1000 }, 'drops_balance'],
    [{ is_active: false }, 'is_active'],
    [{ is_ai: true }, 'is_ai'],
    [{ full_name: 42 }, 'full_name'],
    [{ full_name: 'x'.repeat(201) }, 'full_name'],
    [{ avatar_url: 'not a url' }, 'avatar_url'],
    [{ avatar_url: 'javascript:alert(1)' }, 'avatar_url'],
    [{ preferences: 'dark' }, 'preferences'],
    [{ preferences: { notifications: 'yes' } }, 'notifications'],
    [{ preferences: { theme: 7 } }, 'theme'],
    [{ preferences: { colour: 'red' } }, 'colour'],
    [{ preferences: { active_tone_pack_id: 'nope' } }, 'active_tone_pack_id'],
    [[], ''],
    [{}, 'Nothing to update'],
  ]
  for (const [body, field] of cases) {
    const res = await api('/api/user/profile', { method: 'PUT', token: user.token, body })
    assertError(res, 400, field)
  }
  assertError(
    await api('/api/user/profile', { method: 'PUT', token: user.token, rawBody: '{"full_name": "x"' }),
    400,
    'Malformed JSON',
  )
  const [row] =
    await sql`select full_name, role, drops_balance, is_active, is_ai, preferences, updated_at = created_at as untouched
                          from public.profiles where id = ${user.id}`
  assert.deepEqual(
    { ...row },
    {
      full_name: null,
      role: 'user',
      drops_balance: atSignup,
      is_active: true,
      is_ai: false,
      preferences: { theme: 'system', notifications: true },
      untouched: true,
    },
  )
})

test('PostgREST: users read only their own profile; anonymous reads nothing', async () => {
  const a = await createUser()
  const b = await createUser()
  const { data, error } = await clientAs(a.token).from('profiles').select('id')
  assert.equal(error, null)
  assert.deepEqual(data!.map((r) => r.id), [a.id])
  const other = await clientAs(a.token).from('profiles').select('id').eq('id', b.id)
  assert.deepEqual(other.data, [])
  const anon = await clientAs().from('profiles').select('id')
  assert.ok(anon.error, 'anonymous must be refused')
  assert.equal(anon.error!.code, '42501')
})

test('PostgREST: forbidden columns cannot be changed by the owner', async () => {
  const a = await createUser()
  const [{ drops_balance: atSignup }] =
    await sql`select drops_balance from public.profiles where id = ${a.id}`
  const db = clientAs(a.token)
  for (
    const patch of [{ role: 'super_admin' }, { drops_balance: 9999 }, { is_active: false }, { is_ai: true }]
  ) {
    const { error } = await db.from('profiles').update(patch).eq('id', a.id)
    assert.ok(error, `${JSON.stringify(patch)} must be refused`)
    assert.equal(error!.code, '42501')
  }
  const ok = await db.from('profiles').update({ full_name: 'Direct' }).eq('id', a.id).select('full_name')
  assert.deepEqual(ok.data, [{ full_name: 'Direct' }])
  const [row] =
    await sql`select role, drops_balance, is_active, is_ai from public.profiles where id = ${a.id}`
  assert.deepEqual({ ...row }, { role: 'user', drops_balance: atSignup, is_active: true, is_ai: false })
})

test("PostgREST: another user's profile cannot be changed", async () => {
  const a = await createUser()
  const b = await createUser()
  const { data, error } = await clientAs(a.token).from('profiles').update({ full_name: 'Hijack' }).eq(
    'id',
    b.id,
  ).select()
  assert.equal(error, null)
  assert.deepEqual(data, [])
  const [row] = await sql`select full_name from public.profiles where id = ${b.id}`
  assert.equal(row.full_name, null)
})

test('super admins read all profiles and change role, is_active and is_ai; a demotion is immediate', async () => {
  const admin = await createUser({ superAdmin: true })
  const target = await createUser()
  const db = clientAs(admin.token)
  const seen = await db.from('profiles').select('id').in('id', [admin.id, target.id])
  assert.equal(seen.data!.length, 2)
  const upd = await db.from('profiles').update({ role: 'super_admin', is_active: false, is_ai: true }).eq(
    'id',
    target.id,
  ).select('role, is_active, is_ai')
  assert.deepEqual(upd.data, [{ role: 'super_admin', is_active: false, is_ai: true }])
  // Even a super admin moves balances only through the ledger.
  const bal = await db.from('profiles').update({ drops_balance: 1 }).eq('id', target.id)
  assert.equal(bal.error?.code, '42501')

  assert.equal((await api('/api/admin/health', { token: admin.token })).status, 200)
  await sql`update public.profiles set role = 'user' where id = ${admin.id}`
  // Same token, next request: no longer a super admin.
  assertError(await api('/api/admin/health', { token: admin.token }), 403)
  const after = await db.from('profiles').select('id').eq('id', target.id)
  assert.deepEqual(after.data, [])
})

test('the access-token hook puts the profile role in the token', async () => {
  const admin = await createUser({ superAdmin: true })
  const payload = JSON.parse(atob(admin.token.split('.')[1].replace(/-/g, '+').replace(/_/g, '/')))
  assert.equal(payload.user_role, 'super_admin')
  const user = await createUser()
  assert.equal(
    JSON.parse(atob(user.token.split('.')[1].replace(/-/g, '+').replace(/_/g, '/'))).user_role,
    'user',
  )
})

test("PostgREST writes to a profile are held to the API's shape (no javascript: avatars, no stray preferences)", async () => {
  const user = await createUser()
  const db = clientAs(user.token)
  for (
    const patch of [
      { avatar_url: 'javascript:alert(document.cookie)' },
      { preferences: { theme: 'dark', notifications: true, injected: { a: 1 } } },
      { preferences: { active_tone_pack_id: 'not-a-uuid' } },
      { preferences: { theme: '' } },
    ]
  ) {
    const { error } = await db.from('profiles').update(patch).eq('id', user.id)
    assert.equal(error?.code, '23514', JSON.stringify(patch))
  }
  const ok = await db.from('profiles').update({ avatar_url: avatarUrl(user.id, 'me.png') }).eq(
    'id',
    user.id,
  ).select('avatar_url')
  assert.deepEqual(ok.data, [{ avatar_url: avatarUrl(user.id, 'me.png') }])
})

test("avatar_url: only a public URL of the user's own folder in the project's avatars bucket, through /api and PostgREST", async () => {
  const [user, other] = await Promise.all([createUser(), createUser()])
  const db = clientAs(user.token)
  const origin = new URL(API_URL).origin
  const refused = [
    'https://tracker.example.com/pixel.png', // anywhere else: a tracking link shown to strangers
    `https://tracker.example.com/storage/v1/object/public/avatars/${user.id}/a.png`, // the path, another host
    avatarUrl(other.id), // someone else's folder
    `${origin}/storage/v1/object/public/entry-backgrounds/${user.id}/a.png`, // another bucket
    `${origin}/storage/v1/object/public/avatars/${user.id}/../${other.id}/a.png`,
    `${origin}/storage/v1/object/public/avatars/${user.id}/`,
    `${origin}/storage/v1/object/public/avatars/${user.id}/a.png?track=1`,
    `${origin}/storage/v1/object/sign/avatars/${user.id}/a.png`,
  ]
  for (const url of refused) {
    assertError(await api('/api/user/profile', { method: 'PUT', token: user.token, body: { avatar_url: url } }), 400, 'avatar_url')
    const { error } = await db.from('profiles').update({ avatar_url: url }).eq('id', user.id)
    assert.equal(error?.code, '23514', url)
    assert.match(error!.message, /^avatar_url: /, url)
  }
  const own = avatarUrl(user.id, 'photo-2.webp')
  const put = await api('/api/user/profile', { method: 'PUT', token: user.token, body: { avatar_url: own } })
  assert.equal(put.status, 200, JSON.stringify(put.body))
  assert.equal((await db.from('profiles').update({ avatar_url: null }).eq('id', user.id)).error, null)
})
