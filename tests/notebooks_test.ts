// /api/notebooks: create, list, read, update, delete, and how entries inherit a notebook's
// visibility (SPEC "Visibility rules" 5): at once, and detached when the notebook goes.
import { strict as assert } from 'node:assert'
import {
  api,
  assertError,
  badTokensFor,
  postEntry,
  postNotebook,
  sharingWorld,
  sql,
  test,
  type TestUser,
} from './_helpers.ts'

const NOTEBOOK_FIELDS = [
  'content_visibility',
  'created_at',
  'id',
  'metadata_visibility',
  'name',
  'org_id',
  'row_version',
  'team_id',
  'updated_at',
  'user_id',
]

const notebookCount = async (u: TestUser) =>
  (await sql`select count(*)::int as n from public.notebooks where user_id = ${u.id}`)[0].n
const notebookRow = async (id: string) => {
  const [r] =
    await sql`select name, metadata_visibility, content_visibility, team_id, org_id, user_id from public.notebooks where id = ${id}`
  return r ? { ...r } : undefined
}
const read = (id: string, u: TestUser) => api(`/api/journal/${id}`, { token: u.token })

test('POST /api/notebooks: 201 notebook with the defaults (user, user)', async () => {
  const w = await sharingWorld()
  const res = await api('/api/notebooks', { token: w.owner.token, body: { name: '  Dreams ' } })
  assert.equal(res.status, 201, JSON.stringify(res.body))
  assert.deepEqual(Object.keys(res.body).sort(), NOTEBOOK_FIELDS)
  assert.equal(res.body.name, 'Dreams')
  assert.equal(res.body.user_id, w.owner.id)
  assert.equal(res.body.metadata_visibility, 'user')
  assert.equal(res.body.content_visibility, 'user')
  assert.equal(res.body.team_id, null)
  assert.equal(res.body.org_id, null)

  const shared = await api('/api/notebooks', {
    token: w.owner.token,
    body: {
      name: 'Shared',
      metadata_visibility: 'org',
      content_visibility: 'team',
      team_id: w.teamId,
      org_id: w.orgId,
    },
  })
  assert.equal(shared.status, 201, JSON.stringify(shared.body))
  assert.equal(shared.body.metadata_visibility, 'org')
  assert.equal(shared.body.content_visibility, 'team')
  assert.equal(shared.body.team_id, w.teamId)
  assert.equal(shared.body.org_id, w.orgId)
  assert.deepEqual(await notebookRow(shared.body.id), {
    name: 'Shared',
    metadata_visibility: 'org',
    content_visibility: 'team',
    team_id: w.teamId,
    org_id: w.orgId,
    user_id: w.owner.id,
  })
})

test('POST /api/notebooks: invalid visibility and bad bodies are 400 naming the field; nothing written', async () => {
  const w = await sharingWorld()
  const cases: [TestUser, unknown, string][] = [
    [w.owner, {}, 'name'],
    [w.owner, { name: '' }, 'name'],
    [w.owner, { name: 12 }, 'name'],
    [w.owner, { name: 'n'.repeat(201) }, 'name'],
    [w.owner, { name: 'x', metadata_visibility: 'friends' }, 'metadata_visibility'],
    [w.owner, { name: 'x', content_visibility: 'private' }, 'content_visibility'],
    [w.owner, { name: 'x', metadata_visibility: null }, 'metadata_visibility'],
    [w.owner, { name: 'x', metadata_visibility: 'team' }, 'team_id'],
    [w.owner, { name: 'x', content_visibility: 'team', org_id: w.orgId }, 'team_id'],
    [w.owner, { name: 'x', content_visibility: 'org' }, 'org_id'],
    [w.owner, { name: 'x', metadata_visibility: 'org', team_id: w.teamId }, 'org_id'],
    [w.owner, { name: 'x', metadata_visibility: 'team', team_id: 'team-1' }, 'team_id'],
    [w.owner, { name: 'x', user_id: w.stranger.id }, 'user_id'],
    [w.owner, { name: 'x', color: 'blue' }, 'color'],
    // Nobody shares into a team or an organization they are not in.
    [w.stranger, { name: 'x', metadata_visibility: 'team', team_id: w.teamId }, 'team_id'],
    [w.stranger, { name: 'x', metadata_visibility: 'org', org_id: w.orgId }, 'org_id'],
    [w.orgmate, { name: 'x', content_visibility: 'team', team_id: w.teamId }, 'team_id'],
    [w.owner, { name: 'x', metadata_visibility: 'team', team_id: crypto.randomUUID() }, 'team_id'],
  ]
  for (const [u, body, field] of cases) {
    assertError(await api('/api/notebooks', { token: u.token, body }), 400, field)
  }
  assertError(
    await api('/api/notebooks', { token: w.owner.token, rawBody: '{"name":}' }),
    400,
    'Malformed JSON',
  )
  for (const u of [w.owner, w.stranger, w.orgmate]) assert.equal(await notebookCount(u), 0)
})

test('notebook endpoints: anonymous and bad tokens are 401', async () => {
  const w = await sharingWorld()
  const nb = await postNotebook(w.owner, { name: 'mine' })
  const bad = await badTokensFor(w.owner)
  const calls: [string, string, unknown?][] = [
    ['GET', '/api/notebooks'],
    ['POST', '/api/notebooks', { name: 'anon' }],
    ['GET', `/api/notebooks/${nb.id}`],
    ['PUT', `/api/notebooks/${nb.id}`, { name: 'anon' }],
    ['DELETE', `/api/notebooks/${nb.id}`],
  ]
  for (const [method, path, body] of calls) {
    assertError(await api(path, { method, body }), 401)
    for (const [kind, token] of Object.entries(bad)) {
      assert.equal((await api(path, { method, body, token })).status, 401, `${method} ${path} with ${kind}`)
    }
  }
  assert.equal((await notebookRow(nb.id))?.name, 'mine')
})

test("GET /api/notebooks: the caller's own notebooks, newest first, paginated", async () => {
  const w = await sharingWorld()
  const mine: string[] = []
  for (let i = 0; i < 5; i++) mine.push((await postNotebook(w.teammate, { name: `nb ${i}` })).id)
  // Someone else's notebook shared with the caller's team is not in their list.
  await postNotebook(w.owner, { name: 'shared', metadata_visibility: 'team', team_id: w.teamId })
  const all = await api('/api/notebooks', { token: w.teammate.token })
  assert.equal(all.status, 200)
  assert.deepEqual(all.body.notebooks.map((n: { id: string }) => n.id), [...mine].reverse())
  assert.equal(all.body.next_cursor, null)
  assert.deepEqual(Object.keys(all.body.notebooks[0]).sort(), NOTEBOOK_FIELDS)

  const seen: string[] = []
  let cursor: string | null = null
  do {
    const res: any = await api(
      `/api/notebooks?limit=2${cursor ? `&before=${encodeURIComponent(cursor)}` : ''}`,
      { token: w.teammate.token },
    )
    assert.equal(res.status, 200)
    assert.ok(res.body.notebooks.length <= 2)
    seen.push(...res.body.notebooks.map((n: { id: string }) => n.id))
    cursor = res.body.next_cursor
  } while (cursor)
  assert.deepEqual(seen, [...mine].reverse())
  assert.deepEqual((await api('/api/notebooks', { token: w.stranger.token })).body.notebooks, [])
  for (const q of ['limit=0', 'limit=101', 'before=x', 'user_id=' + w.owner.id]) {
    assertError(await api(`/api/notebooks?${q}`, { token: w.teammate.token }), 400, q.split('=')[0])
  }
})

test("GET /api/notebooks/:id: visible by the notebook's metadata level; invisible is 404 like a missing id", async () => {
  const w = await sharingWorld()
  const priv = await postNotebook(w.owner, { name: 'private', content_visibility: 'team', team_id: w.teamId })
  const team = await postNotebook(w.owner, { name: 'team', metadata_visibility: 'team', team_id: w.teamId })
  const org = await postNotebook(w.owner, { name: 'org', metadata_visibility: 'org', org_id: w.orgId })
  const pub = await postNotebook(w.owner, { name: 'public', metadata_visibility: 'public' })
  const expect: [any, TestUser[], TestUser[]][] = [
    [priv, [w.owner, w.superAdmin], [w.teammate, w.orgmate, w.stranger]],
    [team, [w.owner, w.teammate, w.superAdmin], [w.orgmate, w.stranger]],
    [org, [w.owner, w.teammate, w.orgmate, w.superAdmin], [w.stranger]],
    [pub, [w.owner, w.teammate, w.orgmate, w.stranger, w.superAdmin], []],
  ]
  const missing = await api(`/api/notebooks/${crypto.randomUUID()}`, { token: w.stranger.token })
  assertError(missing, 404)
  for (const [nb, allowed, refused] of expect) {
    for (const u of allowed) {
      const res = await api(`/api/notebooks/${nb.id}`, { token: u.token })
      assert.equal(res.status, 200, `${nb.name} for ${u.email}`)
      assert.deepEqual(res.body, nb)
    }
    for (const u of refused) {
      const res = await api(`/api/notebooks/${nb.id}`, { token: u.token })
      assert.deepEqual(
        { status: res.status, body: res.body },
        { status: 404, body: missing.body },
        `${nb.name} for ${u.email}`,
      )
    }
  }
  assertError(await api('/api/notebooks/nb-1', { token: w.owner.token }), 400, 'id')
})

test('PUT /api/notebooks/:id: the owner only (403 for a viewer, 404 for others); bad bodies 400', async () => {
  const w = await sharingWorld()
  const nb = await postNotebook(w.owner, {
    name: 'team book',
    metadata_visibility: 'team',
    team_id: w.teamId,
  })
  const before = await notebookRow(nb.id)
  assertError(
    await api(`/api/notebooks/${nb.id}`, { method: 'PUT', token: w.teammate.token, body: { name: 'mine' } }),
    403,
  )
  assertError(
    await api(`/api/notebooks/${nb.id}`, { method: 'PUT', token: w.orgmate.token, body: { name: 'mine' } }),
    404,
  )
  assertError(
    await api(`/api/notebooks/${nb.id}`, { method: 'PUT', token: w.stranger.token, body: { name: 'mine' } }),
    404,
  )
  assertError(
    await api(`/api/notebooks/${crypto.randomUUID()}`, {
      method: 'PUT',
      token: w.owner.token,
      body: { name: 'x' },
    }),
    404,
  )
  const cases: [unknown, string][] = [
    [{}, 'Nothing to update'],
    [{ name: '' }, 'name'],
    [{ metadata_visibility: 'everyone' }, 'metadata_visibility'],
    [{ content_visibility: 'org' }, 'org_id'],
    [{ metadata_visibility: 'team', team_id: null }, 'team_id'],
    [{ team_id: null }, 'team_id'],
    [{ org_id: w.orgId, team_id: crypto.randomUUID() }, 'team_id'],
    [{ user_id: w.teammate.id }, 'user_id'],
    [{ name: 'x', shared: true }, 'shared'],
  ]
  for (const [body, field] of cases) {
    assertError(
      await api(`/api/notebooks/${nb.id}`, { method: 'PUT', token: w.owner.token, body }),
      400,
      field,
    )
  }
  assertError(
    await api(`/api/notebooks/${nb.id}`, { method: 'PUT', token: w.owner.token, rawBody: '{"name"' }),
    400,
    'Malformed JSON',
  )
  assertError(
    await api('/api/notebooks/1', { method: 'PUT', token: w.owner.token, body: { name: 'x' } }),
    400,
    'id',
  )
  assert.deepEqual(await notebookRow(nb.id), before)

  const res = await api(`/api/notebooks/${nb.id}`, {
    method: 'PUT',
    token: w.owner.token,
    body: { name: 'org book', metadata_visibility: 'org', content_visibility: 'org', org_id: w.orgId },
  })
  assert.equal(res.status, 200, JSON.stringify(res.body))
  assert.deepEqual(Object.keys(res.body).sort(), NOTEBOOK_FIELDS)
  assert.equal(res.body.name, 'org book')
  assert.equal(res.body.metadata_visibility, 'org')
  assert.equal(res.body.content_visibility, 'org')
  assert.equal(res.body.team_id, w.teamId)
  assert.equal(res.body.org_id, w.orgId)
  assert.ok(Date.parse(res.body.updated_at) > Date.parse(nb.updated_at))
  // The organization member now sees it; still only the owner changes it.
  assert.equal((await api(`/api/notebooks/${nb.id}`, { token: w.orgmate.token })).status, 200)
  assertError(
    await api(`/api/notebooks/${nb.id}`, { method: 'PUT', token: w.orgmate.token, body: { name: 'mine' } }),
    403,
  )
})

test('DELETE /api/notebooks/:id: the owner only; its entries are kept, detached and private again', async () => {
  const w = await sharingWorld()
  const nb = await postNotebook(w.owner, {
    name: 'team book',
    metadata_visibility: 'team',
    content_visibility: 'team',
    team_id: w.teamId,
  })
  const inheriting = await postEntry(w.owner, {
    title: 'inherits',
    content: 'shared through the notebook',
    notebook_id: nb.id,
  })
  const explicit = await postEntry(w.owner, {
    title: 'explicit',
    content: 'shared on its own',
    notebook_id: nb.id,
    metadata_visibility: 'org',
    content_visibility: 'org',
    org_id: w.orgId,
  })
  assert.equal((await read(inheriting.id, w.teammate)).body.entry.content, 'shared through the notebook')

  assertError(await api(`/api/notebooks/${nb.id}`, { method: 'DELETE', token: w.teammate.token }), 403)
  assertError(await api(`/api/notebooks/${nb.id}`, { method: 'DELETE', token: w.stranger.token }), 404)
  assertError(
    await api(`/api/notebooks/${crypto.randomUUID()}`, { method: 'DELETE', token: w.owner.token }),
    404,
  )
  assertError(await api('/api/notebooks/zz', { method: 'DELETE', token: w.owner.token }), 400, 'id')
  assert.ok(await notebookRow(nb.id))

  const res = await api(`/api/notebooks/${nb.id}`, { method: 'DELETE', token: w.owner.token })
  assert.equal(res.status, 200, JSON.stringify(res.body))
  assert.equal(typeof res.body.message, 'string')
  assert.equal(await notebookRow(nb.id), undefined)
  assertError(await api(`/api/notebooks/${nb.id}`, { token: w.owner.token }), 404)

  const kept = await read(inheriting.id, w.owner)
  assert.equal(kept.status, 200)
  assert.equal(kept.body.entry.notebook_id, null)
  assert.equal(kept.body.entry.content, 'shared through the notebook')
  assert.equal(kept.body.entry.title, 'inherits')
  // Without its notebook the entry is the owner's alone again.
  assertError(await read(inheriting.id, w.teammate), 404)
  // An explicit level does not depend on the notebook.
  const still = await read(explicit.id, w.orgmate)
  assert.equal(still.status, 200)
  assert.equal(still.body.entry.notebook_id, null)
  assert.equal(still.body.entry.content, 'shared on its own')
  const [{ n }] = await sql`select count(*)::int as n from public.journal_entries where id in ${
    sql([inheriting.id, explicit.id])
  } and notebook_id is null`
  assert.equal(n, 2)
})

test("entries whose level is user inherit the notebook's levels; an explicit level wins", async () => {
  const w = await sharingWorld()
  const teamBook = await postNotebook(w.owner, {
    name: 'team',
    metadata_visibility: 'team',
    content_visibility: 'team',
    team_id: w.teamId,
  })
  const metaOnly = await postNotebook(w.owner, {
    name: 'titles only',
    metadata_visibility: 'org',
    org_id: w.orgId,
  })
  const inTeam = await postEntry(w.owner, {
    title: 'inherits team',
    content: 'team words',
    notebook_id: teamBook.id,
  })
  const inMeta = await postEntry(w.owner, {
    title: 'inherits org titles',
    content: 'hidden words',
    notebook_id: metaOnly.id,
  })
  const publicTitle = await postEntry(w.owner, {
    title: 'public title',
    content: 'team-only words',
    notebook_id: teamBook.id,
    metadata_visibility: 'public',
  })
  const orgInTeam = await postEntry(w.owner, {
    title: 'org over team',
    content: 'org words',
    notebook_id: teamBook.id,
    metadata_visibility: 'org',
    content_visibility: 'org',
    org_id: w.orgId,
  })
  // The entry keeps its own levels; inheritance shows in what viewers get.
  assert.equal(inTeam.metadata_visibility, 'user')
  assert.equal(inTeam.notebook_id, teamBook.id)

  const t = await read(inTeam.id, w.teammate)
  assert.equal(t.status, 200)
  assert.equal(t.body.entry.content, 'team words')
  assert.equal(t.body.entry.content_hidden, false)
  assertError(await read(inTeam.id, w.orgmate), 404)
  assertError(await read(inTeam.id, w.stranger), 404)

  for (const u of [w.teammate, w.orgmate]) {
    const m = await read(inMeta.id, u)
    assert.equal(m.status, 200)
    assert.equal(m.body.entry.title, 'inherits org titles')
    assert.equal(m.body.entry.content, null)
    assert.equal(m.body.entry.content_hidden, true)
  }
  assertError(await read(inMeta.id, w.stranger), 404)

  // Explicit public metadata; content user inherits the notebook's team level.
  const s = await read(publicTitle.id, w.stranger)
  assert.equal(s.status, 200)
  assert.equal(s.body.entry.content, null)
  assert.equal(s.body.entry.content_hidden, true)
  assert.equal((await read(publicTitle.id, w.teammate)).body.entry.content, 'team-only words')
  assert.equal((await read(publicTitle.id, w.orgmate)).body.entry.content_hidden, true)

  // Explicit org levels in a team notebook: org members see it, strangers do not.
  const o = await read(orgInTeam.id, w.orgmate)
  assert.equal(o.status, 200)
  assert.equal(o.body.entry.content, 'org words')
  assertError(await read(orgInTeam.id, w.stranger), 404)

  // The notebook filter of the visible feed lists the inherited entries for the teammate.
  const feed = await api(`/api/journal?scope=visible&notebook_id=${teamBook.id}`, { token: w.teammate.token })
  assert.equal(feed.status, 200)
  assert.deepEqual(feed.body.entries.map((e: { id: string }) => e.id), [
    orgInTeam.id,
    publicTitle.id,
    inTeam.id,
  ])
})

test("changing a notebook's metadata level changes who sees its inheriting entries, at once", async () => {
  const w = await sharingWorld()
  const nb = await postNotebook(w.owner, { name: 'moving', metadata_visibility: 'team', team_id: w.teamId })
  const e = await postEntry(w.owner, { title: 'follows the notebook', content: 'text', notebook_id: nb.id })
  const pinned = await postEntry(w.owner, {
    title: 'pinned to team',
    content: 'text',
    notebook_id: nb.id,
    metadata_visibility: 'team',
    team_id: w.teamId,
  })
  assert.equal((await read(e.id, w.teammate)).status, 200)
  assertError(await read(e.id, w.orgmate), 404)

  const toOrg = await api(`/api/notebooks/${nb.id}`, {
    method: 'PUT',
    token: w.owner.token,
    body: { metadata_visibility: 'org', org_id: w.orgId },
  })
  assert.equal(toOrg.status, 200, JSON.stringify(toOrg.body))
  assert.equal((await read(e.id, w.orgmate)).status, 200)
  assertError(await read(pinned.id, w.orgmate), 404)

  const toUser = await api(`/api/notebooks/${nb.id}`, {
    method: 'PUT',
    token: w.owner.token,
    body: { metadata_visibility: 'user' },
  })
  assert.equal(toUser.status, 200)
  for (const u of [w.teammate, w.orgmate, w.stranger]) assertError(await read(e.id, u), 404)
  assert.equal((await read(pinned.id, w.teammate)).status, 200)
  assert.equal((await read(e.id, w.owner)).status, 200)
  const feed = await api('/api/journal?scope=visible&limit=100', { token: w.orgmate.token })
  assert.equal(feed.body.entries.some((x: { id: string }) => x.id === e.id), false)

  const toPublic = await api(`/api/notebooks/${nb.id}`, {
    method: 'PUT',
    token: w.owner.token,
    body: { metadata_visibility: 'public' },
  })
  assert.equal(toPublic.status, 200)
  const s = await read(e.id, w.stranger)
  assert.equal(s.status, 200)
  assert.equal(s.body.entry.content_hidden, true)
})

test("changing a notebook's content level changes what its inheriting entries show, at once", async () => {
  const w = await sharingWorld()
  const nb = await postNotebook(w.owner, {
    name: 'moving content',
    metadata_visibility: 'team',
    content_visibility: 'team',
    team_id: w.teamId,
  })
  const e = await postEntry(w.owner, {
    title: 'follows the notebook',
    content: 'secret once shared',
    notebook_id: nb.id,
  })
  assert.equal((await read(e.id, w.teammate)).body.entry.content, 'secret once shared')

  // Content back to the owner: the teammate must lose the text at once (no leak).
  const hide = await api(`/api/notebooks/${nb.id}`, {
    method: 'PUT',
    token: w.owner.token,
    body: { content_visibility: 'user' },
  })
  assert.equal(hide.status, 200, JSON.stringify(hide.body))
  const after = await read(e.id, w.teammate)
  assert.equal(after.status, 200)
  assert.deepEqual(
    { content: after.body.entry.content, content_hidden: after.body.entry.content_hidden },
    { content: null, content_hidden: true },
    'the content level the notebook no longer grants is still applied (journal_entry_contents.content_scope is stale)',
  )
})

test("sharing a notebook's content later shows it to the new audience at once", async () => {
  const w = await sharingWorld()
  const nb = await postNotebook(w.owner, {
    name: 'opening up',
    metadata_visibility: 'team',
    team_id: w.teamId,
  })
  const e = await postEntry(w.owner, {
    title: 'follows the notebook',
    content: 'now for the team',
    notebook_id: nb.id,
  })
  assert.equal((await read(e.id, w.teammate)).body.entry.content_hidden, true)
  const open = await api(`/api/notebooks/${nb.id}`, {
    method: 'PUT',
    token: w.owner.token,
    body: { content_visibility: 'team', team_id: w.teamId },
  })
  assert.equal(open.status, 200, JSON.stringify(open.body))
  const after = await read(e.id, w.teammate)
  assert.equal(after.status, 200)
  assert.deepEqual(
    { content: after.body.entry.content, content_hidden: after.body.entry.content_hidden },
    { content: 'now for the team', content_hidden: false },
  )
})
