// Regressions found by review: each was a real way around the rules; each must stay closed.
import { strict as assert } from 'node:assert'
import { api, clientAs, createUser, orgWith, postEntry, postNotebook, sql, teamWith, test } from './_helpers.ts'

test('deleting a team turns a team-only entry in a public notebook owner-only, not public', async () => {
  const owner = await createUser({ prefix: 'owner' })
  const admin = await createUser({ prefix: 'admin' })
  const orgId = await orgWith(admin, [owner])
  const teamId = await teamWith(orgId, admin, [owner])
  const notebook = await postNotebook(owner, { name: 'Public', metadata_visibility: 'public', content_visibility: 'public' })
  const entry = await postEntry(owner, {
    title: 'team secret', content: 'only for the team', notebook_id: notebook.id,
    metadata_visibility: 'team', content_visibility: 'team', team_id: teamId,
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

test('deleting an organization turns an org-only entry in a public notebook owner-only', async () => {
  const owner = await createUser({ prefix: 'owner' })
  const orgOwner = await createUser({ prefix: 'orgowner' })
  const orgId = await orgWith(orgOwner, [owner])
  const notebook = await postNotebook(owner, { name: 'Public', metadata_visibility: 'public', content_visibility: 'public' })
  const entry = await postEntry(owner, {
    title: 'org secret', content: 'only for the org', notebook_id: notebook.id,
    metadata_visibility: 'org', content_visibility: 'org', org_id: orgId,
  })
  assert.equal((await api(`/api/organizations/${orgId}`, { method: 'DELETE', token: orgOwner.token })).status, 200)
  const anon = await clientAs().from('journal_entry_contents').select('content').eq('entry_id', entry.id)
  assert.deepEqual(anon.data, [])
  assert.equal((await api(`/api/journal/${entry.id}`, { token: orgOwner.token })).status, 404)
})

test('a former team member cannot widen an old entry or notebook into the team', async () => {
  const member = await createUser({ prefix: 'member' })
  const admin = await createUser({ prefix: 'admin' })
  const orgId = await orgWith(admin, [member])
  const teamId = await teamWith(orgId, admin, [member])
  const notebook = await postNotebook(member, { name: 'Kept', team_id: teamId })
  const entry = await postEntry(member, { title: 'private for now', content: 'x', team_id: teamId })
  await sql`delete from public.team_members where team_id = ${teamId} and user_id = ${member.id}`

  const widen = await api(`/api/journal/${entry.id}`, { method: 'PUT', token: member.token, body: { metadata_visibility: 'team', team_id: teamId } })
  assert.equal(widen.status, 400)
  assert.match(widen.body.error, /team_id/)
  const direct = await clientAs(member.token).from('journal_entries').update({ metadata_visibility: 'team' }).eq('id', entry.id)
  assert.ok(direct.error, 'a level-only change through PostgREST is checked too')
  const nb = await clientAs(member.token).from('notebooks').update({ metadata_visibility: 'team' }).eq('id', notebook.id)
  assert.ok(nb.error)
  const [row] = await sql`select meta_scope from public.journal_entries where id = ${entry.id}`
  assert.equal(row.meta_scope, 'user')
})

test('PostgREST writes to a profile are held to the API\'s shape (no javascript: avatars, no stray preferences)', async () => {
  const user = await createUser()
  const db = clientAs(user.token)
  for (const patch of [
    { avatar_url: 'javascript:alert(document.cookie)' },
    { preferences: { theme: 'dark', notifications: true, injected: { a: 1 } } },
    { preferences: { active_tone_pack_id: 'not-a-uuid' } },
    { preferences: { theme: '' } },
  ]) {
    const { error } = await db.from('profiles').update(patch).eq('id', user.id)
    assert.equal(error?.code, '23514', JSON.stringify(patch))
  }
  const ok = await db.from('profiles').update({ avatar_url: 'https://cdn.example.com/me.png' }).eq('id', user.id).select('avatar_url')
  assert.deepEqual(ok.data, [{ avatar_url: 'https://cdn.example.com/me.png' }])
})

test('joined_at is the database\'s to set, not the client\'s', async () => {
  const owner = await createUser({ prefix: 'owner' })
  const other = await createUser()
  const orgId = await orgWith(owner)
  const { error } = await clientAs(owner.token).from('organization_members')
    .insert({ org_id: orgId, user_id: other.id, role: 'member', joined_at: '1999-12-31T00:00:00Z' })
  assert.equal(error?.code, '42501')
})
