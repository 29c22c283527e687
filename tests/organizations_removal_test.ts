// What removing a member (also while they write or are added to a team) and deleting an
// organization do to teams, memberships, notebooks and shared entries.
import { strict as assert } from 'node:assert'
import {
  api,
  assertError,
  asUserInTransaction,
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
} from './_helpers.ts'
import postgres from 'postgres'
import { cast, teamMemberships } from './_organizations.ts'

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
