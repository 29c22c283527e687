// /api/teams: creating, listing, reading, changing and deleting teams, as team admin, team
// member, organization owner, organization member, outsider, super admin and anonymous (SPEC's
// Teams table; the members' routes are in teams_members_test.ts), and the same rules through
// PostgREST.
import { strict as assert } from 'node:assert'
import {
  api,
  assertError,
  badTokensFor,
  clientAs,
  createUser,
  orgWith,
  sql,
  teamWith,
  test,
  type TestUser,
} from './_helpers.ts'
import { cast, TEAM_FIELDS, teamRoles, teamRow } from './_teams.ts'

test('POST /api/teams: organization members create; 201 team with organizations {id, name}; admin defaults to creator', async () => {
  const c = await cast()
  const [{ name: orgName }] = await sql`select name from public.organizations where id = ${c.orgId}`
  const res = await api('/api/teams', {
    token: c.orgMember.token,
    body: { name: ' Runners ', description: 'Morning runs', org_id: c.orgId, settings: { color: 'red' } },
  })
  assert.equal(res.status, 201, JSON.stringify(res.body))
  assert.deepEqual(Object.keys(res.body).sort(), TEAM_FIELDS)
  assert.equal(res.body.name, 'Runners')
  assert.equal(res.body.description, 'Morning runs')
  assert.equal(res.body.org_id, c.orgId)
  assert.equal(res.body.admin_id, c.orgMember.id)
  assert.deepEqual(res.body.settings, { color: 'red' })
  assert.deepEqual(res.body.organizations, { id: c.orgId, name: orgName })
  assert.deepEqual(await teamRoles(res.body.id), { [c.orgMember.id]: 'admin' })

  // An explicit admin_id (an organization member) becomes the admin member.
  const withAdmin = await api('/api/teams', {
    token: c.orgMember.token,
    body: { name: 'Delegated', org_id: c.orgId, admin_id: c.teamMember.id },
  })
  assert.equal(withAdmin.status, 201, JSON.stringify(withAdmin.body))
  assert.equal(withAdmin.body.admin_id, c.teamMember.id)
  assert.equal(withAdmin.body.description, null)
  assert.deepEqual(withAdmin.body.settings, {})
  assert.deepEqual(await teamRoles(withAdmin.body.id), { [c.teamMember.id]: 'admin' })

  // A super admin may create a team in any organization, naming a member as its admin.
  const bySuper = await api('/api/teams', {
    token: c.superAdmin.token,
    body: { name: 'Staffed', org_id: c.orgId, admin_id: c.orgOwner.id },
  })
  assert.equal(bySuper.status, 201, JSON.stringify(bySuper.body))
  assert.equal(bySuper.body.admin_id, c.orgOwner.id)
})

test('POST /api/teams: outsiders get 404; bad bodies 400 naming the field; nothing written', async () => {
  const c = await cast()
  const count = async () =>
    (await sql`select count(*)::int as n from public.teams where org_id = ${c.orgId}`)[0].n
  const before = await count()
  assertError(
    await api('/api/teams', { token: c.outsider.token, body: { name: 'Sneaky', org_id: c.orgId } }),
    404,
  )
  assertError(
    await api('/api/teams', {
      token: c.orgMember.token,
      body: { name: 'Ghost org', org_id: crypto.randomUUID() },
    }),
    404,
  )
  const cases: [unknown, string][] = [
    [{ org_id: c.orgId }, 'name'],
    [{ name: '', org_id: c.orgId }, 'name'],
    [{ name: 3, org_id: c.orgId }, 'name'],
    [{ name: 'x'.repeat(201), org_id: c.orgId }, 'name'],
    [{ name: 'No org' }, 'org_id'],
    [{ name: 'Bad org', org_id: 'org-1' }, 'org_id'],
    [{ name: 'Bad admin', org_id: c.orgId, admin_id: 'me' }, 'admin_id'],
    [{ name: 'Outside admin', org_id: c.orgId, admin_id: c.outsider.id }, 'admin_id'],
    [{ name: 'Bad settings', org_id: c.orgId, settings: [] }, 'settings'],
    [{ name: 'Bad description', org_id: c.orgId, description: 1 }, 'description'],
    [{ name: 'Extra', org_id: c.orgId, members: [] }, 'members'],
    [{ name: 'Extra', org_id: c.orgId, id: crypto.randomUUID() }, 'id'],
  ]
  for (const [body, field] of cases) {
    assertError(await api('/api/teams', { token: c.orgMember.token, body }), 400, field)
  }
  assertError(
    await api('/api/teams', { token: c.orgMember.token, rawBody: '{"name":"x",' }),
    400,
    'Malformed JSON',
  )
  assert.equal(await count(), before)
  const [{ n }] = await sql`select count(*)::int as n from public.team_members where user_id in ${
    sql([c.outsider.id, c.orgMember.id])
  }`
  assert.equal(n, 0)
})

test('team endpoints: anonymous and bad tokens are 401 and change nothing', async () => {
  const c = await cast()
  const t = c.teamId
  const calls: [string, string, unknown?][] = [
    ['GET', '/api/teams'],
    ['GET', `/api/teams?org_id=${c.orgId}`],
    ['POST', '/api/teams', { name: 'anon', org_id: c.orgId }],
    ['GET', `/api/teams/${t}`],
    ['PUT', `/api/teams/${t}`, { name: 'hijacked' }],
    ['DELETE', `/api/teams/${t}`],
    ['GET', `/api/teams/${t}/members`],
    ['POST', `/api/teams/${t}/members`, { user_id: c.orgMember.id, role: 'member' }],
    ['PUT', `/api/teams/${t}/members/${c.teamMember.id}`, { role: 'admin' }],
    ['DELETE', `/api/teams/${t}/members/${c.teamMember.id}`],
  ]
  const bad = await badTokensFor(c.teamAdmin)
  for (const [method, path, body] of calls) {
    assertError(await api(path, { method, body }), 401)
    for (const [kind, token] of Object.entries(bad)) {
      assert.equal((await api(path, { method, body, token })).status, 401, `${method} ${path} with ${kind}`)
    }
  }
  assert.match((await teamRow(t))!.name, /^Team /)
  assert.deepEqual(await teamRoles(t), { [c.teamAdmin.id]: 'admin', [c.teamMember.id]: 'member' })
})

test("GET /api/teams: organization members see the organization's teams; ?org_id= filters; super admins see all", async () => {
  const c = await cast()
  const second = await teamWith(c.orgId, c.orgOwner)
  const otherOwner = await createUser()
  const otherOrg = await orgWith(otherOwner, [c.orgMember])
  const otherTeam = await teamWith(otherOrg, otherOwner)
  const ids = async (u: TestUser, q = '') => {
    const res = await api(`/api/teams?limit=100${q}`, { token: u.token })
    assert.equal(res.status, 200, JSON.stringify(res.body))
    return new Set(res.body.teams.map((t: { id: string }) => t.id))
  }
  assert.deepEqual(await ids(c.teamMember), new Set([c.teamId, second]))
  assert.deepEqual(await ids(c.orgMember), new Set([c.teamId, second, otherTeam]))
  assert.deepEqual(await ids(c.orgMember, `&org_id=${c.orgId}`), new Set([c.teamId, second]))
  assert.deepEqual(await ids(c.orgMember, `&org_id=${otherOrg}`), new Set([otherTeam]))
  assert.deepEqual(await ids(c.outsider), new Set())
  assert.deepEqual(await ids(c.outsider, `&org_id=${c.orgId}`), new Set())
  const superSees = await ids(c.superAdmin, `&org_id=${c.orgId}`)
  assert.deepEqual(superSees, new Set([c.teamId, second]))

  const res = await api(`/api/teams?org_id=${c.orgId}`, { token: c.teamMember.token })
  const [{ name: orgName }] = await sql`select name from public.organizations where id = ${c.orgId}`
  for (const t of res.body.teams) {
    assert.deepEqual(Object.keys(t).sort(), TEAM_FIELDS)
    assert.deepEqual(t.organizations, { id: c.orgId, name: orgName })
  }
  // Newest first, keyset-paginated.
  const page1 = await api(`/api/teams?org_id=${c.orgId}&limit=1`, { token: c.teamMember.token })
  assert.deepEqual(page1.body.teams.map((t: { id: string }) => t.id), [second])
  assert.equal(typeof page1.body.next_cursor, 'string')
  const page2 = await api(
    `/api/teams?org_id=${c.orgId}&limit=1&before=${encodeURIComponent(page1.body.next_cursor)}`,
    { token: c.teamMember.token },
  )
  assert.deepEqual(page2.body.teams.map((t: { id: string }) => t.id), [c.teamId])
  assert.equal(page2.body.next_cursor, null)
  for (
    const [q, field] of [['org_id=nope', 'org_id'], ['limit=500', 'limit'], ['before=%%%', 'before'], [
      'admin_id=' + c.teamAdmin.id,
      'admin_id',
    ]]
  ) {
    assertError(await api(`/api/teams?${q}`, { token: c.teamMember.token }), 400, field)
  }
})

test('GET /api/teams/:id: organization members get {team, user_role}; outsiders 404 like a missing id', async () => {
  const c = await cast()
  for (
    const [u, role] of [[c.teamAdmin, 'admin'], [c.teamMember, 'member'], [c.orgMember, null], [
      c.orgOwner,
      null,
    ], [c.superAdmin, null]] as const
  ) {
    const res = await api(`/api/teams/${c.teamId}`, { token: u.token })
    assert.equal(res.status, 200, JSON.stringify(res.body))
    assert.deepEqual(Object.keys(res.body).sort(), ['team', 'user_role'])
    assert.equal(res.body.user_role, role, u.email)
    assert.equal(res.body.team.id, c.teamId)
    assert.equal(res.body.team.admin_id, c.teamAdmin.id)
    assert.deepEqual(Object.keys(res.body.team).sort(), TEAM_FIELDS)
    assert.equal(res.body.team.organizations.id, c.orgId)
  }
  const hidden = await api(`/api/teams/${c.teamId}`, { token: c.outsider.token })
  const missing = await api(`/api/teams/${crypto.randomUUID()}`, { token: c.outsider.token })
  assertError(hidden, 404)
  assertError(missing, 404)
  assert.deepEqual(hidden.body, missing.body)
  assertError(await api('/api/teams/42', { token: c.teamAdmin.token }), 400, 'id')
})

test('PUT /api/teams/:id: team admins change name and description; others 403; outsiders 404', async () => {
  const c = await cast()
  const before = await teamRow(c.teamId)
  for (const u of [c.teamMember, c.orgMember]) {
    assertError(
      await api(`/api/teams/${c.teamId}`, { method: 'PUT', token: u.token, body: { name: 'Mine' } }),
      403,
    )
  }
  // The organization's owner is not the team's admin: name and description are not theirs to change.
  assertError(
    await api(`/api/teams/${c.teamId}`, {
      method: 'PUT',
      token: c.orgOwner.token,
      body: { description: 'owner says' },
    }),
    403,
  )
  assertError(
    await api(`/api/teams/${c.teamId}`, { method: 'PUT', token: c.outsider.token, body: { name: 'Mine' } }),
    404,
  )
  assertError(
    await api(`/api/teams/${crypto.randomUUID()}`, {
      method: 'PUT',
      token: c.teamAdmin.token,
      body: { name: 'x' },
    }),
    404,
  )
  // Team admins do not change admin_id.
  assertError(
    await api(`/api/teams/${c.teamId}`, {
      method: 'PUT',
      token: c.teamAdmin.token,
      body: { admin_id: c.teamMember.id },
    }),
    403,
  )
  assert.deepEqual(await teamRow(c.teamId), before)

  const res = await api(`/api/teams/${c.teamId}`, {
    method: 'PUT',
    token: c.teamAdmin.token,
    body: { name: 'Renamed', description: 'Described', settings: { k: 'v' } },
  })
  assert.equal(res.status, 200, JSON.stringify(res.body))
  assert.deepEqual(Object.keys(res.body).sort(), TEAM_FIELDS)
  assert.equal(res.body.name, 'Renamed')
  assert.equal(res.body.description, 'Described')
  assert.deepEqual(res.body.settings, { k: 'v' })
  assert.equal(res.body.organizations.id, c.orgId)
  assert.deepEqual(await teamRow(c.teamId), {
    ...before,
    name: 'Renamed',
    description: 'Described',
    settings: { k: 'v' },
  })

  // A member promoted to admin role is a team admin too.
  await sql`update public.team_members set role = 'admin' where team_id = ${c.teamId} and user_id = ${c.teamMember.id}`
  const coAdmin = await api(`/api/teams/${c.teamId}`, {
    method: 'PUT',
    token: c.teamMember.token,
    body: { description: 'co-admin' },
  })
  assert.equal(coAdmin.status, 200)
  assert.equal(coAdmin.body.description, 'co-admin')

  const bySuper = await api(`/api/teams/${c.teamId}`, {
    method: 'PUT',
    token: c.superAdmin.token,
    body: { name: 'Moderated', admin_id: c.orgMember.id },
  })
  assert.equal(bySuper.status, 200, JSON.stringify(bySuper.body))
  assert.equal(bySuper.body.name, 'Moderated')
  assert.equal(bySuper.body.admin_id, c.orgMember.id)
})

test('PUT /api/teams/:id: only organization owners change admin_id, to an organization member', async () => {
  const c = await cast()
  assertError(
    await api(`/api/teams/${c.teamId}`, {
      method: 'PUT',
      token: c.orgMember.token,
      body: { admin_id: c.orgMember.id },
    }),
    403,
  )
  assertError(
    await api(`/api/teams/${c.teamId}`, {
      method: 'PUT',
      token: c.orgOwner.token,
      body: { admin_id: c.outsider.id },
    }),
    400,
    'admin_id',
  )
  assertError(
    await api(`/api/teams/${c.teamId}`, {
      method: 'PUT',
      token: c.orgOwner.token,
      body: { admin_id: crypto.randomUUID() },
    }),
    400,
  )
  assert.equal((await teamRow(c.teamId))?.admin_id, c.teamAdmin.id)

  const res = await api(`/api/teams/${c.teamId}`, {
    method: 'PUT',
    token: c.orgOwner.token,
    body: { admin_id: c.orgMember.id },
  })
  assert.equal(res.status, 200, JSON.stringify(res.body))
  assert.equal(res.body.admin_id, c.orgMember.id)
  assert.equal((await teamRoles(c.teamId))[c.orgMember.id], 'admin')
  const members = (await api(`/api/teams/${c.teamId}/members`, { token: c.teamMember.token })).body.members
  assert.equal(members[0].user_id, c.orgMember.id)
  assert.equal(members[0].is_admin, true)
  assert.equal('joined_at' in members[0], false)
  // The new admin manages the team.
  const renamed = await api(`/api/teams/${c.teamId}`, {
    method: 'PUT',
    token: c.orgMember.token,
    body: { name: 'New admin' },
  })
  assert.equal(renamed.status, 200)
})

test('PUT /api/teams/:id: bad bodies are 400 naming the field and change nothing', async () => {
  const c = await cast()
  const otherOrg = await orgWith(c.teamAdmin)
  const before = await teamRow(c.teamId)
  const cases: [unknown, string][] = [
    [{}, 'Nothing to update'],
    [{ name: '' }, 'name'],
    [{ name: false }, 'name'],
    [{ description: 9 }, 'description'],
    [{ settings: 'on' }, 'settings'],
    [{ admin_id: 'someone' }, 'admin_id'],
    [{ org_id: otherOrg }, 'org_id'],
    [{ name: 'ok', created_at: 'now' }, 'created_at'],
  ]
  for (const [body, field] of cases) {
    assertError(
      await api(`/api/teams/${c.teamId}`, { method: 'PUT', token: c.teamAdmin.token, body }),
      400,
      field,
    )
  }
  assertError(
    await api(`/api/teams/${c.teamId}`, { method: 'PUT', token: c.teamAdmin.token, rawBody: 'name' }),
    400,
    'Malformed JSON',
  )
  assertError(
    await api('/api/teams/abc', { method: 'PUT', token: c.teamAdmin.token, body: { name: 'x' } }),
    400,
    'id',
  )
  assert.deepEqual(await teamRow(c.teamId), before)
})

test('DELETE /api/teams/:id: team admins and super admins; others 403; outsiders 404', async () => {
  const c = await cast()
  for (const u of [c.teamMember, c.orgMember]) {
    assertError(await api(`/api/teams/${c.teamId}`, { method: 'DELETE', token: u.token }), 403)
  }
  assertError(await api(`/api/teams/${c.teamId}`, { method: 'DELETE', token: c.outsider.token }), 404)
  assertError(
    await api(`/api/teams/${crypto.randomUUID()}`, { method: 'DELETE', token: c.teamAdmin.token }),
    404,
  )
  assertError(await api('/api/teams/x', { method: 'DELETE', token: c.teamAdmin.token }), 400, 'id')
  assert.ok(await teamRow(c.teamId))

  const res = await api(`/api/teams/${c.teamId}`, { method: 'DELETE', token: c.teamAdmin.token })
  assert.equal(res.status, 200, JSON.stringify(res.body))
  assert.equal(typeof res.body.message, 'string')
  assert.equal(await teamRow(c.teamId), undefined)
  assert.deepEqual(await teamRoles(c.teamId), {})
  assertError(await api(`/api/teams/${c.teamId}`, { token: c.teamAdmin.token }), 404)
  // The organization and its memberships stay.
  const [{ n }] =
    await sql`select count(*)::int as n from public.organization_members where org_id = ${c.orgId}`
  assert.equal(n, 4)

  const other = await cast()
  const bySuper = await api(`/api/teams/${other.teamId}`, { method: 'DELETE', token: other.superAdmin.token })
  assert.equal(bySuper.status, 200)
  assert.equal(await teamRow(other.teamId), undefined)
})

test('PostgREST: the team rules hold for a direct client too', async () => {
  const c = await cast()
  const asMember = clientAs(c.teamMember.token)
  const rename = await asMember.from('teams').update({ name: 'direct' }).eq('id', c.teamId).select('id')
  assert.deepEqual(rename.data ?? [], [])
  const addOutsider = await clientAs(c.teamAdmin.token).from('team_members').insert({
    team_id: c.teamId,
    user_id: c.outsider.id,
    role: 'member',
  })
  assert.ok(addOutsider.error, 'a team member must already be an organization member')
  const selfAdd = await clientAs(c.orgMember.token).from('team_members').insert({
    team_id: c.teamId,
    user_id: c.orgMember.id,
    role: 'admin',
  })
  assert.ok(selfAdd.error, 'organization members do not add themselves to a team')
  const move = await clientAs(c.teamAdmin.token).from('teams').update({ admin_id: c.teamMember.id }).eq(
    'id',
    c.teamId,
  )
  assert.ok(move.error, 'team admins do not change admin_id')
  const seen = await clientAs(c.outsider.token).from('teams').select('id').eq('id', c.teamId)
  assert.deepEqual(seen.data, [])
  const anon = await clientAs().from('teams').select('id').eq('id', c.teamId)
  assert.ok(anon.error || anon.data?.length === 0)
  const row = await teamRow(c.teamId)
  assert.match(row!.name, /^Team /)
  assert.equal(row!.admin_id, c.teamAdmin.id)
  assert.deepEqual(await teamRoles(c.teamId), { [c.teamAdmin.id]: 'admin', [c.teamMember.id]: 'member' })
})
