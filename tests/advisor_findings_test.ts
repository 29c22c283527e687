// The security review's database findings (issue 6), through the real stack: each test
// failed before 20261122000000_advisor_clean.sql. (supabase/tests/advisor_clean.test.sql
// checks the same rules inside the database.)
import { strict as assert } from 'node:assert'
import postgres from 'postgres'
import { api, assertError, clientAs, createUser, env, orgWith, postNotebook, sql, teamWith, test } from './_helpers.ts'

const teamMemberships = async (userId: string) =>
  (await sql`select team_id from public.team_members where user_id = ${userId}`).map((r) => r.team_id as string)

test('finding 2: a team insert racing the removal from the organization cannot leave a team membership behind', async () => {
  const owner = await createUser({ prefix: 'owner' })
  const member = await createUser({ prefix: 'member' })
  const orgId = await orgWith(owner, [member])
  const teamId = await teamWith(orgId, owner)
  // The interleaving the review hit: the removal is under way (not committed) while the team
  // insert checks the organization membership, which it still sees.
  const remover = postgres(env('SUPABASE_DB_URL'), { max: 1, onnotice: () => {} })
  const adder = postgres(env('SUPABASE_DB_URL'), { max: 1, onnotice: () => {} })
  try {
    const removal = remover.begin(async (tx) => {
      await tx`delete from public.organization_members where org_id = ${orgId} and user_id = ${member.id}`
      await new Promise((r) => setTimeout(r, 300)) // the insert runs meanwhile
    })
    await new Promise((r) => setTimeout(r, 100))
    const insert = adder`insert into public.team_members (team_id, user_id, role) values (${teamId}, ${member.id}, 'member')`
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

test('finding 3: a former member cannot publish through an old notebook (create, move, PostgREST)', async () => {
  const owner = await createUser({ prefix: 'owner' })
  const former = await createUser({ prefix: 'former' })
  const reader = await createUser({ prefix: 'reader' })
  const orgId = await orgWith(owner, [former, reader])
  const teamId = await teamWith(orgId, owner, [former, reader])
  const orgBook = await postNotebook(former, { name: 'For the org', metadata_visibility: 'org', content_visibility: 'org', org_id: orgId })
  const teamBook = await postNotebook(former, { name: 'For the team', metadata_visibility: 'team', content_visibility: 'team', team_id: teamId })
  const own = (await api('/api/journal', { token: former.token, body: { title: 'mine', content: 'x' } })).body.entry
  assert.equal((await api(`/api/organizations/${orgId}/members/${former.id}`, { method: 'DELETE', token: owner.token })).status, 200)

  // Since issue 20 the old notebooks left the organization and its team with their owner:
  // what goes in them now is the former member's alone.
  for (const notebook of [orgBook, teamBook]) {
    const created = await api('/api/journal', { token: former.token, body: { title: 'still here', content: 'x', notebook_id: notebook.id } })
    assert.equal(created.status, 201, JSON.stringify(created.body))
    assertError(await api(`/api/journal/${created.body.entry.id}`, { token: reader.token }), 404)
    const direct = await clientAs(former.token).rpc('create_journal_entry', { title: 'direct', notebook_id: notebook.id })
    assert.equal(direct.error, null, JSON.stringify(direct.error))
  }
  assert.equal((await api(`/api/journal/${own.id}`, { method: 'PUT', token: former.token, body: { notebook_id: orgBook.id } })).status, 200)
  const moved = await clientAs(former.token).from('journal_entries').update({ notebook_id: teamBook.id }).eq('id', own.id)
  assert.equal(moved.error, null)

  const [{ n }] = await sql`select count(*)::int as n from public.journal_entries
    where user_id = ${former.id} and (meta_scope <> 'user' or content_scope <> 'user')`
  assert.equal(n, 0, 'nothing of theirs is shared with the organization or its team')
  const feed = await api('/api/journal?scope=visible', { token: reader.token })
  assert.equal(feed.status, 200)
  assert.deepEqual(feed.body.entries.filter((e: any) => e.user_id === former.id), [], 'the organization\'s feed shows nothing of theirs')
})

test('finding 4: someone added to an organization is told, reads only their own notices, marks them read and can leave', async () => {
  const owner = await createUser({ prefix: 'owner' })
  const added = await createUser({ prefix: 'added' })
  const other = await createUser({ prefix: 'other' })
  const orgId = await orgWith(owner, [other])
  const teamId = await teamWith(orgId, owner)
  await sql`delete from public.notifications where user_id in ${sql([owner.id, added.id, other.id])}`

  assert.equal((await api(`/api/organizations/${orgId}/members`, { token: owner.token, body: { user_id: added.id, role: 'member' } })).status, 201)
  assert.equal((await api(`/api/teams/${teamId}`, { method: 'PUT', token: owner.token, body: { admin_id: added.id } })).status, 200)

  const mine = await clientAs(added.token).from('notifications').select('id, user_id, type, payload, read_at').order('created_at')
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
  assert.deepEqual((await clientAs().from('notifications').select('id')).data ?? [], [], 'anonymous clients read none')
  const forged = await clientAs(added.token).from('notifications').insert({ user_id: added.id, type: 'organization.member_added' })
  assert.ok(forged.error, 'no client inserts notifications')

  const marked = await clientAs(added.token).rpc('mark_notifications_read', { notification_ids: [ids[0]] })
  assert.deepEqual([marked.error, marked.data], [null, 1])
  const all = await clientAs(added.token).rpc('mark_notifications_read', {})
  assert.deepEqual([all.error, all.data], [null, 1])

  // Leaving the organization also leaves the team they were made admin of.
  assert.equal((await api(`/api/organizations/${orgId}/members/${added.id}`, { method: 'DELETE', token: added.token })).status, 200)
  assert.deepEqual(await teamMemberships(added.id), [])
  assertError(await api(`/api/teams/${teamId}`, { token: added.token }), 404)
  const [{ admin_id }] = await sql`select admin_id from public.teams where id = ${teamId}`
  assert.equal(admin_id, owner.id, 'the team falls back to the organization\'s owner')
})

test('finding 7: PostgREST answers 404, not 500, when an RPC finds nothing', async () => {
  const owner = await createUser({ prefix: 'owner' })
  const stranger = await createUser({ prefix: 'stranger' })
  const orgId = await orgWith(owner)
  const teamId = await teamWith(orgId, owner)
  const db = clientAs(stranger.token)
  for (const [fn, args] of [
    ['list_organization_members', { target_org: orgId }],
    ['list_team_members', { target_team: teamId }],
    ['transfer_organization_ownership', { target_org: orgId, new_owner_id: stranger.id }],
    ['update_journal_entry', { entry_id: crypto.randomUUID(), patch: { title: 'x' } }],
  ] as const) {
    const res = await db.rpc(fn, args)
    assert.equal(res.status, 404, `${fn}: ${JSON.stringify(res.error)}`)
    assert.equal(res.error?.code, 'PT404', fn)
  }
  const admin = await createUser({ prefix: 'super', superAdmin: true })
  const nobody = await clientAs(admin.token).rpc('admin_adjust_drops', { target_user_id: crypto.randomUUID(), delta: 5, reason: 'x' })
  assert.equal(nobody.status, 404, JSON.stringify(nobody.error))
})

test('finding 8: anonymous clients do not read the internal scope columns; public entries still read', async () => {
  const author = await createUser({ prefix: 'author' })
  const orgId = await orgWith(author)
  const teamId = await teamWith(orgId, author)
  const res = await api('/api/journal', {
    token: author.token,
    body: { title: 'public title, team text', content: 'for the team', metadata_visibility: 'public', content_visibility: 'team', team_id: teamId },
  })
  assert.equal(res.status, 201)
  const id = res.body.entry.id
  const anon = clientAs()
  for (const [table, column, key] of [
    ['journal_entries', 'content_scope_id', 'id'], ['journal_entries', 'meta_scope_id', 'id'],
    ['journal_entry_contents', 'content_scope_id', 'entry_id'], ['notebooks', 'meta_scope_id', 'id'],
  ] as const) {
    const { data, error } = await anon.from(table).select(`${key}, ${column}`).limit(5)
    assert.ok(error && data === null, `${table}.${column} is not readable by anon`)
  }
  const plain = await anon.from('journal_entries').select('id, title, meta_scope').eq('id', id)
  assert.deepEqual(plain.data, [{ id, title: 'public title, team text', meta_scope: 'public' }])
  const details = await anon.from('journal_entry_details').select('id, content, content_hidden').eq('id', id)
  assert.deepEqual(details.data, [{ id, content: null, content_hidden: true }])
  const signedIn = await clientAs((await createUser()).token).from('journal_entry_contents').select('entry_id, content_scope_id')
  assert.ok(signedIn.error, 'signed-in clients do not read the contents\' scope columns either')
})

test('journal_feed as a super admin: each filter narrows everyone\'s entries (planned with the request\'s values)', async () => {
  const owner = await createUser({ prefix: 'owner' })
  const mate = await createUser({ prefix: 'mate' })
  const admin = await createUser({ prefix: 'super', superAdmin: true })
  const orgId = await orgWith(owner, [mate])
  const teamId = await teamWith(orgId, owner, [mate])
  const word = `needle${crypto.randomUUID().slice(0, 6)}`
  const tag = `t-${crypto.randomUUID().slice(0, 6)}`
  const nb = await postNotebook(owner, { name: 'team notebook', metadata_visibility: 'team', team_id: teamId })
  const post = async (u: typeof owner, body: Record<string, unknown>) =>
    (await api('/api/journal', { token: u.token, body: { tags: [tag], ...body } })).body.entry.id as string
  const team = await post(owner, { title: 'team', content: `has the ${word}`, metadata_visibility: 'team', team_id: teamId })
  const inNb = await post(mate, { title: 'mate in own private' })
  const nbEntry = await post(owner, { title: 'in the notebook', notebook_id: nb.id })
  const org = await post(mate, { title: 'org', mood: 'calm', metadata_visibility: 'org', org_id: orgId })
  const priv = await post(owner, { title: `private ${word}` })
  const feed = async (query: string) => {
    const res = await api(`/api/journal?scope=visible&limit=100&tag=${tag}${query}`, { token: admin.token })
    assert.equal(res.status, 200, JSON.stringify(res.body))
    return (res.body.entries as { id: string }[]).map((e) => e.id)
  }
  assert.deepEqual(await feed(''), [priv, org, nbEntry, inNb, team])
  assert.deepEqual(await feed(`&team_id=${teamId}`), [nbEntry, team])
  assert.deepEqual(await feed(`&org_id=${orgId}`), [org])
  assert.deepEqual(await feed(`&notebook_id=${nb.id}`), [nbEntry])
  assert.deepEqual(await feed('&mood=calm'), [org])
  assert.deepEqual(await feed(`&q=${word}`), [priv, team])
  const first = await api(`/api/journal?scope=visible&limit=2&tag=${tag}`, { token: admin.token })
  const next = await api(`/api/journal?scope=visible&limit=2&tag=${tag}&before=${first.body.next_cursor}`, { token: admin.token })
  assert.deepEqual(next.body.entries.map((e: { id: string }) => e.id), [nbEntry, inNb])
})
