// /api/organizations/:id/members and transfer-ownership: the member views, adding, changing
// and removing members, ownership transfer, and the notices members get when added.
import { strict as assert } from 'node:assert'
import { avatarUrl, api, assertError, clientAs, createUser, orgWith, sql, teamWith, test } from './_helpers.ts'
import { cast, MEMBER_FIELDS, orgRow, roles, teamMemberships } from './_organizations.ts'

test('GET /api/organizations/:id/members: the member view, owner first without joined_at', async () => {
  const c = await cast()
  await sql`update public.profiles set full_name = 'Mia Member', avatar_url = ${avatarUrl(c.member.id)} where id = ${c.member.id}`
  for (const u of [c.owner, c.admin, c.member, c.superAdmin]) {
    const res = await api(`/api/organizations/${c.orgId}/members`, { token: u.token })
    assert.equal(res.status, 200, JSON.stringify(res.body))
    assert.deepEqual(Object.keys(res.body), ['members', 'next_cursor'])
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
    assert.equal(byId[c.member.id].avatar_url, avatarUrl(c.member.id))
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

test("joined_at is the database's to set, not the client's", async () => {
  const owner = await createUser({ prefix: 'owner' })
  const other = await createUser()
  const orgId = await orgWith(owner)
  const { error } = await clientAs(owner.token).from('organization_members')
    .insert({ org_id: orgId, user_id: other.id, role: 'member', joined_at: '1999-12-31T00:00:00Z' })
  assert.equal(error?.code, '42501')
})
