// /api/journal: creating, updating and deleting entries (SPEC's Journal table), validation and
// defaults. Reading and the feed: journal_feed_test.ts; stats: journal_stats_test.ts; mentions:
// journal_mentions_test.ts.
import { strict as assert } from 'node:assert'
import {
  api,
  assertError,
  badTokensFor,
  createUser,
  env,
  orgWith,
  pause,
  postEntry,
  postNotebook,
  sharingWorld,
  sql,
  teamWith,
  test,
  type TestUser,
} from './_helpers.ts'
import postgres from 'postgres'
import { LIMITS } from '../functions/api/routes/journal.ts'
import { fromDb } from '../functions/_shared/errors.ts'
import { read, WRITTEN_ENTRY_FIELDS } from './_journal.ts'

const entryCount = async (...users: TestUser[]) =>
  (await sql`select count(*)::int as n from public.journal_entries where user_id in ${
    sql(users.map((u) => u.id))
  }`)[0].n

// ---------------------------------------------------------------------------------------
// Create

test('POST /api/journal: 201 {entry} with the defaults: levels user, mood null, no tags, no notebook', async () => {
  const u = await createUser()
  const res = await api('/api/journal', {
    token: u.token,
    body: { title: '  First day ', content: 'It went well.' },
  })
  assert.equal(res.status, 201, JSON.stringify(res.body))
  assert.deepEqual(Object.keys(res.body), ['entry'])
  const e = res.body.entry
  assert.deepEqual(Object.keys(e).sort(), WRITTEN_ENTRY_FIELDS)
  assert.equal(e.mood_pending, true, 'a text without a mood is queued for tone analysis')
  assert.equal(e.user_id, u.id)
  assert.equal(e.title, 'First day')
  assert.equal(e.content, 'It went well.')
  assert.equal(e.content_hidden, false)
  assert.equal(e.mood, null, 'no tone analyzer is configured, so mood stays null')
  assert.deepEqual(e.tags, [])
  assert.equal(e.metadata_visibility, 'user')
  assert.equal(e.content_visibility, 'user')
  assert.equal(e.team_id, null)
  assert.equal(e.org_id, null)
  assert.equal(e.notebook_id, null)
  assert.equal(e.music_track_id, null)
  const [row] = await sql`select e.title, e.mood, e.meta_scope, e.content_scope, c.content
                          from public.journal_entries e join public.journal_entry_contents c on c.entry_id = e.id where e.id = ${e.id}`
  assert.deepEqual({ ...row }, {
    title: 'First day',
    mood: null,
    meta_scope: 'user',
    content_scope: 'user',
    content: 'It went well.',
  })
  // Content may be left out.
  const titleOnly = await api('/api/journal', { token: u.token, body: { title: 'Only a title' } })
  assert.equal(titleOnly.status, 201)
  assert.equal(titleOnly.body.entry.content, '')
})

test('POST /api/journal: mood, tags and sharing are stored as given (mood lower-cased, tags de-duplicated)', async () => {
  const w = await sharingWorld()
  const nb = await postNotebook(w.teammate, { name: 'mine' })
  const e = await postEntry(w.teammate, {
    title: 'Shared',
    content: 'with the team',
    mood: 'Grateful',
    tags: ['run', 'morning', 'run'],
    metadata_visibility: 'org',
    content_visibility: 'team',
    team_id: w.teamId,
    org_id: w.orgId,
    notebook_id: nb.id,
  })
  assert.equal(e.mood, 'grateful')
  assert.deepEqual(e.tags, ['run', 'morning'])
  assert.equal(e.metadata_visibility, 'org')
  assert.equal(e.content_visibility, 'team')
  assert.equal(e.team_id, w.teamId)
  assert.equal(e.org_id, w.orgId)
  assert.equal(e.notebook_id, nb.id)
  const [row] =
    await sql`select meta_scope, meta_scope_id, content_scope, content_scope_id from public.journal_entries where id = ${e.id}`
  assert.deepEqual({ ...row }, {
    meta_scope: 'org',
    meta_scope_id: w.orgId,
    content_scope: 'team',
    content_scope_id: w.teamId,
  })
})

test('POST /api/journal: invalid visibility, sharing targets and bodies are 400 naming the field; nothing written', async () => {
  const w = await sharingWorld()
  const elsewhereOwner = await createUser()
  const elsewhereOrg = await orgWith(elsewhereOwner)
  const elsewhereTeam = await teamWith(elsewhereOrg, elsewhereOwner)
  const othersNotebook = await postNotebook(w.owner, {
    name: 'not yours',
    metadata_visibility: 'team',
    team_id: w.teamId,
  })
  const cases: [TestUser, unknown, string][] = [
    [w.teammate, {}, 'title'],
    [w.teammate, { content: 'no title' }, 'title'],
    [w.teammate, { title: '' }, 'title'],
    [w.teammate, { title: '   ' }, 'title'],
    [w.teammate, { title: 5 }, 'title'],
    [w.teammate, { title: 'x', content: 5 }, 'content'],
    [w.teammate, { title: 'x', content: null }, 'content'],
    [w.teammate, { title: 'x', mood: 3 }, 'mood'],
    [w.teammate, { title: 'x', mood: '' }, 'mood'],
    [w.teammate, { title: 'x', tags: 'a,b' }, 'tags'],
    [w.teammate, { title: 'x', tags: [1] }, 'tags'],
    [w.teammate, { title: 'x', tags: [''] }, 'tags'],
    [w.teammate, { title: 'x', metadata_visibility: 'friends' }, 'metadata_visibility'],
    [w.teammate, { title: 'x', content_visibility: 'TEAM' }, 'content_visibility'],
    [w.teammate, { title: 'x', metadata_visibility: 'private' }, 'metadata_visibility'],
    [w.teammate, { title: 'x', metadata_visibility: 'team' }, 'team_id'],
    [w.teammate, { title: 'x', content_visibility: 'team', org_id: w.orgId }, 'team_id'],
    [w.teammate, { title: 'x', metadata_visibility: 'org' }, 'org_id'],
    [w.teammate, { title: 'x', content_visibility: 'org', team_id: w.teamId }, 'org_id'],
    [w.teammate, { title: 'x', metadata_visibility: 'team', team_id: 'team' }, 'team_id'],
    [w.teammate, { title: 'x', org_id: 'org' }, 'org_id'],
    // Nobody shares into a team or organization they are not in.
    [w.teammate, { title: 'x', metadata_visibility: 'team', team_id: elsewhereTeam }, 'team_id'],
    [w.teammate, { title: 'x', metadata_visibility: 'org', org_id: elsewhereOrg }, 'org_id'],
    [w.orgmate, { title: 'x', content_visibility: 'team', team_id: w.teamId }, 'team_id'],
    [w.stranger, { title: 'x', metadata_visibility: 'org', org_id: w.orgId }, 'org_id'],
    [w.teammate, { title: 'x', team_id: elsewhereTeam }, 'team_id'],
    [w.teammate, { title: 'x', metadata_visibility: 'team', team_id: crypto.randomUUID() }, 'team_id'],
    // Only one's own notebook.
    [w.teammate, { title: 'x', notebook_id: othersNotebook.id }, 'notebook_id'],
    [w.teammate, { title: 'x', notebook_id: crypto.randomUUID() }, 'notebook_id'],
    [w.teammate, { title: 'x', notebook_id: 'nb-1' }, 'notebook_id'],
    // Fields the client does not write.
    [w.teammate, { title: 'x', user_id: w.owner.id }, 'user_id'],
    [w.teammate, { title: 'x', content_hidden: false }, 'content_hidden'],
    [w.teammate, { title: 'x', music_track_id: 'track-1' }, 'music_track_id'],
    [w.teammate, { title: 'x', created_at: '2020-01-01T00:00:00Z' }, 'created_at'],
    [w.teammate, { title: 'x', meta_scope: 'public' }, 'meta_scope'],
    [w.teammate, ['title'], ''],
  ]
  for (const [u, body, field] of cases) {
    assertError(await api('/api/journal', { token: u.token, body }), 400, field)
  }
  assertError(
    await api('/api/journal', { token: w.teammate.token, rawBody: '{"title": "x",}' }),
    400,
    'Malformed JSON',
  )
  assertError(await api('/api/journal', { token: w.teammate.token, method: 'POST' }), 400)
  assert.equal(await entryCount(w.teammate, w.orgmate, w.stranger), 0)
  const [{ c }] = await sql`select count(*)::int as c from public.journal_entry_contents where user_id in ${
    sql([w.teammate.id, w.orgmate.id, w.stranger.id])
  }`
  assert.equal(c, 0)
})

test('POST /api/journal: title, content, mood and tags limits (routes LIMITS) are 400 past the maximum', async () => {
  const u = await createUser()
  assert.deepEqual(LIMITS, { title: 200, content: 100_000, mood: 50, tags: 20, tag: 50 })
  const atMax = await api('/api/journal', {
    token: u.token,
    body: {
      title: 't'.repeat(LIMITS.title),
      content: 'c'.repeat(LIMITS.content),
      mood: 'm'.repeat(LIMITS.mood),
      tags: Array.from({ length: LIMITS.tags }, (_, i) => `${i}`.padEnd(LIMITS.tag, 'g')),
    },
  })
  assert.equal(atMax.status, 201, JSON.stringify(atMax.body).slice(0, 300))
  assert.equal(atMax.body.entry.content.length, LIMITS.content)
  assert.equal(atMax.body.entry.tags.length, LIMITS.tags)
  const over: [Record<string, unknown>, string][] = [
    [{ title: 't'.repeat(LIMITS.title + 1) }, 'title'],
    [{ title: 'ok', content: 'c'.repeat(LIMITS.content + 1) }, 'content'],
    [{ title: 'ok', mood: 'm'.repeat(LIMITS.mood + 1) }, 'mood'],
    [{ title: 'ok', tags: Array.from({ length: LIMITS.tags + 1 }, (_, i) => `t${i}`) }, 'tags'],
    [{ title: 'ok', tags: ['g'.repeat(LIMITS.tag + 1)] }, 'tags'],
  ]
  for (const [body, field] of over) {
    const res = await api('/api/journal', { token: u.token, body })
    assertError(res, 400, field)
    assert.ok(/at most|maximum|too/i.test(res.body.error), `a clear message: ${res.body.error}`)
  }
  assert.equal(await entryCount(u), 1)
})

test('journal endpoints: anonymous and bad tokens are 401 and change nothing', async () => {
  const u = await createUser()
  const e = await postEntry(u, { title: 'mine', content: 'text' })
  const bad = await badTokensFor(u)
  const calls: [string, string, unknown?][] = [
    ['GET', '/api/journal'],
    ['GET', '/api/journal?scope=visible'],
    ['GET', '/api/journal/stats'],
    ['GET', `/api/journal/${e.id}`],
    ['POST', '/api/journal', { title: 'anon' }],
    ['PUT', `/api/journal/${e.id}`, { title: 'anon' }],
    ['DELETE', `/api/journal/${e.id}`],
    ['POST', '/api/journal/backfill-mentions'],
  ]
  for (const [method, path, body] of calls) {
    assertError(await api(path, { method, body }), 401)
    for (const [kind, token] of Object.entries(bad)) {
      assert.equal((await api(path, { method, body, token })).status, 401, `${method} ${path} with ${kind}`)
    }
  }
  assert.equal(await entryCount(u), 1)
  assert.equal((await read(e.id, u)).body.entry.title, 'mine')
})

// ---------------------------------------------------------------------------------------
// Update and delete

test('PUT /api/journal/:id: the owner updates; {entry} back; absent keys keep their values', async () => {
  const w = await sharingWorld()
  const e = await postEntry(w.owner, { title: 'Draft', content: 'first', mood: 'calm', tags: ['a'] })
  await new Promise((r) => setTimeout(r, 5))
  const res = await api(`/api/journal/${e.id}`, {
    method: 'PUT',
    token: w.owner.token,
    body: { title: 'Final', tags: ['b', 'b', 'c'] },
  })
  assert.equal(res.status, 200, JSON.stringify(res.body))
  assert.deepEqual(Object.keys(res.body), ['entry'])
  const u = res.body.entry
  assert.deepEqual(Object.keys(u).sort(), WRITTEN_ENTRY_FIELDS)
  assert.equal(u.mood_pending, false, 'no new text: nothing to analyse')
  assert.equal(u.id, e.id)
  assert.equal(u.title, 'Final')
  assert.deepEqual(u.tags, ['b', 'c'])
  assert.equal(u.content, 'first')
  assert.equal(u.mood, 'calm')
  assert.equal(u.created_at, e.created_at)
  assert.ok(Date.parse(u.updated_at) > Date.parse(e.updated_at), 'updated_at moves')

  const cleared = await api(`/api/journal/${e.id}`, {
    method: 'PUT',
    token: w.owner.token,
    body: { mood: null, tags: [] },
  })
  assert.equal(cleared.body.entry.mood, null)
  assert.deepEqual(cleared.body.entry.tags, [])
  const mood = await api(`/api/journal/${e.id}`, {
    method: 'PUT',
    token: w.owner.token,
    body: { mood: 'Hopeful' },
  })
  assert.equal(mood.body.entry.mood, 'hopeful')

  // Sharing on update: team members see it at once.
  assertError(await read(e.id, w.teammate), 404)
  const share = await api(`/api/journal/${e.id}`, {
    method: 'PUT',
    token: w.owner.token,
    body: { metadata_visibility: 'team', team_id: w.teamId },
  })
  assert.equal(share.status, 200, JSON.stringify(share.body))
  assert.equal(share.body.entry.metadata_visibility, 'team')
  const t = await read(e.id, w.teammate)
  assert.equal(t.status, 200)
  assert.deepEqual([t.body.entry.content, t.body.entry.content_hidden], [null, true])
  // Into a notebook and out of it.
  const nb = await postNotebook(w.owner, { name: 'nb' })
  assert.equal(
    (await api(`/api/journal/${e.id}`, { method: 'PUT', token: w.owner.token, body: { notebook_id: nb.id } }))
      .body.entry.notebook_id,
    nb.id,
  )
  assert.equal(
    (await api(`/api/journal/${e.id}`, { method: 'PUT', token: w.owner.token, body: { notebook_id: null } }))
      .body.entry.notebook_id,
    null,
  )
  const [row] =
    await sql`select e.title, c.content from public.journal_entries e join public.journal_entry_contents c on c.entry_id = e.id where e.id = ${e.id}`
  assert.deepEqual({ ...row }, { title: 'Final', content: 'first' })
})

test('PUT /api/journal/:id with content updates the text (and its mentions)', async () => {
  const w = await sharingWorld()
  const e = await postEntry(w.owner, {
    title: 'Draft',
    content: `first, with @[Tea](${w.teammate.id})`,
    mood: 'calm',
  })
  const res = await api(`/api/journal/${e.id}`, {
    method: 'PUT',
    token: w.owner.token,
    body: { content: `second, with @[S](${w.stranger.id})` },
  })
  // update_journal_entry's `on conflict (entry_id)` is ambiguous with its own parameter
  // entry_id (42702 column reference "entry_id" is ambiguous), so every content edit fails.
  assert.equal(res.status, 200, JSON.stringify(res.body))
  assert.equal(res.body.entry.content, `second, with @[S](${w.stranger.id})`)
  // Content without mood: no analyzer is configured, the mood stays as it was.
  assert.equal(res.body.entry.mood, 'calm')
  const [row] = await sql`select content from public.journal_entry_contents where entry_id = ${e.id}`
  assert.equal(row.content, `second, with @[S](${w.stranger.id})`)
  const mentioned =
    await sql`select mentioned_user_id from public.journal_entry_mentions where entry_id = ${e.id}`
  assert.deepEqual(mentioned.map((r) => r.mentioned_user_id), [w.stranger.id])
})

test('PUT /api/journal/:id: 403 for a viewer who is not the owner, 404 for invisible and missing ids alike', async () => {
  const w = await sharingWorld()
  const e = await postEntry(w.owner, {
    title: 'Team',
    content: 'text',
    metadata_visibility: 'team',
    content_visibility: 'team',
    team_id: w.teamId,
  })
  assertError(
    await api(`/api/journal/${e.id}`, {
      method: 'PUT',
      token: w.teammate.token,
      body: { title: 'mine now' },
    }),
    403,
  )
  assertError(
    await api(`/api/journal/${e.id}`, {
      method: 'PUT',
      token: w.superAdmin.token,
      body: { title: 'moderated' },
    }),
    403,
  )
  const invisible = await api(`/api/journal/${e.id}`, {
    method: 'PUT',
    token: w.orgmate.token,
    body: { title: 'mine now' },
  })
  const missing = await api(`/api/journal/${crypto.randomUUID()}`, {
    method: 'PUT',
    token: w.orgmate.token,
    body: { title: 'mine now' },
  })
  assertError(invisible, 404)
  assert.deepEqual({ status: invisible.status, body: invisible.body }, {
    status: missing.status,
    body: missing.body,
  })
  assertError(
    await api(`/api/journal/${e.id}`, { method: 'PUT', token: w.stranger.token, body: { content: 'x' } }),
    404,
  )
  const got = await read(e.id, w.owner)
  assert.equal(got.body.entry.title, 'Team')
  assert.equal(got.body.entry.content, 'text')
})

test('PUT /api/journal/:id: bad bodies and sharing targets are 400 naming the field; nothing changes', async () => {
  const w = await sharingWorld()
  const elsewhereOwner = await createUser()
  const elsewhereOrg = await orgWith(elsewhereOwner)
  const elsewhereTeam = await teamWith(elsewhereOrg, elsewhereOwner)
  const foreignNb = await postNotebook(w.teammate, { name: "teammate's" })
  const e = await postEntry(w.owner, {
    title: 'Keep',
    content: 'keep',
    mood: 'calm',
    tags: ['k'],
    metadata_visibility: 'team',
    team_id: w.teamId,
  })
  const cases: [unknown, string][] = [
    [{}, 'Nothing to update'],
    [{ title: '' }, 'title'],
    [{ title: null }, 'title'],
    [{ title: 't'.repeat(LIMITS.title + 1) }, 'title'],
    [{ content: 'c'.repeat(LIMITS.content + 1) }, 'content'],
    [{ content: 7 }, 'content'],
    [{ tags: Array.from({ length: LIMITS.tags + 1 }, (_, i) => `t${i}`) }, 'tags'],
    [{ tags: ['x'.repeat(LIMITS.tag + 1)] }, 'tags'],
    [{ mood: 'm'.repeat(LIMITS.mood + 1) }, 'mood'],
    [{ metadata_visibility: 'friends' }, 'metadata_visibility'],
    [{ content_visibility: 'team' }, 'team_id'],
    [{ content_visibility: 'org' }, 'org_id'],
    [{ team_id: null }, 'team_id'],
    [{ team_id: elsewhereTeam }, 'team_id'],
    [{ metadata_visibility: 'org', org_id: elsewhereOrg }, 'org_id'],
    [{ notebook_id: foreignNb.id }, 'notebook_id'],
    [{ notebook_id: 'nb' }, 'notebook_id'],
    [{ user_id: w.teammate.id }, 'user_id'],
    [{ created_at: '2020-01-01T00:00:00Z' }, 'created_at'],
    [{ content_hidden: true }, 'content_hidden'],
    ['title', ''],
  ]
  for (const [body, field] of cases) {
    assertError(await api(`/api/journal/${e.id}`, { method: 'PUT', token: w.owner.token, body }), 400, field)
  }
  assertError(
    await api(`/api/journal/${e.id}`, { method: 'PUT', token: w.owner.token, rawBody: '{"title":' }),
    400,
    'Malformed JSON',
  )
  assertError(
    await api('/api/journal/123', { method: 'PUT', token: w.owner.token, body: { title: 'x' } }),
    400,
  )
  const got = (await read(e.id, w.owner)).body.entry
  assert.deepEqual(got, e)
})

test('PUT /api/journal/:id narrowing content_visibility hides the text from the old audience at once', async () => {
  const w = await sharingWorld()
  const e = await postEntry(w.owner, {
    title: 'Oops',
    content: 'too personal',
    metadata_visibility: 'team',
    content_visibility: 'team',
    team_id: w.teamId,
  })
  assert.equal((await read(e.id, w.teammate)).body.entry.content, 'too personal')
  const res = await api(`/api/journal/${e.id}`, {
    method: 'PUT',
    token: w.owner.token,
    body: { content_visibility: 'user' },
  })
  assert.equal(res.status, 200, JSON.stringify(res.body))
  assert.equal(res.body.entry.content_visibility, 'user')
  const after = await read(e.id, w.teammate)
  assert.equal(after.status, 200)
  // Today the teammate still reads the text: update_journal_entry leaves
  // journal_entry_contents.content_scope at 'team' (the AFTER UPDATE OF content_scope trigger
  // never fires, since content_scope is set by a BEFORE trigger, not in the UPDATE's SET list).
  assert.deepEqual({ content: after.body.entry.content, content_hidden: after.body.entry.content_hidden }, {
    content: null,
    content_hidden: true,
  })
  const feed = await api(`/api/journal?scope=visible&team_id=${w.teamId}`, { token: w.teammate.token })
  assert.ok(!JSON.stringify(feed.body).includes('too personal'), 'the feed must not carry the text either')
})

test('PUT /api/journal/:id widening content_visibility shows the text to the new audience at once', async () => {
  const w = await sharingWorld()
  const e = await postEntry(w.owner, {
    title: 'Later',
    content: 'now for the team',
    metadata_visibility: 'team',
    team_id: w.teamId,
  })
  assert.equal((await read(e.id, w.teammate)).body.entry.content_hidden, true)
  const res = await api(`/api/journal/${e.id}`, {
    method: 'PUT',
    token: w.owner.token,
    body: { content_visibility: 'team', team_id: w.teamId },
  })
  assert.equal(res.status, 200, JSON.stringify(res.body))
  const after = await read(e.id, w.teammate)
  assert.deepEqual({ content: after.body.entry.content, content_hidden: after.body.entry.content_hidden }, {
    content: 'now for the team',
    content_hidden: false,
  })
})

test('DELETE /api/journal/:id: the owner only (403 for a viewer, 404 otherwise); content and mentions go too', async () => {
  const w = await sharingWorld()
  const e = await postEntry(w.owner, {
    title: 'Bye',
    content: `hi @[Tea](${w.teammate.id})`,
    metadata_visibility: 'team',
    team_id: w.teamId,
  })
  assertError(await api(`/api/journal/${e.id}`, { method: 'DELETE', token: w.teammate.token }), 403)
  assertError(await api(`/api/journal/${e.id}`, { method: 'DELETE', token: w.superAdmin.token }), 403)
  const invisible = await api(`/api/journal/${e.id}`, { method: 'DELETE', token: w.stranger.token })
  const missing = await api(`/api/journal/${crypto.randomUUID()}`, {
    method: 'DELETE',
    token: w.stranger.token,
  })
  assertError(invisible, 404)
  assert.deepEqual({ status: invisible.status, body: invisible.body }, {
    status: missing.status,
    body: missing.body,
  })
  assertError(await api('/api/journal/abc', { method: 'DELETE', token: w.owner.token }), 400, 'id')
  assert.equal((await read(e.id, w.owner)).status, 200)

  const res = await api(`/api/journal/${e.id}`, { method: 'DELETE', token: w.owner.token })
  assert.equal(res.status, 200, JSON.stringify(res.body))
  assert.equal(typeof res.body.message, 'string')
  assertError(await read(e.id, w.owner), 404)
  assertError(await api(`/api/journal/${e.id}`, { method: 'DELETE', token: w.owner.token }), 404)
  const [{ n }] = await sql`select (select count(*) from public.journal_entries where id = ${e.id})
                                 + (select count(*) from public.journal_entry_contents where entry_id = ${e.id})
                                 + (select count(*) from public.journal_entry_mentions where entry_id = ${e.id}) as n`
  assert.equal(Number(n), 0)
})

test('a write that loses a deadlock or a serialization check is 503 with Retry-After, never 500', async () => {
  for (const code of ['40001', '40P01']) {
    const e = fromDb({ code, message: 'could not serialize access' })
    assert.equal(e.status, 503, code)
    assert.ok((e.retryAfterSeconds ?? 0) >= 1, code)
  }
  // Through /api: PUT /api/journal/:id updates the entry, then its text. Another session holds
  // the text and then wants the entry; the request waited first, so Postgres picks it.
  const u = await createUser()
  const entry = await postEntry(u, { title: 'contended', content: 'v1' })
  const other = postgres(env('SUPABASE_DB_URL'), { max: 1, onnotice: () => {} })
  let put: Promise<any> | undefined
  try {
    await other.begin(async (tx) => {
      await tx`select 1 from public.journal_entry_contents where entry_id = ${entry.id} for update`
      put = api(`/api/journal/${entry.id}`, {
        method: 'PUT',
        token: u.token,
        body: { title: 'mine', content: 'v2' },
      })
      await pause(300)
      await tx`update public.journal_entries set title = 'theirs' where id = ${entry.id}`
    })
  } finally {
    await other.end()
  }
  const res = await put!
  assert.equal(res.status, 503, JSON.stringify(res.body))
  assert.equal(typeof res.body.error, 'string')
  assert.ok(Number(res.headers.get('retry-after')) >= 1, `Retry-After: ${res.headers.get('retry-after')}`)
  const again = await api(`/api/journal/${entry.id}`, {
    method: 'PUT',
    token: u.token,
    body: { title: 'mine', content: 'v2' },
  })
  assert.equal(again.status, 200, 'retrying succeeds')
})
