// /api/organizations: every row of SPEC's Organizations table, as owner, admin, member,
// non-member, super admin and anonymous; member views; ownership transfer; the notices members
// get when added; what removing a member (also while they write or are added to a team) and
// deleting an organization do to teams, memberships, notebooks and shared entries.
import { strict as assert } from 'node:assert'
import {
  api,
  assertError,
  asUserInTransaction,
  badTokensFor,
  clientAs,
  createUser,
  editTextsAcrossRemoval,
  env,
  orgWith,
  pause,
  postEntry,
  postNotebook,
  sql,
  teamWith,
  test,
  type TestUser,
} from './_helpers.ts'
import postgres from 'postgres'

interface Cast {
  owner: TestUser
  admin: TestUser
  member: TestUser
  outsider: TestUser
  superAdmin: TestUser
  orgId: string
}

/** An organization with one user of each role, plus an outsider and a super admin. */
async function cast(): Promise<Cast> {
  const [owner, admin, member, outsider, superAdmin] = await Promise.all([
    createUser({ prefix: 'owner' }),
    createUser({ prefix: 'admin' }),
    createUser({ prefix: 'member' }),
    createUser({ prefix: 'outsider' }),
    createUser({ prefix: 'super', superAdmin: true }),
  ])
  const orgId = await orgWith(owner, [member], [admin])
  return { owner, admin, member, outsider, superAdmin, orgId }
}

const orgRow = async (id: string) => {
  const [row] =
    await sql`select name, description, settings, owner_id from public.organizations where id = ${id}`
  return row ? { ...row } : undefined
}
const roles = async (orgId: string) =>
  Object.fromEntries(
    (await sql`select user_id, role from public.organization_members where org_id = ${orgId}`).map((
      r,
    ) => [r.user_id, r.role]),
  )

const teamMemberships = async (userId: string) =>
  (await sql`select team_id from public.team_members where user_id = ${userId}`).map((r) =>
    r.team_id as string
  )

const ORG_FIELDS = ['created_at', 'description', 'id', 'name', 'owner_id', 'settings', 'updated_at']
const MEMBER_FIELDS = ['avatar_url', 'full_name', 'is_owner', 'joined_at', 'role', 'user_id']

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

test('GET /api/organizations/:id/members: the member view, owner first without joined_at', async () => {
  const c = await cast()
  await sql`update public.profiles set full_name = 'Mia Member', avatar_url = 'https://cdn.example.com/m.png' where id = ${c.member.id}`
  for (const u of [c.owner, c.admin, c.member, c.superAdmin]) {
    const res = await api(`/api/organizations/${c.orgId}/members`, { token: u.token })
    assert.equal(res.status, 200, JSON.stringify(res.body))
    assert.deepEqual(Object.keys(res.body), ['members'])
    const members = res.body.members
    assert.equal(members.length, 3)
    const [first, ...rest] = members
    assert.deepEqual(Object.keys(first).sort(), MEMBER_FIELDS.filter((f) => f !== 'joined_at'))
    assert.equal(first.user_id, c.owner.id)
    assert.equal(first.role, 'owner')
    assert.equal(first.is_owner, true)
    for (const m of rest) {
      assert.deepEqual(Object.keys(m).sort(), MEMBER_FIELDS)
      assert.equal(m.is_owner, false)
      assert.ok(!isNaN(Date.parse(m.joined_at)))
    }
    const byId = Object.fromEntries(members.map((m: any) => [m.user_id, m]))
    assert.equal(byId[c.admin.id].role, 'admin')
    assert.equal(byId[c.member.id].role, 'member')
    assert.equal(byId[c.member.id].full_name, 'Mia Member')
    assert.equal(byId[c.member.id].avatar_url, 'https://cdn.example.com/m.png')
    assert.equal(byId[c.admin.id].full_name, null)
  }
  const hidden = await api(`/api/organizations/${c.orgId}/members`, { token: c.outsider.token })
  assertError(hidden, 404)
  assert.ok(!JSON.stringify(hidden.body).includes(c.member.id))
  assertError(await api(`/api/organizations/${crypto.randomUUID()}/members`, { token: c.owner.token }), 404)
  assertError(await api('/api/organizations/xyz/members', { token: c.owner.token }), 400, 'id')
})

test('POST /api/organizations/:id/members: owners and super admins add; others refused; nothing written', async () => {
  const c = await cast()
  const [newbie, second, third] = await Promise.all([createUser(), createUser(), createUser()])
  const path = `/api/organizations/${c.orgId}/members`

  assertError(await api(path, { token: c.admin.token, body: { user_id: newbie.id, role: 'member' } }), 403)
  assertError(await api(path, { token: c.member.token, body: { user_id: newbie.id, role: 'admin' } }), 403)
  assertError(await api(path, { token: c.outsider.token, body: { user_id: newbie.id, role: 'member' } }), 404)
  assertError(
    await api(path, { token: c.outsider.token, body: { user_id: c.outsider.id, role: 'member' } }),
    404,
  )
  assertError(
    await api(`/api/organizations/${crypto.randomUUID()}/members`, {
      token: c.owner.token,
      body: { user_id: newbie.id, role: 'member' },
    }),
    404,
  )
  assert.equal((await roles(c.orgId))[newbie.id], undefined)
  assert.equal((await roles(c.orgId))[c.outsider.id], undefined)

  const added = await api(path, { token: c.owner.token, body: { user_id: newbie.id, role: 'member' } })
  assert.equal(added.status, 201, JSON.stringify(added.body))
  assert.deepEqual(Object.keys(added.body).sort(), MEMBER_FIELDS)
  assert.equal(added.body.user_id, newbie.id)
  assert.equal(added.body.role, 'member')
  assert.equal(added.body.is_owner, false)
  assert.ok(!isNaN(Date.parse(added.body.joined_at)))

  const asAdmin = await api(path, { token: c.owner.token, body: { user_id: second.id, role: 'admin' } })
  assert.equal(asAdmin.status, 201)
  assert.equal(asAdmin.body.role, 'admin')

  const bySuper = await api(path, { token: c.superAdmin.token, body: { user_id: third.id, role: 'member' } })
  assert.equal(bySuper.status, 201, JSON.stringify(bySuper.body))
  assert.equal(bySuper.body.role, 'member')

  // The new member now sees the organization.
  const view = await api(`/api/organizations/${c.orgId}`, { token: newbie.token })
  assert.equal(view.status, 200)
  assert.equal(view.body.user_role, 'member')

  // Adding an existing member again does not change their role.
  const again = await api(path, { token: c.owner.token, body: { user_id: newbie.id, role: 'admin' } })
  assert.ok(again.status >= 400 && again.status < 500, `duplicate add: ${again.status}`)
  assert.equal((await roles(c.orgId))[newbie.id], 'member')
})

test('POST /api/organizations/:id/members: bad bodies are 400 naming the field; nothing written', async () => {
  const c = await cast()
  const target = await createUser()
  const path = `/api/organizations/${c.orgId}/members`
  const before = await roles(c.orgId)
  const cases: [unknown, string][] = [
    [{ role: 'member' }, 'user_id'],
    [{ user_id: 'not-a-uuid', role: 'member' }, 'user_id'],
    [{ user_id: 42, role: 'member' }, 'user_id'],
    [{ user_id: target.id }, 'role'],
    [{ user_id: target.id, role: 'superuser' }, 'role'],
    [{ user_id: target.id, role: 'Admin' }, 'role'],
    [{ user_id: target.id, role: 7 }, 'role'],
    [{ user_id: target.id, role: 'member', joined_at: '2020-01-01' }, 'joined_at'],
    [{ user_id: crypto.randomUUID(), role: 'member' }, 'user_id'],
  ]
  for (const [body, field] of cases) {
    assertError(await api(path, { token: c.owner.token, body }), 400, field)
  }
  assertError(await api(path, { token: c.owner.token, rawBody: '{"user_id":' }), 400, 'Malformed JSON')
  assertError(
    await api('/api/organizations/bad/members', {
      token: c.owner.token,
      body: { user_id: target.id, role: 'member' },
    }),
    400,
    'id',
  )
  assert.deepEqual(await roles(c.orgId), before)
})

test('POST /api/organizations/:id/members with role owner transfers ownership to a member (owner only)', async () => {
  const c = await cast()
  const newcomer = await createUser()
  const path = `/api/organizations/${c.orgId}/members`
  // Only the current owner hands the organization over.
  assertError(await api(path, { token: c.admin.token, body: { user_id: c.admin.id, role: 'owner' } }), 403)
  assertError(await api(path, { token: c.member.token, body: { user_id: c.member.id, role: 'owner' } }), 403)
  assertError(
    await api(path, { token: c.outsider.token, body: { user_id: c.outsider.id, role: 'owner' } }),
    404,
  )
  assert.equal((await orgRow(c.orgId))?.owner_id, c.owner.id)

  // Ownership goes only to an existing member: someone outside gets the answer an unknown id gets.
  const outside = await api(path, { token: c.owner.token, body: { user_id: newcomer.id, role: 'owner' } })
  const unknown = await api(path, {
    token: c.owner.token,
    body: { user_id: crypto.randomUUID(), role: 'owner' },
  })
  assertError(outside, 400, /^user_id: /)
  assert.deepEqual([unknown.status, unknown.body], [outside.status, outside.body])
  assert.equal((await orgRow(c.orgId))?.owner_id, c.owner.id)
  assert.equal((await roles(c.orgId))[newcomer.id], undefined)

  assert.equal(
    (await api(path, { token: c.owner.token, body: { user_id: newcomer.id, role: 'member' } })).status,
    201,
  )
  const res = await api(path, { token: c.owner.token, body: { user_id: newcomer.id, role: 'owner' } })
  assert.equal(res.status, 201, JSON.stringify(res.body))
  assert.equal(res.body.user_id, newcomer.id)
  assert.equal(res.body.role, 'owner')
  assert.equal(res.body.is_owner, true)
  assert.equal('joined_at' in res.body, false, 'joined_at is absent for the owner')
  assert.equal((await orgRow(c.orgId))?.owner_id, newcomer.id)
  const r = await roles(c.orgId)
  assert.equal(r[newcomer.id], 'owner')
  assert.equal(r[c.owner.id], 'admin')
  assert.equal(Object.values(r).filter((x) => x === 'owner').length, 1)

  // The old owner lost the owner's rights; the new one has them.
  assertError(
    await api(`/api/organizations/${c.orgId}`, {
      method: 'PUT',
      token: c.owner.token,
      body: { name: 'old owner' },
    }),
    403,
  )
  const renamed = await api(`/api/organizations/${c.orgId}`, {
    method: 'PUT',
    token: newcomer.token,
    body: { name: 'new owner' },
  })
  assert.equal(renamed.status, 200)
  assert.equal(
    (await api(`/api/organizations/${c.orgId}`, { token: newcomer.token })).body.user_role,
    'owner',
  )
})

test('PUT /api/organizations/:id/members/:userId: owners change admin/member; never to or from owner', async () => {
  const c = await cast()
  const base = `/api/organizations/${c.orgId}/members`
  assertError(
    await api(`${base}/${c.member.id}`, { method: 'PUT', token: c.admin.token, body: { role: 'admin' } }),
    403,
  )
  assertError(
    await api(`${base}/${c.member.id}`, { method: 'PUT', token: c.member.token, body: { role: 'admin' } }),
    403,
  )
  assertError(
    await api(`${base}/${c.admin.id}`, { method: 'PUT', token: c.admin.token, body: { role: 'member' } }),
    403,
  )
  assertError(
    await api(`${base}/${c.member.id}`, { method: 'PUT', token: c.outsider.token, body: { role: 'admin' } }),
    404,
  )
  assertError(
    await api(`${base}/${c.outsider.id}`, { method: 'PUT', token: c.owner.token, body: { role: 'admin' } }),
    404,
  )
  assertError(
    await api(`/api/organizations/${crypto.randomUUID()}/members/${c.member.id}`, {
      method: 'PUT',
      token: c.owner.token,
      body: { role: 'admin' },
    }),
    404,
  )
  // Owner cannot be set here, and the owner's own role cannot be changed here.
  assertError(
    await api(`${base}/${c.member.id}`, { method: 'PUT', token: c.owner.token, body: { role: 'owner' } }),
    400,
    'role',
  )
  assertError(
    await api(`${base}/${c.owner.id}`, { method: 'PUT', token: c.owner.token, body: { role: 'member' } }),
    403,
  )
  for (
    const [body, field] of [[{}, 'role'], [{ role: 'boss' }, 'role'], [
      { role: 'admin', user_id: c.admin.id },
      'user_id',
    ]] as [unknown, string][]
  ) {
    assertError(
      await api(`${base}/${c.member.id}`, { method: 'PUT', token: c.owner.token, body }),
      400,
      field,
    )
  }
  assertError(
    await api(`${base}/not-a-user`, { method: 'PUT', token: c.owner.token, body: { role: 'admin' } }),
    400,
    'userId',
  )
  assertError(
    await api(`${base}/${c.member.id}`, { method: 'PUT', token: c.owner.token, rawBody: 'role=admin' }),
    400,
    'Malformed JSON',
  )
  assert.deepEqual(await roles(c.orgId), {
    [c.owner.id]: 'owner',
    [c.admin.id]: 'admin',
    [c.member.id]: 'member',
  })

  const promoted = await api(`${base}/${c.member.id}`, {
    method: 'PUT',
    token: c.owner.token,
    body: { role: 'admin' },
  })
  assert.equal(promoted.status, 200, JSON.stringify(promoted.body))
  assert.deepEqual(Object.keys(promoted.body).sort(), MEMBER_FIELDS)
  assert.equal(promoted.body.user_id, c.member.id)
  assert.equal(promoted.body.role, 'admin')
  assert.equal(promoted.body.is_owner, false)
  // An organization admin still has no owner rights.
  assertError(
    await api(`/api/organizations/${c.orgId}`, { method: 'PUT', token: c.member.token, body: { name: 'x' } }),
    403,
  )

  const bySuper = await api(`${base}/${c.admin.id}`, {
    method: 'PUT',
    token: c.superAdmin.token,
    body: { role: 'member' },
  })
  assert.equal(bySuper.status, 200)
  assert.equal(bySuper.body.role, 'member')
  assert.deepEqual(await roles(c.orgId), {
    [c.owner.id]: 'owner',
    [c.admin.id]: 'member',
    [c.member.id]: 'admin',
  })
})

test('DELETE /api/organizations/:id/members/:userId: owners remove, members remove themselves', async () => {
  const c = await cast()
  const [extra, another] = await Promise.all([createUser(), createUser()])
  await sql`insert into public.organization_members (org_id, user_id, role) values (${c.orgId}, ${extra.id}, 'member'), (${c.orgId}, ${another.id}, 'member')`
  const base = `/api/organizations/${c.orgId}/members`

  assertError(await api(`${base}/${extra.id}`, { method: 'DELETE', token: c.member.token }), 403)
  assertError(await api(`${base}/${extra.id}`, { method: 'DELETE', token: c.admin.token }), 403)
  assertError(await api(`${base}/${extra.id}`, { method: 'DELETE', token: c.outsider.token }), 404)
  assertError(await api(`${base}/${c.outsider.id}`, { method: 'DELETE', token: c.owner.token }), 404)
  // The owner row stays until ownership moves.
  assertError(await api(`${base}/${c.owner.id}`, { method: 'DELETE', token: c.owner.token }), 403)
  assertError(await api(`${base}/${c.owner.id}`, { method: 'DELETE', token: c.admin.token }), 403)
  assertError(await api(`${base}/zzz`, { method: 'DELETE', token: c.owner.token }), 400, 'userId')
  assert.equal(Object.keys(await roles(c.orgId)).length, 5)

  const self = await api(`${base}/${c.member.id}`, { method: 'DELETE', token: c.member.token })
  assert.equal(self.status, 200)
  assert.equal(typeof self.body.message, 'string')
  assertError(await api(`/api/organizations/${c.orgId}`, { token: c.member.token }), 404)

  const byOwner = await api(`${base}/${extra.id}`, { method: 'DELETE', token: c.owner.token })
  assert.equal(byOwner.status, 200)
  const bySuper = await api(`${base}/${another.id}`, { method: 'DELETE', token: c.superAdmin.token })
  assert.equal(bySuper.status, 200)
  const adminLeaves = await api(`${base}/${c.admin.id}`, { method: 'DELETE', token: c.admin.token })
  assert.equal(adminLeaves.status, 200)
  assert.deepEqual(await roles(c.orgId), { [c.owner.id]: 'owner' })
})

test('someone added to an organization is told, reads only their own notices, marks them read and can leave', async () => {
  const owner = await createUser({ prefix: 'owner' })
  const added = await createUser({ prefix: 'added' })
  const other = await createUser({ prefix: 'other' })
  const orgId = await orgWith(owner, [other])
  const teamId = await teamWith(orgId, owner)
  await sql`delete from public.notifications where user_id in ${sql([owner.id, added.id, other.id])}`

  assert.equal(
    (await api(`/api/organizations/${orgId}/members`, {
      token: owner.token,
      body: { user_id: added.id, role: 'member' },
    })).status,
    201,
  )
  assert.equal(
    (await api(`/api/teams/${teamId}`, { method: 'PUT', token: owner.token, body: { admin_id: added.id } }))
      .status,
    200,
  )

  const mine = await clientAs(added.token).from('notifications').select('id, user_id, type, payload, read_at')
    .order('created_at')
  assert.equal(mine.error, null)
  assert.deepEqual(mine.data!.map((n) => [n.type, n.payload.role, n.payload.by, n.read_at]), [
    ['organization.member_added', 'member', owner.id, null],
    ['team.member_added', 'admin', owner.id, null],
  ])
  assert.equal(mine.data![0].payload.organization_id, orgId)
  const ids: string[] = mine.data!.map((n) => n.id)
  for (const who of [owner, other]) {
    const theirs = await clientAs(who.token).from('notifications').select('id').in('id', ids)
    assert.deepEqual(theirs.data, [], 'nobody else reads them')
  }
  assert.deepEqual(
    (await clientAs().from('notifications').select('id')).data ?? [],
    [],
    'anonymous clients read none',
  )
  const forged = await clientAs(added.token).from('notifications').insert({
    user_id: added.id,
    type: 'organization.member_added',
  })
  assert.ok(forged.error, 'no client inserts notifications')

  const marked = await clientAs(added.token).rpc('mark_notifications_read', { notification_ids: [ids[0]] })
  assert.deepEqual([marked.error, marked.data], [null, 1])
  const all = await clientAs(added.token).rpc('mark_notifications_read', {})
  assert.deepEqual([all.error, all.data], [null, 1])

  // Leaving the organization also leaves the team they were made admin of.
  assert.equal(
    (await api(`/api/organizations/${orgId}/members/${added.id}`, { method: 'DELETE', token: added.token }))
      .status,
    200,
  )
  assert.deepEqual(await teamMemberships(added.id), [])
  assertError(await api(`/api/teams/${teamId}`, { token: added.token }), 404)
  const [{ admin_id }] = await sql`select admin_id from public.teams where id = ${teamId}`
  assert.equal(admin_id, owner.id, "the team falls back to the organization's owner")
})

test('POST /api/organizations/:id/transfer-ownership: only the current owner (or a super admin), only to a member', async () => {
  const c = await cast()
  const path = `/api/organizations/${c.orgId}/transfer-ownership`
  assertError(await api(path, { token: c.admin.token, body: { new_owner_id: c.admin.id } }), 403)
  assertError(await api(path, { token: c.member.token, body: { new_owner_id: c.member.id } }), 403)
  assertError(await api(path, { token: c.outsider.token, body: { new_owner_id: c.outsider.id } }), 404)
  assertError(
    await api(`/api/organizations/${crypto.randomUUID()}/transfer-ownership`, {
      token: c.owner.token,
      body: { new_owner_id: c.admin.id },
    }),
    404,
  )
  for (
    const [body, field] of [
      [{}, 'new_owner_id'],
      [{ new_owner_id: 'me' }, 'new_owner_id'],
      [{ new_owner_id: c.admin.id, keep: true }, 'keep'],
      [{ new_owner_id: crypto.randomUUID() }, 'new_owner_id'],
    ] as [unknown, string][]
  ) {
    assertError(await api(path, { token: c.owner.token, body }), 400, field)
  }
  assertError(await api(path, { token: c.owner.token, rawBody: '{' }), 400, 'Malformed JSON')
  assert.equal((await orgRow(c.orgId))?.owner_id, c.owner.id)
  assert.deepEqual(await roles(c.orgId), {
    [c.owner.id]: 'owner',
    [c.admin.id]: 'admin',
    [c.member.id]: 'member',
  })

  const res = await api(path, { token: c.owner.token, body: { new_owner_id: c.member.id } })
  assert.equal(res.status, 200, JSON.stringify(res.body))
  assert.equal(typeof res.body.message, 'string')
  assert.equal((await orgRow(c.orgId))?.owner_id, c.member.id)
  assert.deepEqual(await roles(c.orgId), {
    [c.owner.id]: 'admin',
    [c.admin.id]: 'admin',
    [c.member.id]: 'owner',
  })
  // The previous owner can no longer transfer it back.
  assertError(await api(path, { token: c.owner.token, body: { new_owner_id: c.owner.id } }), 403)
  const members = (await api(`/api/organizations/${c.orgId}/members`, { token: c.owner.token })).body.members
  assert.equal(members[0].user_id, c.member.id)
  assert.equal(members[0].is_owner, true)
  assert.equal('joined_at' in members[0], false)

  // A super admin may move it too, but only to a member: an outsider gets the unknown id's answer.
  const toOutsider = await api(path, { token: c.superAdmin.token, body: { new_owner_id: c.outsider.id } })
  const toNobody = await api(path, { token: c.superAdmin.token, body: { new_owner_id: crypto.randomUUID() } })
  assertError(toOutsider, 400, 'new_owner_id')
  assert.deepEqual([toNobody.status, toNobody.body], [toOutsider.status, toOutsider.body])
  assert.equal((await roles(c.orgId))[c.outsider.id], undefined)
  const bySuper = await api(path, { token: c.superAdmin.token, body: { new_owner_id: c.admin.id } })
  assert.equal(bySuper.status, 200, JSON.stringify(bySuper.body))
  assert.equal((await orgRow(c.orgId))?.owner_id, c.admin.id)
  assert.equal((await roles(c.orgId))[c.admin.id], 'owner')
  assert.equal((await roles(c.orgId))[c.member.id], 'admin')
})

test("removing someone from an organization removes them from its teams (not from other organizations' teams)", async () => {
  const c = await cast()
  const teamA = await teamWith(c.orgId, c.admin, [c.member])
  const teamB = await teamWith(c.orgId, c.member)
  const elsewhereOwner = await createUser()
  const elsewhere = await orgWith(elsewhereOwner, [c.member])
  const elsewhereTeam = await teamWith(elsewhere, elsewhereOwner, [c.member])

  const res = await api(`/api/organizations/${c.orgId}/members/${c.member.id}`, {
    method: 'DELETE',
    token: c.owner.token,
  })
  assert.equal(res.status, 200, JSON.stringify(res.body))
  const left = await sql`select team_id from public.team_members where user_id = ${c.member.id}`
  assert.deepEqual(left.map((r) => r.team_id), [elsewhereTeam])
  // The team they administered falls to the organization's owner.
  const [b] = await sql`select admin_id from public.teams where id = ${teamB}`
  assert.equal(b.admin_id, c.owner.id)
  const teamBMembers = (await api(`/api/teams/${teamB}/members`, { token: c.owner.token })).body.members
  assert.deepEqual(teamBMembers.map((m: any) => [m.user_id, m.role, m.is_admin]), [[
    c.owner.id,
    'admin',
    true,
  ]])
  const teamAMembers = (await api(`/api/teams/${teamA}/members`, { token: c.admin.token })).body.members
  assert.deepEqual(teamAMembers.map((m: any) => m.user_id), [c.admin.id])
  assertError(await api(`/api/teams/${teamA}`, { token: c.member.token }), 404)
})

test('a team member added while they are being removed from the organization is not left in its team (in SQL and through /api)', async () => {
  const owner = await createUser({ prefix: 'owner' })
  const member = await createUser({ prefix: 'member' })
  const orgId = await orgWith(owner, [member])
  const teamId = await teamWith(orgId, owner)
  // The removal is under way (not committed) while the team insert checks the organization
  // membership, which it still sees: the foreign key to organization_members decides.
  const remover = postgres(env('SUPABASE_DB_URL'), { max: 1, onnotice: () => {} })
  const adder = postgres(env('SUPABASE_DB_URL'), { max: 1, onnotice: () => {} })
  try {
    const removal = remover.begin(async (tx) => {
      await tx`delete from public.organization_members where org_id = ${orgId} and user_id = ${member.id}`
      await new Promise((r) => setTimeout(r, 300)) // the insert runs meanwhile
    })
    await new Promise((r) => setTimeout(r, 100))
    const insert =
      adder`insert into public.team_members (team_id, user_id, role) values (${teamId}, ${member.id}, 'member')`
        .then(() => 'inserted', (e) => e.code as string)
    await removal
    assert.equal(await insert, '23503', 'the insert fails on the foreign key once the removal commits')
  } finally {
    await remover.end()
    await adder.end()
  }
  assert.deepEqual(await teamMemberships(member.id), [])

  // The same race through the API, a few rounds: never a team member outside the organization.
  for (let round = 0; round < 8; round++) {
    const m = await createUser({ prefix: 'racer' })
    await sql`insert into public.organization_members (org_id, user_id, role) values (${orgId}, ${m.id}, 'member')`
    await Promise.all([
      api(`/api/teams/${teamId}/members`, { token: owner.token, body: { user_id: m.id, role: 'member' } }),
      api(`/api/organizations/${orgId}/members/${m.id}`, { method: 'DELETE', token: owner.token }),
    ])
    const [{ orphans }] = await sql`select count(*)::int as orphans from public.team_members tm
      where tm.team_id = ${teamId} and not exists (
        select 1 from public.organization_members om where om.org_id = tm.org_id and om.user_id = tm.user_id)`
    assert.equal(orphans, 0, `round ${round}`)
    assert.deepEqual(await teamMemberships(m.id), [], `round ${round}`)
  }
})

test('deleting an organization deletes its teams and memberships; shared entries fall back to owner-only', async () => {
  const c = await cast()
  const teamId = await teamWith(c.orgId, c.owner, [c.member])
  const notebook = await postNotebook(c.owner, {
    name: 'Team book',
    metadata_visibility: 'team',
    content_visibility: 'team',
    team_id: teamId,
  })
  const shared = [
    await postEntry(c.owner, {
      title: 'to the team',
      content: 'team text',
      metadata_visibility: 'team',
      content_visibility: 'team',
      team_id: teamId,
    }),
    await postEntry(c.owner, {
      title: 'to the org',
      content: 'org text',
      metadata_visibility: 'org',
      content_visibility: 'org',
      org_id: c.orgId,
    }),
    await postEntry(c.owner, {
      title: 'mixed',
      content: 'mixed text',
      metadata_visibility: 'org',
      content_visibility: 'team',
      team_id: teamId,
      org_id: c.orgId,
    }),
    await postEntry(c.owner, { title: 'inherits', content: 'notebook text', notebook_id: notebook.id }),
  ]
  const byMember = await api(`/api/journal/${shared[0].id}`, { token: c.member.token })
  assert.equal(byMember.status, 200)
  assert.equal(byMember.body.entry.content, 'team text')
  assert.equal(
    (await api(`/api/journal/${shared[3].id}`, { token: c.member.token })).body.entry.content,
    'notebook text',
  )

  const del = await api(`/api/organizations/${c.orgId}`, { method: 'DELETE', token: c.owner.token })
  assert.equal(del.status, 200, JSON.stringify(del.body))
  const [{ teams }] =
    await sql`select count(*)::int as teams from public.teams where org_id = ${c.orgId} or id = ${teamId}`
  const [{ tm }] = await sql`select count(*)::int as tm from public.team_members where team_id = ${teamId}`
  const [{ om }] =
    await sql`select count(*)::int as om from public.organization_members where org_id = ${c.orgId}`
  assert.deepEqual({ teams, tm, om }, { teams: 0, tm: 0, om: 0 })

  // Nothing is lost: the owner still reads every entry, now private.
  for (const e of shared) {
    const own = await api(`/api/journal/${e.id}`, { token: c.owner.token })
    assert.equal(own.status, 200, JSON.stringify(own.body))
    assert.equal(own.body.entry.content_hidden, false)
    assert.equal(own.body.entry.content, e.content)
    assert.equal(own.body.entry.team_id, null)
    assert.equal(own.body.entry.org_id, null)
    assert.equal(own.body.entry.metadata_visibility, 'user')
    assert.equal(own.body.entry.content_visibility, 'user')
  }
  const [nb] =
    await sql`select metadata_visibility, content_visibility, team_id from public.notebooks where id = ${notebook.id}`
  assert.deepEqual({ ...nb }, { metadata_visibility: 'user', content_visibility: 'user', team_id: null })
  // Nothing leaks: former members, admins and outsiders see none of them, by id or in a feed.
  for (const viewer of [c.member, c.admin, c.outsider]) {
    for (const e of shared) {
      assertError(await api(`/api/journal/${e.id}`, { token: viewer.token }), 404)
    }
    const feed = await api('/api/journal?scope=visible&limit=100', { token: viewer.token })
    assert.equal(feed.status, 200)
    const ids = new Set(feed.body.entries.map((e: { id: string }) => e.id))
    for (const e of shared) assert.equal(ids.has(e.id), false)
  }
  const ownFeed = await api('/api/journal?limit=100', { token: c.owner.token })
  assert.deepEqual(
    new Set(ownFeed.body.entries.map((e: { id: string }) => e.id)),
    new Set(shared.map((e) => e.id)),
  )
})

test('deleting an organization turns an org-only entry in a public notebook owner-only', async () => {
  const owner = await createUser({ prefix: 'owner' })
  const orgOwner = await createUser({ prefix: 'orgowner' })
  const orgId = await orgWith(orgOwner, [owner])
  const notebook = await postNotebook(owner, {
    name: 'Public',
    metadata_visibility: 'public',
    content_visibility: 'public',
  })
  const entry = await postEntry(owner, {
    title: 'org secret',
    content: 'only for the org',
    notebook_id: notebook.id,
    metadata_visibility: 'org',
    content_visibility: 'org',
    org_id: orgId,
  })
  assert.equal(
    (await api(`/api/organizations/${orgId}`, { method: 'DELETE', token: orgOwner.token })).status,
    200,
  )
  const anon = await clientAs().from('journal_entry_contents').select('content').eq('entry_id', entry.id)
  assert.deepEqual(anon.data, [])
  assert.equal((await api(`/api/journal/${entry.id}`, { token: orgOwner.token })).status, 404)
})

test('a member who leaves an organization takes their organization and team entries out of it; re-added, nothing comes back', async () => {
  const c = await cast()
  const teamId = await teamWith(c.orgId, c.owner, [c.member])
  const m = c.member
  const shared = [
    await postEntry(m, {
      title: 'to the org',
      content: 'org text',
      metadata_visibility: 'org',
      content_visibility: 'org',
      org_id: c.orgId,
    }),
    await postEntry(m, {
      title: 'to the team',
      content: 'team text',
      metadata_visibility: 'team',
      content_visibility: 'team',
      team_id: teamId,
    }),
    await postEntry(m, {
      title: 'mixed',
      content: 'mixed text',
      metadata_visibility: 'org',
      content_visibility: 'team',
      org_id: c.orgId,
      team_id: teamId,
    }),
  ]
  const orgBook = await postNotebook(m, {
    name: 'Org book',
    metadata_visibility: 'org',
    content_visibility: 'org',
    org_id: c.orgId,
  })
  shared.push(await postEntry(m, { title: 'in the org book', content: 'book text', notebook_id: orgBook.id }))
  for (const e of shared) {
    assert.equal((await api(`/api/journal/${e.id}`, { token: c.owner.token })).status, 200)
  }

  const left = await api(`/api/organizations/${c.orgId}/members/${m.id}`, {
    method: 'DELETE',
    token: m.token,
  })
  assert.equal(left.status, 200, JSON.stringify(left.body))
  for (const viewer of [c.owner, c.admin]) {
    for (const e of shared) {
      assertError(await api(`/api/journal/${e.id}`, { token: viewer.token }), 404)
      const { data } = await clientAs(viewer.token).from('journal_entry_details').select('id').eq('id', e.id)
      assert.deepEqual(data, [], 'PostgREST shows nothing either')
    }
  }
  const rows =
    await sql`select metadata_visibility, content_visibility, team_id, org_id from public.journal_entries where user_id = ${m.id}`
  assert.ok(
    rows.every((r) =>
      r.metadata_visibility === 'user' && r.content_visibility === 'user' && !r.team_id && !r.org_id
    ),
    JSON.stringify(rows),
  )
  // An edit reaches no one there; sharing back is refused.
  assert.equal(
    (await api(`/api/journal/${shared[0].id}`, {
      method: 'PUT',
      token: m.token,
      body: { content: 'edited' },
    })).status,
    200,
  )
  assertError(await api(`/api/journal/${shared[0].id}`, { token: c.owner.token }), 404)
  const share = { metadata_visibility: 'org', content_visibility: 'org', org_id: c.orgId }
  assertError(
    await api(`/api/journal/${shared[0].id}`, { method: 'PUT', token: m.token, body: share }),
    400,
    'org_id',
  )
  assertError(
    await api(`/api/notebooks/${orgBook.id}`, { method: 'PUT', token: m.token, body: share }),
    400,
    'org_id',
  )
  const patch = await clientAs(m.token).from('journal_entries').update(share).eq('id', shared[0].id).select(
    'id',
  )
  assert.equal(patch.error?.code, '22023', JSON.stringify(patch))

  const back = await api(`/api/organizations/${c.orgId}/members`, {
    token: c.owner.token,
    body: { user_id: m.id, role: 'member' },
  })
  assert.equal(back.status, 201, JSON.stringify(back.body))
  for (const e of shared) assertError(await api(`/api/journal/${e.id}`, { token: c.owner.token }), 404)
})

test("a former member's old organization and team notebooks are theirs alone: nothing written or moved there is shared (create, move, PostgREST)", async () => {
  const owner = await createUser({ prefix: 'owner' })
  const former = await createUser({ prefix: 'former' })
  const reader = await createUser({ prefix: 'reader' })
  const orgId = await orgWith(owner, [former, reader])
  const teamId = await teamWith(orgId, owner, [former, reader])
  const orgBook = await postNotebook(former, {
    name: 'For the org',
    metadata_visibility: 'org',
    content_visibility: 'org',
    org_id: orgId,
  })
  const teamBook = await postNotebook(former, {
    name: 'For the team',
    metadata_visibility: 'team',
    content_visibility: 'team',
    team_id: teamId,
  })
  const own =
    (await api('/api/journal', { token: former.token, body: { title: 'mine', content: 'x' } })).body.entry
  assert.equal(
    (await api(`/api/organizations/${orgId}/members/${former.id}`, { method: 'DELETE', token: owner.token }))
      .status,
    200,
  )

  // The old notebooks left the organization and its team with their owner: what goes in them
  // now is the former member's alone.
  for (const notebook of [orgBook, teamBook]) {
    const created = await api('/api/journal', {
      token: former.token,
      body: { title: 'still here', content: 'x', notebook_id: notebook.id },
    })
    assert.equal(created.status, 201, JSON.stringify(created.body))
    assertError(await api(`/api/journal/${created.body.entry.id}`, { token: reader.token }), 404)
    const direct = await clientAs(former.token).rpc('create_journal_entry', {
      title: 'direct',
      notebook_id: notebook.id,
    })
    assert.equal(direct.error, null, JSON.stringify(direct.error))
  }
  assert.equal(
    (await api(`/api/journal/${own.id}`, {
      method: 'PUT',
      token: former.token,
      body: { notebook_id: orgBook.id },
    })).status,
    200,
  )
  const moved = await clientAs(former.token).from('journal_entries').update({ notebook_id: teamBook.id }).eq(
    'id',
    own.id,
  )
  assert.equal(moved.error, null)

  const [{ n }] = await sql`select count(*)::int as n from public.journal_entries
    where user_id = ${former.id} and (meta_scope <> 'user' or content_scope <> 'user')`
  assert.equal(n, 0, 'nothing of theirs is shared with the organization or its team')
  const feed = await api('/api/journal?scope=visible', { token: reader.token })
  assert.equal(feed.status, 200)
  assert.deepEqual(
    feed.body.entries.filter((e: any) => e.user_id === former.id),
    [],
    "the organization's feed shows nothing of theirs",
  )
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

test("joined_at is the database's to set, not the client's", async () => {
  const owner = await createUser({ prefix: 'owner' })
  const other = await createUser()
  const orgId = await orgWith(owner)
  const { error } = await clientAs(owner.token).from('organization_members')
    .insert({ org_id: orgId, user_id: other.id, role: 'member', joined_at: '1999-12-31T00:00:00Z' })
  assert.equal(error?.code, '42501')
})

test('entries and texts written while their author is being removed from the organization leave it with them', async () => {
  const c = await cast()
  const m = c.member
  const book = await postNotebook(m, {
    name: 'Org book',
    metadata_visibility: 'org',
    content_visibility: 'org',
    org_id: c.orgId,
  })
  const bare = await clientAs(m.token).from('journal_entries')
    .insert({ title: 'no text yet', metadata_visibility: 'org', content_visibility: 'org', org_id: c.orgId })
    .select('id')
  assert.equal(bare.error, null)
  let removal: Promise<any> | undefined
  const inBook = await asUserInTransaction(m, async (tx) => {
    const [row] =
      await tx`insert into public.journal_entries (title, notebook_id) values ('raced in', ${book.id}) returning id`
    await tx`insert into public.journal_entry_contents (entry_id, content) values (${
      bare.data![0].id
    }, 'sent while leaving')`
    removal = api(`/api/organizations/${c.orgId}/members/${m.id}`, { method: 'DELETE', token: c.owner.token })
    await pause(300)
    return row.id as string
  })
  assert.equal((await removal!).status, 200)
  for (const id of [inBook, bare.data![0].id]) {
    const [row] = await sql`select e.meta_scope, e.content_scope, c.content_scope as text_scope
                              from public.journal_entries e left join public.journal_entry_contents c on c.entry_id = e.id where e.id = ${id}`
    assert.deepEqual(
      [row.meta_scope, row.content_scope, row.text_scope ?? 'user'],
      ['user', 'user', 'user'],
      id,
    )
    assertError(await api(`/api/journal/${id}`, { token: c.owner.token }), 404)
    const texts = await clientAs(c.owner.token).from('journal_entry_contents').select('content').eq(
      'entry_id',
      id,
    )
    assert.deepEqual(texts.data, [], 'PostgREST serves the organization none of it')
  }
})

test("a member editing their texts cannot make their removal or the organization's deletion fail (no deadlock)", async () => {
  for (const kind of ['remove member', 'delete organization'] as const) {
    const c = await cast()
    const m = c.member
    const teamId = await teamWith(c.orgId, c.owner, [m])
    for (const n of [1, 2, 3]) {
      await postEntry(m, {
        title: `shared ${n}`,
        content: `v${n}`,
        metadata_visibility: 'team',
        content_visibility: 'org',
        team_id: teamId,
        org_id: c.orgId,
      })
    }
    const reply = await editTextsAcrossRemoval(
      m,
      () =>
        kind === 'remove member'
          ? api(`/api/organizations/${c.orgId}/members/${m.id}`, { method: 'DELETE', token: c.owner.token })
          : api(`/api/organizations/${c.orgId}`, { method: 'DELETE', token: c.owner.token }),
    )
    assert.equal(reply.status, 200, `${kind}: ${reply.status} ${JSON.stringify(reply.body)}`)
    const rows = await sql`select e.meta_scope, c.content_scope, c.content from public.journal_entries e
                             join public.journal_entry_contents c on c.entry_id = e.id where e.user_id = ${m.id}`
    assert.ok(
      rows.every((r) => r.meta_scope === 'user' && r.content_scope === 'user'),
      `${kind}: ${JSON.stringify(rows)}`,
    )
    assert.equal(
      rows.filter((r) => r.content.startsWith('edited during removal')).length,
      2,
      `${kind}: the member's edits are kept`,
    )
  }
})
