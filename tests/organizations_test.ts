// /api/organizations: creating, listing, reading, changing and deleting organizations, as owner,
// admin, member, non-member, super admin and anonymous (SPEC's Organizations table; members in
// organizations_members_test.ts, what removal and deletion do in organizations_removal_test.ts),
// and the same rules through PostgREST.
import { strict as assert } from 'node:assert'
import {
  api,
  assertError,
  badTokensFor,
  clientAs,
  createUser,
  orgWith,
  sql,
  test,
  type TestUser,
} from './_helpers.ts'
import { cast, ORG_FIELDS, orgRow, roles } from './_organizations.ts'

test('POST /api/organizations: 201 {organization}; the creator becomes the owner', async () => {
  const user = await createUser()
  const res = await api('/api/organizations', {
    token: user.token,
    body: {
      name: '  Night Writers ',
      description: 'We write at night',
      settings: { theme: 'dark', public: false },
    },
  })
  assert.equal(res.status, 201, JSON.stringify(res.body))
  assert.deepEqual(Object.keys(res.body), ['organization'])
  const org = res.body.organization
  assert.deepEqual(Object.keys(org).sort(), ORG_FIELDS)
  assert.equal(org.name, 'Night Writers')
  assert.equal(org.description, 'We write at night')
  assert.deepEqual(org.settings, { theme: 'dark', public: false })
  assert.equal(org.owner_id, user.id)
  assert.deepEqual(await roles(org.id), { [user.id]: 'owner' })

  const minimal = await api('/api/organizations', { token: user.token, body: { name: 'Bare' } })
  assert.equal(minimal.status, 201)
  assert.equal(minimal.body.organization.description, null)
  assert.deepEqual(minimal.body.organization.settings, {})

  const got = await api(`/api/organizations/${org.id}`, { token: user.token })
  assert.equal(got.status, 200)
  assert.deepEqual(Object.keys(got.body).sort(), ['organization', 'user_role'])
  assert.equal(got.body.user_role, 'owner')
  assert.deepEqual(got.body.organization, org)
})

test('POST /api/organizations: bad bodies are 400 naming the field and create nothing', async () => {
  const user = await createUser()
  const other = await createUser()
  const cases: [unknown, string][] = [
    [{}, 'name'],
    [{ description: 'no name' }, 'name'],
    [{ name: '' }, 'name'],
    [{ name: '   ' }, 'name'],
    [{ name: 42 }, 'name'],
    [{ name: 'x'.repeat(201) }, 'name'],
    [{ name: 'ok', description: 5 }, 'description'],
    [{ name: 'ok', description: 'd'.repeat(2001) }, 'description'],
    [{ name: 'ok', settings: 'dark' }, 'settings'],
    [{ name: 'ok', settings: [1, 2] }, 'settings'],
    [{ name: 'ok', owner_id: other.id }, 'owner_id'],
    [{ name: 'ok', id: crypto.randomUUID() }, 'id'],
    [{ name: 'ok', colour: 'red' }, 'colour'],
    [['name'], ''],
  ]
  for (const [body, field] of cases) {
    assertError(await api('/api/organizations', { token: user.token, body }), 400, field)
  }
  assertError(
    await api('/api/organizations', { token: user.token, rawBody: '{"name": "x"' }),
    400,
    'Malformed JSON',
  )
  assertError(await api('/api/organizations', { token: user.token, method: 'POST' }), 400)
  const [{ n }] = await sql`select count(*)::int as n from public.organizations where owner_id in ${
    sql([user.id, other.id])
  }`
  assert.equal(n, 0)
  const [{ m }] = await sql`select count(*)::int as m from public.organization_members where user_id in ${
    sql([user.id, other.id])
  }`
  assert.equal(m, 0)
})

test('organization endpoints: anonymous and bad tokens are 401 and change nothing', async () => {
  const c = await cast()
  const id = c.orgId
  const uid = c.member.id
  const calls: [string, string, unknown?][] = [
    ['GET', '/api/organizations'],
    ['POST', '/api/organizations', { name: 'anon org' }],
    ['GET', `/api/organizations/${id}`],
    ['PUT', `/api/organizations/${id}`, { name: 'hijacked' }],
    ['DELETE', `/api/organizations/${id}`],
    ['GET', `/api/organizations/${id}/members`],
    ['POST', `/api/organizations/${id}/members`, { user_id: c.outsider.id, role: 'member' }],
    ['PUT', `/api/organizations/${id}/members/${uid}`, { role: 'admin' }],
    ['DELETE', `/api/organizations/${id}/members/${uid}`],
    ['POST', `/api/organizations/${id}/transfer-ownership`, { new_owner_id: c.outsider.id }],
  ]
  const bad = await badTokensFor(c.owner)
  for (const [method, path, body] of calls) {
    assertError(await api(path, { method, body }), 401)
    for (const [kind, token] of Object.entries(bad)) {
      const res = await api(path, { method, body, token })
      assert.equal(res.status, 401, `${method} ${path} with ${kind}: ${JSON.stringify(res.body)}`)
    }
  }
  const row = await orgRow(id)
  assert.equal(row?.owner_id, c.owner.id)
  assert.match(row!.name, /^Org /)
  assert.deepEqual(await roles(id), { [c.owner.id]: 'owner', [c.admin.id]: 'admin', [c.member.id]: 'member' })
})

test('GET /api/organizations: those with access; super admins see every organization; paginated', async () => {
  const c = await cast()
  const otherOwner = await createUser()
  const otherOrg = await orgWith(otherOwner)
  const idsFor = async (u: TestUser) => {
    const res = await api('/api/organizations?limit=100', { token: u.token })
    assert.equal(res.status, 200, JSON.stringify(res.body))
    assert.ok(Array.isArray(res.body.organizations))
    return res.body.organizations.map((o: { id: string }) => o.id)
  }
  for (const u of [c.owner, c.admin, c.member]) {
    assert.deepEqual(await idsFor(u), [c.orgId], u.email)
  }
  assert.deepEqual(await idsFor(c.outsider), [])
  // A super admin sees every organization (paged, since the database may hold many).
  const wanted = new Set([c.orgId, otherOrg])
  let next: string | null = null
  do {
    const res: any = await api(
      `/api/organizations?limit=100${next ? `&before=${encodeURIComponent(next)}` : ''}`,
      { token: c.superAdmin.token },
    )
    assert.equal(res.status, 200)
    for (const o of res.body.organizations) wanted.delete(o.id)
    next = res.body.next_cursor
  } while (next && wanted.size)
  assert.equal(wanted.size, 0, 'a super admin sees every organization')
  const listed = (await api('/api/organizations', { token: c.member.token })).body.organizations[0]
  assert.deepEqual(Object.keys(listed).sort(), ORG_FIELDS)

  // Keyset pagination, newest first.
  const many = await createUser()
  const made: string[] = []
  for (let i = 0; i < 5; i++) {
    made.push(
      (await api('/api/organizations', { token: many.token, body: { name: `P${i}` } })).body.organization.id,
    )
  }
  const seen: string[] = []
  let cursor: string | null = null
  let pages = 0
  do {
    const res: any = await api(
      `/api/organizations?limit=2${cursor ? `&before=${encodeURIComponent(cursor)}` : ''}`,
      { token: many.token },
    )
    assert.equal(res.status, 200)
    assert.ok(res.body.organizations.length <= 2)
    seen.push(...res.body.organizations.map((o: { id: string }) => o.id))
    cursor = res.body.next_cursor
    pages++
  } while (cursor)
  assert.deepEqual(seen, [...made].reverse())
  assert.equal(pages, 3)
  for (const q of ['limit=0', 'limit=101', 'limit=x', 'before=garbage', 'owner_id=' + many.id]) {
    assertError(await api(`/api/organizations?${q}`, { token: many.token }), 400, q.split('=')[0])
  }
})

test('GET /api/organizations/:id: members get {organization, user_role}; others 404 like a missing id', async () => {
  const c = await cast()
  for (const [u, role] of [[c.owner, 'owner'], [c.admin, 'admin'], [c.member, 'member']] as const) {
    const res = await api(`/api/organizations/${c.orgId}`, { token: u.token })
    assert.equal(res.status, 200)
    assert.equal(res.body.user_role, role)
    assert.equal(res.body.organization.id, c.orgId)
    assert.equal(res.body.organization.owner_id, c.owner.id)
  }
  const asSuper = await api(`/api/organizations/${c.orgId}`, { token: c.superAdmin.token })
  assert.equal(asSuper.status, 200)
  assert.equal(asSuper.body.user_role, null)
  assert.equal(asSuper.body.organization.id, c.orgId)

  const hidden = await api(`/api/organizations/${c.orgId}`, { token: c.outsider.token })
  const missing = await api(`/api/organizations/${crypto.randomUUID()}`, { token: c.outsider.token })
  assertError(hidden, 404)
  assertError(missing, 404)
  assert.deepEqual(hidden.body, missing.body)
  assertError(await api('/api/organizations/not-a-uuid', { token: c.owner.token }), 400, 'id')
})

test('PUT /api/organizations/:id: owners and super admins; admins and members 403; outsiders 404', async () => {
  const c = await cast()
  const before = await orgRow(c.orgId)
  for (const u of [c.admin, c.member]) {
    assertError(
      await api(`/api/organizations/${c.orgId}`, {
        method: 'PUT',
        token: u.token,
        body: { name: 'Mine now' },
      }),
      403,
    )
  }
  assertError(
    await api(`/api/organizations/${c.orgId}`, {
      method: 'PUT',
      token: c.outsider.token,
      body: { name: 'Mine now' },
    }),
    404,
  )
  assertError(
    await api(`/api/organizations/${crypto.randomUUID()}`, {
      method: 'PUT',
      token: c.owner.token,
      body: { name: 'x' },
    }),
    404,
  )
  assert.deepEqual(await orgRow(c.orgId), before)

  const [{ updated_at: stamp }] = await sql`select updated_at from public.organizations where id = ${c.orgId}`
  const res = await api(`/api/organizations/${c.orgId}`, {
    method: 'PUT',
    token: c.owner.token,
    body: { name: 'Renamed', description: 'Now described', settings: { a: 1 } },
  })
  assert.equal(res.status, 200, JSON.stringify(res.body))
  assert.deepEqual(Object.keys(res.body).sort(), ORG_FIELDS)
  assert.equal(res.body.name, 'Renamed')
  assert.equal(res.body.description, 'Now described')
  assert.deepEqual(res.body.settings, { a: 1 })
  assert.ok(Date.parse(res.body.updated_at) > stamp.getTime(), 'updated_at moves')
  assert.deepEqual(await orgRow(c.orgId), {
    name: 'Renamed',
    description: 'Now described',
    settings: { a: 1 },
    owner_id: c.owner.id,
  })

  const partial = await api(`/api/organizations/${c.orgId}`, {
    method: 'PUT',
    token: c.owner.token,
    body: { description: null },
  })
  assert.equal(partial.status, 200)
  assert.equal(partial.body.name, 'Renamed')
  assert.equal(partial.body.description, null)

  const bySuper = await api(`/api/organizations/${c.orgId}`, {
    method: 'PUT',
    token: c.superAdmin.token,
    body: { name: 'Moderated' },
  })
  assert.equal(bySuper.status, 200)
  assert.equal(bySuper.body.name, 'Moderated')
  assert.equal(bySuper.body.owner_id, c.owner.id)
})

test('PUT /api/organizations/:id: bad bodies are 400 naming the field and change nothing', async () => {
  const c = await cast()
  const before = await orgRow(c.orgId)
  const cases: [unknown, string][] = [
    [{}, 'Nothing to update'],
    [{ name: '' }, 'name'],
    [{ name: 7 }, 'name'],
    [{ description: ['x'] }, 'description'],
    [{ settings: 'x' }, 'settings'],
    [{ owner_id: c.admin.id }, 'owner_id'],
    [{ name: 'fine', created_at: '2020-01-01T00:00:00Z' }, 'created_at'],
    ['just a string', ''],
  ]
  for (const [body, field] of cases) {
    assertError(
      await api(`/api/organizations/${c.orgId}`, { method: 'PUT', token: c.owner.token, body }),
      400,
      field,
    )
  }
  assertError(
    await api(`/api/organizations/${c.orgId}`, { method: 'PUT', token: c.owner.token, rawBody: '{name:' }),
    400,
    'Malformed JSON',
  )
  assertError(
    await api('/api/organizations/123', { method: 'PUT', token: c.owner.token, body: { name: 'x' } }),
    400,
    'id',
  )
  assert.deepEqual(await orgRow(c.orgId), before)
})

test('DELETE /api/organizations/:id: owners and super admins; admins and members 403; outsiders 404', async () => {
  const c = await cast()
  for (const u of [c.admin, c.member]) {
    assertError(await api(`/api/organizations/${c.orgId}`, { method: 'DELETE', token: u.token }), 403)
  }
  assertError(await api(`/api/organizations/${c.orgId}`, { method: 'DELETE', token: c.outsider.token }), 404)
  assertError(
    await api(`/api/organizations/${crypto.randomUUID()}`, { method: 'DELETE', token: c.owner.token }),
    404,
  )
  assertError(await api('/api/organizations/nope', { method: 'DELETE', token: c.owner.token }), 400, 'id')
  assert.ok(await orgRow(c.orgId), 'refused deletes keep the organization')

  const res = await api(`/api/organizations/${c.orgId}`, { method: 'DELETE', token: c.owner.token })
  assert.equal(res.status, 200)
  assert.equal(typeof res.body.message, 'string')
  assert.equal(await orgRow(c.orgId), undefined)
  assertError(await api(`/api/organizations/${c.orgId}`, { token: c.owner.token }), 404)

  const other = await cast()
  const bySuper = await api(`/api/organizations/${other.orgId}`, {
    method: 'DELETE',
    token: other.superAdmin.token,
  })
  assert.equal(bySuper.status, 200)
  assert.equal(await orgRow(other.orgId), undefined)
})

test('PostgREST: the organization rules hold for a direct client too', async () => {
  const c = await cast()
  const newcomer = await createUser()
  const before = { org: await orgRow(c.orgId), roles: await roles(c.orgId) }
  const asOutsider = clientAs(c.outsider.token)
  const selfJoin = await asOutsider.from('organization_members').insert({
    org_id: c.orgId,
    user_id: c.outsider.id,
    role: 'member',
  })
  assert.ok(selfJoin.error, 'nobody joins an organization on their own')
  assert.deepEqual(
    (await asOutsider.from('organization_members').select('user_id').eq('org_id', c.orgId)).data,
    [],
  )
  assert.deepEqual((await asOutsider.from('organizations').select('id').eq('id', c.orgId)).data, [])
  const byAdmin = await clientAs(c.admin.token).from('organization_members').insert({
    org_id: c.orgId,
    user_id: newcomer.id,
    role: 'member',
  })
  assert.ok(byAdmin.error, 'admins do not add members')
  const ownerRow = await clientAs(c.owner.token).from('organization_members').insert({
    org_id: c.orgId,
    user_id: newcomer.id,
    role: 'owner',
  })
  assert.ok(ownerRow.error, 'ownership moves only by transfer')
  const promote = await clientAs(c.owner.token).from('organization_members').update({ role: 'owner' }).eq(
    'org_id',
    c.orgId,
  ).eq('user_id', c.admin.id)
  assert.ok(promote.error, 'no second owner by update')
  const selfPromote = await clientAs(c.member.token).from('organization_members').update({ role: 'admin' })
    .eq('org_id', c.orgId).eq('user_id', c.member.id).select('role')
  assert.deepEqual(selfPromote.data ?? [], [])
  const rename = await clientAs(c.admin.token).from('organizations').update({ name: 'admin rename' }).eq(
    'id',
    c.orgId,
  ).select('id')
  assert.deepEqual(rename.data ?? [], [])
  const steal = await clientAs(c.owner.token).from('organizations').update({ owner_id: c.member.id }).eq(
    'id',
    c.orgId,
  )
  assert.ok(steal.error, 'owner_id is not writable directly')
  const forged = await clientAs(c.member.token).from('organizations').insert({
    name: 'forged',
    owner_id: c.owner.id,
  })
  assert.ok(forged.error, 'nobody creates an organization for someone else')
  const kick = await clientAs(c.member.token).from('organization_members').delete().eq('org_id', c.orgId).eq(
    'user_id',
    c.owner.id,
  ).select('user_id')
  assert.deepEqual(kick.data ?? [], [])
  const rpc = await clientAs(c.admin.token).rpc('transfer_organization_ownership', {
    target_org: c.orgId,
    new_owner_id: c.admin.id,
  })
  assert.equal(rpc.error?.code, '42501')
  const anon = await clientAs().from('organizations').select('id').eq('id', c.orgId)
  assert.ok(anon.error || anon.data?.length === 0)
  assert.deepEqual({ org: await orgRow(c.orgId), roles: await roles(c.orgId) }, before)
})
