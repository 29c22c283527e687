// /api/teams: every row of SPEC's Teams table, as team admin, team member, organization
// owner, organization member, outsider, super admin and anonymous; what deleting a team and
// removing a member do to what was shared with it.
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
  orgOwner: TestUser
  teamAdmin: TestUser
  teamMember: TestUser
  orgMember: TestUser
  outsider: TestUser
  superAdmin: TestUser
  orgId: string
  teamId: string
}

/** An organization with a team: its admin and a member, an organization member outside the team, and others. */
async function cast(): Promise<Cast> {
  const [orgOwner, teamAdmin, teamMember, orgMember, outsider, superAdmin] = await Promise.all([
    createUser({ prefix: 'orgowner' }),
    createUser({ prefix: 'teamadmin' }),
    createUser({ prefix: 'teammember' }),
    createUser({ prefix: 'orgmember' }),
    createUser({ prefix: 'outsider' }),
    createUser({ prefix: 'super', superAdmin: true }),
  ])
  const orgId = await orgWith(orgOwner, [teamAdmin, teamMember, orgMember])
  const teamId = await teamWith(orgId, teamAdmin, [teamMember])
  return { orgOwner, teamAdmin, teamMember, orgMember, outsider, superAdmin, orgId, teamId }
}

const TEAM_FIELDS = [
  'admin_id',
  'created_at',
  'description',
  'id',
  'name',
  'org_id',
  'organizations',
  'settings',
  'updated_at',
]
const MEMBER_FIELDS = ['avatar_url', 'full_name', 'is_admin', 'joined_at', 'role', 'user_id']

const teamRow = async (id: string) => {
  const [row] =
    await sql`select name, description, admin_id, settings, org_id from public.teams where id = ${id}`
  return row ? { ...row } : undefined
}
const teamRoles = async (teamId: string) =>
  Object.fromEntries(
    (await sql`select user_id, role from public.team_members where team_id = ${teamId}`).map((
      r,
    ) => [r.user_id, r.role]),
  )

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

test('deleting a team turns a team-only entry in a public notebook owner-only, not public', async () => {
  const owner = await createUser({ prefix: 'owner' })
  const admin = await createUser({ prefix: 'admin' })
  const orgId = await orgWith(admin, [owner])
  const teamId = await teamWith(orgId, admin, [owner])
  const notebook = await postNotebook(owner, {
    name: 'Public',
    metadata_visibility: 'public',
    content_visibility: 'public',
  })
  const entry = await postEntry(owner, {
    title: 'team secret',
    content: 'only for the team',
    notebook_id: notebook.id,
    metadata_visibility: 'team',
    content_visibility: 'team',
    team_id: teamId,
  })
  assert.equal((await api(`/api/teams/${teamId}`, { method: 'DELETE', token: admin.token })).status, 200)

  const anon = await clientAs().from('journal_entry_details').select('id').eq('id', entry.id)
  assert.deepEqual(anon.data, [])
  const stranger = await createUser()
  assert.equal((await api(`/api/journal/${entry.id}`, { token: stranger.token })).status, 404)
  const mine = await api(`/api/journal/${entry.id}`, { token: owner.token })
  assert.equal(mine.body.entry.content, 'only for the team', 'nothing is lost')
  assert.equal(mine.body.entry.metadata_visibility, 'user')
  assert.equal(mine.body.entry.notebook_id, null, 'left the public notebook')
})

test('GET /api/teams/:id/members: organization members see the member view, admin first without joined_at', async () => {
  const c = await cast()
  await sql`update public.profiles set full_name = 'Tea Member' where id = ${c.teamMember.id}`
  for (const u of [c.teamAdmin, c.teamMember, c.orgMember, c.orgOwner, c.superAdmin]) {
    const res = await api(`/api/teams/${c.teamId}/members`, { token: u.token })
    assert.equal(res.status, 200, JSON.stringify(res.body))
    assert.deepEqual(Object.keys(res.body), ['members'])
    const [admin, member, ...rest] = res.body.members
    assert.equal(rest.length, 0)
    assert.deepEqual(Object.keys(admin).sort(), MEMBER_FIELDS.filter((f) => f !== 'joined_at'))
    assert.equal(admin.user_id, c.teamAdmin.id)
    assert.equal(admin.role, 'admin')
    assert.equal(admin.is_admin, true)
    assert.deepEqual(Object.keys(member).sort(), MEMBER_FIELDS)
    assert.equal(member.user_id, c.teamMember.id)
    assert.equal(member.role, 'member')
    assert.equal(member.is_admin, false)
    assert.equal(member.full_name, 'Tea Member')
    assert.ok(!isNaN(Date.parse(member.joined_at)))
  }
  assertError(await api(`/api/teams/${c.teamId}/members`, { token: c.outsider.token }), 404)
  assertError(await api(`/api/teams/${crypto.randomUUID()}/members`, { token: c.teamAdmin.token }), 404)
  assertError(await api('/api/teams/1/members', { token: c.teamAdmin.token }), 400, 'id')
})

test('POST /api/teams/:id/members: team admins add organization members; others refused; nothing written', async () => {
  const c = await cast()
  const path = `/api/teams/${c.teamId}/members`
  assertError(
    await api(path, { token: c.teamMember.token, body: { user_id: c.orgMember.id, role: 'member' } }),
    403,
  )
  assertError(
    await api(path, { token: c.orgMember.token, body: { user_id: c.orgMember.id, role: 'member' } }),
    403,
  )
  // Organization owners are not team admins.
  assertError(
    await api(path, { token: c.orgOwner.token, body: { user_id: c.orgMember.id, role: 'member' } }),
    403,
  )
  assertError(
    await api(path, { token: c.outsider.token, body: { user_id: c.orgMember.id, role: 'member' } }),
    404,
  )
  assertError(
    await api(`/api/teams/${crypto.randomUUID()}/members`, {
      token: c.teamAdmin.token,
      body: { user_id: c.orgMember.id, role: 'member' },
    }),
    404,
  )
  // The user must already belong to the organization.
  assertError(
    await api(path, { token: c.teamAdmin.token, body: { user_id: c.outsider.id, role: 'member' } }),
    400,
    'user_id',
  )
  const cases: [unknown, string][] = [
    [{ role: 'member' }, 'user_id'],
    [{ user_id: 'x', role: 'member' }, 'user_id'],
    [{ user_id: c.orgMember.id }, 'role'],
    [{ user_id: c.orgMember.id, role: 'owner' }, 'role'],
    [{ user_id: c.orgMember.id, role: 'captain' }, 'role'],
    [{ user_id: c.orgMember.id, role: 'member', is_admin: true }, 'is_admin'],
  ]
  for (const [body, field] of cases) {
    assertError(await api(path, { token: c.teamAdmin.token, body }), 400, field)
  }
  assertError(await api(path, { token: c.teamAdmin.token, rawBody: '[' }), 400, 'Malformed JSON')
  assert.deepEqual(await teamRoles(c.teamId), { [c.teamAdmin.id]: 'admin', [c.teamMember.id]: 'member' })

  const added = await api(path, {
    token: c.teamAdmin.token,
    body: { user_id: c.orgMember.id, role: 'member' },
  })
  assert.equal(added.status, 201, JSON.stringify(added.body))
  assert.deepEqual(Object.keys(added.body).sort(), MEMBER_FIELDS)
  assert.equal(added.body.user_id, c.orgMember.id)
  assert.equal(added.body.role, 'member')
  assert.equal(added.body.is_admin, false)
  assert.equal((await api(`/api/teams/${c.teamId}`, { token: c.orgMember.token })).body.user_role, 'member')

  const superAdds = await api(path, {
    token: c.superAdmin.token,
    body: { user_id: c.orgOwner.id, role: 'admin' },
  })
  assert.equal(superAdds.status, 201, JSON.stringify(superAdds.body))
  assert.equal(superAdds.body.role, 'admin')
  assert.equal(superAdds.body.is_admin, false, "is_admin marks the team's admin_id only")
  assert.deepEqual(await teamRoles(c.teamId), {
    [c.teamAdmin.id]: 'admin',
    [c.teamMember.id]: 'member',
    [c.orgMember.id]: 'member',
    [c.orgOwner.id]: 'admin',
  })
})

test("PUT /api/teams/:id/members/:userId: team admins change roles, never the team admin's", async () => {
  const c = await cast()
  const base = `/api/teams/${c.teamId}/members`
  assertError(
    await api(`${base}/${c.teamMember.id}`, {
      method: 'PUT',
      token: c.teamMember.token,
      body: { role: 'admin' },
    }),
    403,
  )
  assertError(
    await api(`${base}/${c.teamMember.id}`, {
      method: 'PUT',
      token: c.orgMember.token,
      body: { role: 'admin' },
    }),
    403,
  )
  assertError(
    await api(`${base}/${c.teamMember.id}`, {
      method: 'PUT',
      token: c.outsider.token,
      body: { role: 'admin' },
    }),
    404,
  )
  assertError(
    await api(`${base}/${c.orgMember.id}`, {
      method: 'PUT',
      token: c.teamAdmin.token,
      body: { role: 'admin' },
    }),
    404,
  )
  // The team admin's role is not changed here (not even by a super admin).
  assertError(
    await api(`${base}/${c.teamAdmin.id}`, {
      method: 'PUT',
      token: c.teamAdmin.token,
      body: { role: 'member' },
    }),
    403,
  )
  assertError(
    await api(`${base}/${c.teamAdmin.id}`, {
      method: 'PUT',
      token: c.superAdmin.token,
      body: { role: 'member' },
    }),
    403,
  )
  for (
    const [body, field] of [[{ role: 'owner' }, 'role'], [{}, 'role'], [
      { role: 'admin', since: 1 },
      'since',
    ]] as [unknown, string][]
  ) {
    assertError(
      await api(`${base}/${c.teamMember.id}`, { method: 'PUT', token: c.teamAdmin.token, body }),
      400,
      field,
    )
  }
  assertError(
    await api(`${base}/me`, { method: 'PUT', token: c.teamAdmin.token, body: { role: 'admin' } }),
    400,
    'userId',
  )
  assert.deepEqual(await teamRoles(c.teamId), { [c.teamAdmin.id]: 'admin', [c.teamMember.id]: 'member' })

  const res = await api(`${base}/${c.teamMember.id}`, {
    method: 'PUT',
    token: c.teamAdmin.token,
    body: { role: 'admin' },
  })
  assert.equal(res.status, 200, JSON.stringify(res.body))
  assert.deepEqual(Object.keys(res.body).sort(), MEMBER_FIELDS)
  assert.equal(res.body.role, 'admin')
  assert.equal(res.body.is_admin, false)
  const back = await api(`${base}/${c.teamMember.id}`, {
    method: 'PUT',
    token: c.superAdmin.token,
    body: { role: 'member' },
  })
  assert.equal(back.status, 200)
  assert.equal(back.body.role, 'member')
  assert.deepEqual(await teamRoles(c.teamId), { [c.teamAdmin.id]: 'admin', [c.teamMember.id]: 'member' })
})

test('DELETE /api/teams/:id/members/:userId: team admins remove, members remove themselves', async () => {
  const c = await cast()
  await sql`insert into public.team_members (team_id, user_id, role) values (${c.teamId}, ${c.orgMember.id}, 'member')`
  const extra = await createUser()
  await sql`insert into public.organization_members (org_id, user_id, role) values (${c.orgId}, ${extra.id}, 'member')`
  await sql`insert into public.team_members (team_id, user_id, role) values (${c.teamId}, ${extra.id}, 'member')`
  const base = `/api/teams/${c.teamId}/members`

  assertError(await api(`${base}/${c.orgMember.id}`, { method: 'DELETE', token: c.teamMember.token }), 403)
  assertError(await api(`${base}/${c.teamMember.id}`, { method: 'DELETE', token: c.orgOwner.token }), 403)
  assertError(await api(`${base}/${c.teamMember.id}`, { method: 'DELETE', token: c.outsider.token }), 404)
  assertError(await api(`${base}/${c.outsider.id}`, { method: 'DELETE', token: c.teamAdmin.token }), 404)
  // The admin stays until admin_id changes.
  assertError(await api(`${base}/${c.teamAdmin.id}`, { method: 'DELETE', token: c.teamAdmin.token }), 403)
  assertError(await api(`${base}/0`, { method: 'DELETE', token: c.teamAdmin.token }), 400, 'userId')
  assert.equal(Object.keys(await teamRoles(c.teamId)).length, 4)

  const self = await api(`${base}/${c.teamMember.id}`, { method: 'DELETE', token: c.teamMember.token })
  assert.equal(self.status, 200, JSON.stringify(self.body))
  assert.equal(typeof self.body.message, 'string')
  const byAdmin = await api(`${base}/${c.orgMember.id}`, { method: 'DELETE', token: c.teamAdmin.token })
  assert.equal(byAdmin.status, 200)
  const bySuper = await api(`${base}/${extra.id}`, { method: 'DELETE', token: c.superAdmin.token })
  assert.equal(bySuper.status, 200)
  assert.deepEqual(await teamRoles(c.teamId), { [c.teamAdmin.id]: 'admin' })
  // Leaving the team keeps the organization membership.
  assert.equal((await api(`/api/teams/${c.teamId}`, { token: c.teamMember.token })).body.user_role, null)
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

test('POST /api/teams/:id/members by an outsider must be 404 whatever the user_id (no existence oracle)', async () => {
  const c = await cast()
  // An outsider adding themselves to a team they cannot see: the same 404 as for a team that
  // does not exist. Today the membership guard trigger runs before the RLS check and answers
  // 400 "user_id: must already be a member of the team's organization", telling the outsider
  // that the team exists.
  const hidden = await api(`/api/teams/${c.teamId}/members`, {
    token: c.outsider.token,
    body: { user_id: c.outsider.id, role: 'member' },
  })
  const missing = await api(`/api/teams/${crypto.randomUUID()}/members`, {
    token: c.outsider.token,
    body: { user_id: c.outsider.id, role: 'member' },
  })
  assertError(missing, 404)
  assert.deepEqual({ status: hidden.status, body: hidden.body }, {
    status: missing.status,
    body: missing.body,
  })
  assert.deepEqual(await teamRoles(c.teamId), { [c.teamAdmin.id]: 'admin', [c.teamMember.id]: 'member' })
})

test('a member removed from a team can no longer publish into it: their entries and notebooks leave it, on every path, and re-adding restores nothing', async () => {
  const c = await cast()
  const m = c.teamMember
  const notebook = await postNotebook(m, {
    name: 'Team book',
    metadata_visibility: 'team',
    content_visibility: 'team',
    team_id: c.teamId,
  })
  const shared = await postEntry(m, {
    title: 'to the team',
    content: 'team text',
    metadata_visibility: 'team',
    content_visibility: 'team',
    team_id: c.teamId,
  })
  const inherits = await postEntry(m, {
    title: 'in the book',
    content: 'book text',
    notebook_id: notebook.id,
  })
  const readsAsAdmin = async (id: string) => {
    const viaApi = await api(`/api/journal/${id}`, { token: c.teamAdmin.token })
    const viaRest = await clientAs(c.teamAdmin.token).from('journal_entry_details').select('content').eq(
      'id',
      id,
    )
    assert.equal(viaRest.error, null)
    return {
      api: viaApi.status === 200 ? viaApi.body.entry.content : viaApi.status,
      rest: viaRest.data?.map((r) => r.content),
    }
  }
  assert.deepEqual(await readsAsAdmin(shared.id), { api: 'team text', rest: ['team text'] })
  assert.deepEqual(await readsAsAdmin(inherits.id), { api: 'book text', rest: ['book text'] })

  const removed = await api(`/api/teams/${c.teamId}/members/${m.id}`, {
    method: 'DELETE',
    token: c.teamAdmin.token,
  })
  assert.equal(removed.status, 200, JSON.stringify(removed.body))
  for (const e of [shared, inherits]) {
    assert.deepEqual(await readsAsAdmin(e.id), { api: 404, rest: [] }, 'the team reads nothing of theirs')
  }
  const feed = await api(`/api/journal?scope=visible&team_id=${c.teamId}&limit=100`, {
    token: c.teamAdmin.token,
  })
  assert.deepEqual(feed.body.entries.filter((e: any) => e.user_id === m.id), [])
  const own = await api(`/api/journal/${shared.id}`, { token: m.token })
  assert.deepEqual(
    [
      own.body.entry.metadata_visibility,
      own.body.entry.content_visibility,
      own.body.entry.team_id,
      own.body.entry.content,
    ],
    ['user', 'user', null, 'team text'],
    "the entry is the member's alone now, nothing lost",
  )
  assert.equal(
    (await api(`/api/notebooks/${notebook.id}`, { token: m.token })).body.metadata_visibility,
    'user',
  )

  // Edits reach no one in the team; sharing back is refused on every path.
  assert.equal(
    (await api(`/api/journal/${shared.id}`, { method: 'PUT', token: m.token, body: { content: 'edited' } }))
      .status,
    200,
  )
  const patchText = await clientAs(m.token).from('journal_entry_contents').update({ content: 'edited too' })
    .eq('entry_id', inherits.id).select('entry_id')
  assert.equal(patchText.data?.length, 1)
  for (const e of [shared, inherits]) assert.deepEqual(await readsAsAdmin(e.id), { api: 404, rest: [] })
  const share = { metadata_visibility: 'team', content_visibility: 'team', team_id: c.teamId }
  assertError(
    await api(`/api/journal/${shared.id}`, { method: 'PUT', token: m.token, body: share }),
    400,
    'team_id',
  )
  assertError(
    await api('/api/journal', { token: m.token, body: { title: 'new', content: 'x', ...share } }),
    400,
    'team_id',
  )
  assertError(
    await api(`/api/notebooks/${notebook.id}`, { method: 'PUT', token: m.token, body: share }),
    400,
    'team_id',
  )
  const patch = await clientAs(m.token).from('journal_entries').update(share).eq('id', shared.id).select('id')
  assert.equal(patch.error?.code, '22023', JSON.stringify(patch))
  const rpc = await clientAs(m.token).rpc('update_journal_entry', { entry_id: shared.id, patch: share })
  assert.equal(rpc.error?.code, '22023', JSON.stringify(rpc))
  const nb = await clientAs(m.token).from('notebooks').update(share).eq('id', notebook.id).select('id')
  assert.equal(nb.error?.code, '22023', JSON.stringify(nb))

  // Added back: nothing is shared again until the member chooses to.
  const back = await api(`/api/teams/${c.teamId}/members`, {
    token: c.teamAdmin.token,
    body: { user_id: m.id, role: 'member' },
  })
  assert.equal(back.status, 201, JSON.stringify(back.body))
  for (const e of [shared, inherits]) assert.deepEqual(await readsAsAdmin(e.id), { api: 404, rest: [] })
  assert.equal(
    (await api(`/api/journal/${shared.id}`, { method: 'PUT', token: m.token, body: share })).status,
    200,
  )
  assert.deepEqual(await readsAsAdmin(shared.id), { api: 'edited', rest: ['edited'] })
})

/** What the team's admin reads of an entry: through /api, the details view and the text table. */
async function teamReads(c: Cast, id: string) {
  const viaApi = await api(`/api/journal/${id}`, { token: c.teamAdmin.token })
  const details = await clientAs(c.teamAdmin.token).from('journal_entry_details').select('title').eq('id', id)
  const texts = await clientAs(c.teamAdmin.token).from('journal_entry_contents').select('content').eq(
    'entry_id',
    id,
  )
  assert.equal(details.error, null)
  assert.equal(texts.error, null)
  return { api: viaApi.status, details: details.data?.length, texts: texts.data?.map((t) => t.content) }
}
const readsNothing = { api: 404, details: 0, texts: [] }

test('a former team member cannot widen an old entry or notebook into the team', async () => {
  const member = await createUser({ prefix: 'member' })
  const admin = await createUser({ prefix: 'admin' })
  const orgId = await orgWith(admin, [member])
  const teamId = await teamWith(orgId, admin, [member])
  const notebook = await postNotebook(member, { name: 'Kept', team_id: teamId })
  const entry = await postEntry(member, { title: 'private for now', content: 'x', team_id: teamId })
  await sql`delete from public.team_members where team_id = ${teamId} and user_id = ${member.id}`

  const widen = await api(`/api/journal/${entry.id}`, {
    method: 'PUT',
    token: member.token,
    body: { metadata_visibility: 'team', team_id: teamId },
  })
  assert.equal(widen.status, 400)
  assert.match(widen.body.error, /team_id/)
  const direct = await clientAs(member.token).from('journal_entries').update({ metadata_visibility: 'team' })
    .eq('id', entry.id)
  assert.ok(direct.error, 'a level-only change through PostgREST is checked too')
  const nb = await clientAs(member.token).from('notebooks').update({ metadata_visibility: 'team' }).eq(
    'id',
    notebook.id,
  )
  assert.ok(nb.error)
  const [row] = await sql`select meta_scope from public.journal_entries where id = ${entry.id}`
  assert.equal(row.meta_scope, 'user')
})

test("an entry put into the team's notebook while its author is being removed leaves the team with them, whichever commits first", async () => {
  // The author's insert first: the removal waits for it, then takes the entry out.
  let c = await cast()
  let m = c.teamMember
  let book = await postNotebook(m, {
    name: 'Team book',
    metadata_visibility: 'team',
    content_visibility: 'team',
    team_id: c.teamId,
  })
  let removal: Promise<any> | undefined
  const first = await asUserInTransaction(m, async (tx) => {
    const [row] =
      await tx`insert into public.journal_entries (title, notebook_id) values ('raced in', ${book.id}) returning id`
    removal = api(`/api/teams/${c.teamId}/members/${m.id}`, { method: 'DELETE', token: c.teamAdmin.token })
    await pause(300)
    return row.id as string
  })
  assert.equal((await removal!).status, 200)
  const [row] = await sql`select meta_scope, content_scope from public.journal_entries where id = ${first}`
  assert.deepEqual({ ...row }, { meta_scope: 'user', content_scope: 'user' })
  // A text the ex-member writes into it later reaches no one in the team.
  const text = await clientAs(m.token).from('journal_entry_contents').insert({
    entry_id: first,
    content: 'written after I left',
  })
  assert.equal(text.error, null)
  assert.deepEqual(await teamReads(c, first), readsNothing)

  // The removal first: the author's insert waits for it and finds the notebook no longer shared.
  c = await cast()
  m = c.teamMember
  book = await postNotebook(m, {
    name: 'Team book',
    metadata_visibility: 'team',
    content_visibility: 'team',
    team_id: c.teamId,
  })
  const admin = postgres(env('SUPABASE_DB_URL'), { max: 1, onnotice: () => {} })
  let insert: PromiseLike<any> | undefined
  try {
    await admin.begin(async (tx) => {
      await tx`select set_config('request.jwt.claims', ${
        JSON.stringify({ sub: c.teamAdmin.id, role: 'authenticated' })
      }, true),
                      set_config('role', 'authenticated', true)`
      await tx`delete from public.team_members where team_id = ${c.teamId} and user_id = ${m.id}`
      // .then: a PostgREST builder sends nothing until it is awaited.
      insert = clientAs(m.token).from('journal_entries').insert({ title: 'raced in', notebook_id: book.id })
        .select('id').then((r) => r)
      await pause(300)
    })
  } finally {
    await admin.end()
  }
  const inserted = await insert!
  assert.equal(inserted.error, null, JSON.stringify(inserted.error))
  const second = inserted.data![0].id
  const [late] = await sql`select meta_scope, content_scope from public.journal_entries where id = ${second}`
  assert.deepEqual({ ...late }, { meta_scope: 'user', content_scope: 'user' })
  assert.deepEqual(await teamReads(c, second), readsNothing)
})

test('a text written while its author is being removed from the team is not left readable by the team', async () => {
  const c = await cast()
  const m = c.teamMember
  // An entry shared with the team by its own level, its text not written yet (PostgREST).
  const made = await clientAs(m.token).from('journal_entries')
    .insert({
      title: 'no text yet',
      metadata_visibility: 'team',
      content_visibility: 'team',
      team_id: c.teamId,
    }).select('id')
  assert.equal(made.error, null)
  const id = made.data![0].id
  let removal: Promise<any> | undefined
  await asUserInTransaction(m, async (tx) => {
    await tx`insert into public.journal_entry_contents (entry_id, content) values (${id}, 'sent while leaving')`
    removal = api(`/api/teams/${c.teamId}/members/${m.id}`, { method: 'DELETE', token: c.teamAdmin.token })
    await pause(300)
  })
  assert.equal((await removal!).status, 200)
  const [text] =
    await sql`select content_scope, meta_scope from public.journal_entry_contents where entry_id = ${id}`
  assert.deepEqual({ ...text }, { content_scope: 'user', meta_scope: 'user' })
  assert.deepEqual(await teamReads(c, id), readsNothing)
  assert.equal(
    (await api(`/api/journal/${id}`, { token: m.token })).body.entry.content,
    'sent while leaving',
    'nothing lost',
  )
})

test("a member editing their texts cannot make their removal or the team's deletion fail (no deadlock; they wait their turn)", async () => {
  for (const kind of ['remove member', 'delete team'] as const) {
    const c = await cast()
    const m = c.teamMember
    for (const n of [1, 2, 3]) {
      await postEntry(m, {
        title: `shared ${n}`,
        content: `v${n}`,
        metadata_visibility: 'team',
        content_visibility: 'team',
        team_id: c.teamId,
      })
    }
    const reply = await editTextsAcrossRemoval(
      m,
      () =>
        kind === 'remove member'
          ? api(`/api/teams/${c.teamId}/members/${m.id}`, { method: 'DELETE', token: c.teamAdmin.token })
          : api(`/api/teams/${c.teamId}`, { method: 'DELETE', token: c.teamAdmin.token }),
    )
    assert.equal(reply.status, 200, `${kind}: ${reply.status} ${JSON.stringify(reply.body)}`)
    const rows = await sql`select e.meta_scope, c.content_scope, c.content from public.journal_entries e
                             join public.journal_entry_contents c on c.entry_id = e.id where e.user_id = ${m.id} order by e.title`
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

test("a member's new writes queue behind their pending removal, so writing in a loop cannot hold it off", async () => {
  const c = await cast()
  const m = c.teamMember
  const share = { metadata_visibility: 'team', content_visibility: 'team', team_id: c.teamId }
  let removal: Promise<any> | undefined
  let later: Promise<any> | undefined
  await asUserInTransaction(m, async (tx) => {
    // A write under way when the admin removes the member...
    await tx`insert into public.journal_entries (title, metadata_visibility, content_visibility, team_id)
             values ('under way', 'team', 'team', ${c.teamId})`
    removal = api(`/api/teams/${c.teamId}/members/${m.id}`, { method: 'DELETE', token: c.teamAdmin.token })
    await pause(300)
    // ...and one sent after the removal started: it must not overtake the removal.
    later = api('/api/journal', { token: m.token, body: { title: 'sent later', content: 'x', ...share } })
    await pause(300)
  })
  assert.equal((await removal!).status, 200)
  assertError(await later!, 400, 'team_id')
  const rows = await sql`select title, meta_scope from public.journal_entries where user_id = ${m.id}`
  assert.deepEqual(rows.map((r) => [r.title, r.meta_scope]), [['under way', 'user']])
})
