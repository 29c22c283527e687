// A member removed from a team, or a team deleted: what was shared with it leaves it on every
// path, also while the member writes at the same moment.
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
import { type Cast, cast } from './_teams.ts'

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
