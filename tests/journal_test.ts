// /api/journal: every row of SPEC's Journal table for entries, the visible feed with its
// filters and keyset pagination, stats, mentions, validation and defaults.
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

const ENTRY_FIELDS = [
  'background_url',
  'content',
  'content_hidden',
  'content_visibility',
  'created_at',
  'id',
  'metadata_visibility',
  'mood',
  'music_track_id',
  'notebook_id',
  'org_id',
  'tags',
  'team_id',
  'title',
  'tone_icon_url',
  'track',
  'updated_at',
  'user_id',
].sort()

const rnd = () => crypto.randomUUID().slice(0, 8)
const ids = (entries: { id: string }[]) => entries.map((e) => e.id)
const read = (id: string, u: TestUser) => api(`/api/journal/${id}`, { token: u.token })
const entryCount = async (...users: TestUser[]) =>
  (await sql`select count(*)::int as n from public.journal_entries where user_id in ${
    sql(users.map((u) => u.id))
  }`)[0].n

/** An entry written directly in SQL with a chosen created_at (triggers derive its scopes). */
async function insertEntryAt(
  user: TestUser,
  createdAt: string,
  f: {
    title?: string
    tags?: string[]
    meta?: string
    content?: string
    text?: string
    team_id?: string
    org_id?: string
  } = {},
): Promise<{ id: string; created_at: string }> {
  const [row] = await sql`
    insert into public.journal_entries (user_id, title, tags, metadata_visibility, content_visibility, team_id, org_id, created_at)
    values (${user.id}, ${f.title ?? 'at ' + createdAt}, ${f.tags ?? []}, ${f.meta ?? 'user'}, ${
    f.content ?? 'user'
  },
            ${f.team_id ?? null}, ${f.org_id ?? null}, ${createdAt})
    returning id, created_at`
  await sql`insert into public.journal_entry_contents (entry_id, content) values (${row.id}, ${
    f.text ?? 'text'
  })`
  return { id: row.id, created_at: row.created_at.toISOString() }
}

/** Pages through /api/journal with the query and page size; returns ids in order and the page count. */
async function pageThrough(u: TestUser, query: string, limit: number) {
  const seen: string[] = []
  let cursor: string | null = null
  let pages = 0
  do {
    const res: any = await api(
      `/api/journal?${query}&limit=${limit}${cursor ? `&before=${encodeURIComponent(cursor)}` : ''}`,
      { token: u.token },
    )
    assert.equal(res.status, 200, JSON.stringify(res.body))
    assert.ok(res.body.entries.length <= limit, `page of ${res.body.entries.length} > ${limit}`)
    seen.push(...ids(res.body.entries))
    cursor = res.body.next_cursor
    pages++
    assert.ok(pages < 500, 'pagination does not end')
  } while (cursor)
  return { seen, pages }
}

/** Newest first, ties broken by id descending (the feed's order). */
const newestFirst = (rows: { id: string; created_at: string }[]) =>
  [...rows].sort((a, b) =>
    Date.parse(b.created_at) - Date.parse(a.created_at) || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0)
  ).map((r) => r.id)

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
  assert.deepEqual(Object.keys(e).sort(), ENTRY_FIELDS)
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
// Read

test('GET /api/journal/:id: content hidden for metadata-only viewers; 404 for invisible and missing ids alike', async () => {
  const w = await sharingWorld()
  const e = await postEntry(w.owner, {
    title: 'Titles for the org',
    content: 'words for the team',
    mood: 'calm',
    tags: ['t'],
    metadata_visibility: 'org',
    content_visibility: 'team',
    team_id: w.teamId,
    org_id: w.orgId,
  })
  for (const u of [w.owner, w.teammate, w.superAdmin]) {
    const res = await read(e.id, u)
    assert.equal(res.status, 200, JSON.stringify(res.body))
    assert.deepEqual(Object.keys(res.body), ['entry'])
    assert.deepEqual(res.body.entry, e)
  }
  const meta = await read(e.id, w.orgmate)
  assert.equal(meta.status, 200)
  assert.deepEqual(meta.body.entry, { ...e, content: null, content_hidden: true })

  const invisible = await read(e.id, w.stranger)
  const missing = await read(crypto.randomUUID(), w.stranger)
  assertError(invisible, 404)
  assert.deepEqual({ status: invisible.status, body: invisible.body }, {
    status: missing.status,
    body: missing.body,
  })
  assert.ok(!JSON.stringify(invisible.body).includes('words'))
  assertError(await api('/api/journal/not-an-id', { token: w.owner.token }), 400, 'id')
})

test("GET /api/journal: the caller's own entries only, newest first, with their content", async () => {
  const w = await sharingWorld()
  const mine = [
    await postEntry(w.teammate, { title: 'one', content: 'a' }),
    await postEntry(w.teammate, {
      title: 'two',
      content: 'b',
      metadata_visibility: 'team',
      team_id: w.teamId,
    }),
    await postEntry(w.teammate, {
      title: 'three',
      content: 'c',
      metadata_visibility: 'public',
      content_visibility: 'public',
    }),
  ]
  await postEntry(w.owner, {
    title: 'shared with me',
    content: 'x',
    metadata_visibility: 'team',
    content_visibility: 'team',
    team_id: w.teamId,
  })
  const res = await api('/api/journal', { token: w.teammate.token })
  assert.equal(res.status, 200)
  assert.deepEqual(Object.keys(res.body).sort(), ['entries', 'next_cursor'])
  assert.deepEqual(ids(res.body.entries), ids(mine).reverse())
  assert.equal(res.body.next_cursor, null)
  assert.deepEqual(res.body.entries.map((e: any) => e.content), ['c', 'b', 'a'])
  assert.ok(res.body.entries.every((e: any) => e.content_hidden === false && e.user_id === w.teammate.id))
  assert.deepEqual(Object.keys(res.body.entries[0]).sort(), ENTRY_FIELDS)
  assert.deepEqual(
    (await api('/api/journal?scope=own', { token: w.teammate.token })).body.entries,
    res.body.entries,
  )
  assert.deepEqual((await api('/api/journal', { token: w.stranger.token })).body.entries, [])
})

test('GET /api/journal?scope=visible: own and shared entries the caller may see, with content hidden where due', async () => {
  const w = await sharingWorld()
  const otherOwner = await createUser()
  const otherOrg = await orgWith(otherOwner, [w.owner])
  const otherTeam = await teamWith(otherOrg, otherOwner, [w.owner])
  const tag = `vis-${rnd()}`
  const e = {
    own: await postEntry(w.teammate, { title: 'own', content: 'own text', tags: [tag] }),
    team: await postEntry(w.owner, {
      title: 'team',
      content: 'team text',
      tags: [tag],
      metadata_visibility: 'team',
      content_visibility: 'team',
      team_id: w.teamId,
    }),
    teamMeta: await postEntry(w.owner, {
      title: 'team meta',
      content: 'hidden text',
      tags: [tag],
      metadata_visibility: 'team',
      team_id: w.teamId,
    }),
    org: await postEntry(w.orgmate, {
      title: 'org',
      content: 'org text',
      tags: [tag],
      metadata_visibility: 'org',
      content_visibility: 'org',
      org_id: w.orgId,
    }),
    pub: await postEntry(w.stranger, {
      title: 'public',
      content: 'public text',
      tags: [tag],
      metadata_visibility: 'public',
      content_visibility: 'public',
    }),
    pubMeta: await postEntry(w.stranger, {
      title: 'public meta',
      content: 'private text',
      tags: [tag],
      metadata_visibility: 'public',
    }),
    priv: await postEntry(w.owner, { title: 'private', content: 'private', tags: [tag] }),
    otherTeam: await postEntry(w.owner, {
      title: 'other team',
      content: 'x',
      tags: [tag],
      metadata_visibility: 'team',
      content_visibility: 'team',
      team_id: otherTeam,
    }),
    otherOrg: await postEntry(w.owner, {
      title: 'other org',
      content: 'x',
      tags: [tag],
      metadata_visibility: 'org',
      org_id: otherOrg,
    }),
    contentOnly: await postEntry(w.owner, {
      title: 'content only',
      content: 'x',
      tags: [tag],
      content_visibility: 'public',
    }),
  }
  const res = await api(`/api/journal?scope=visible&tag=${tag}`, { token: w.teammate.token })
  assert.equal(res.status, 200, JSON.stringify(res.body))
  const got = res.body.entries
  assert.deepEqual(ids(got), ids([e.own, e.team, e.teamMeta, e.org, e.pub, e.pubMeta]).reverse())
  const byId = Object.fromEntries(got.map((x: any) => [x.id, x]))
  assert.equal(byId[e.own.id].content, 'own text')
  assert.equal(byId[e.team.id].content, 'team text')
  assert.deepEqual([byId[e.teamMeta.id].content, byId[e.teamMeta.id].content_hidden], [null, true])
  assert.equal(byId[e.org.id].content, 'org text')
  assert.equal(byId[e.pub.id].content, 'public text')
  assert.deepEqual([byId[e.pubMeta.id].content, byId[e.pubMeta.id].content_hidden], [null, true])
  assert.ok(
    !JSON.stringify(res.body).includes('hidden text') && !JSON.stringify(res.body).includes('private text'),
  )

  // The owner sees their own plus what others share with them.
  const ownerView = await api(`/api/journal?scope=visible&tag=${tag}&limit=100`, { token: w.owner.token })
  assert.deepEqual(
    new Set(ids(ownerView.body.entries)),
    new Set(
      ids([e.team, e.teamMeta, e.org, e.pub, e.pubMeta, e.priv, e.otherTeam, e.otherOrg, e.contentOnly]),
    ),
  )
  const strangerView = await api(`/api/journal?scope=visible&tag=${tag}`, { token: w.stranger.token })
  assert.deepEqual(ids(strangerView.body.entries), ids([e.pub, e.pubMeta]).reverse())
  const orgmateView = await api(`/api/journal?scope=visible&tag=${tag}`, { token: w.orgmate.token })
  assert.deepEqual(ids(orgmateView.body.entries), ids([e.org, e.pub, e.pubMeta]).reverse())
})

test('GET /api/journal?scope=visible: filters team_id, org_id, notebook_id, mood and tag never widen what is visible', async () => {
  const w = await sharingWorld()
  const tag = `flt-${rnd()}`
  const mood = `mood-${rnd()}`
  const nb = await postNotebook(w.owner, { name: 'team nb', metadata_visibility: 'team', team_id: w.teamId })
  const e = {
    team: await postEntry(w.owner, {
      title: 'team',
      tags: [tag],
      mood,
      metadata_visibility: 'team',
      team_id: w.teamId,
    }),
    teamOwn: await postEntry(w.teammate, {
      title: 'team own',
      tags: [tag],
      metadata_visibility: 'team',
      team_id: w.teamId,
    }),
    inNb: await postEntry(w.owner, { title: 'in notebook', tags: [tag, 'nb'], notebook_id: nb.id }),
    org: await postEntry(w.owner, {
      title: 'org',
      tags: [tag],
      mood,
      metadata_visibility: 'org',
      org_id: w.orgId,
    }),
    pub: await postEntry(w.stranger, { title: 'public', tags: [tag], mood, metadata_visibility: 'public' }),
    privMood: await postEntry(w.owner, { title: 'private', tags: [tag], mood }),
  }
  const q = async (u: TestUser, query: string) => {
    const res = await api(`/api/journal?scope=visible&limit=100&${query}`, { token: u.token })
    assert.equal(res.status, 200, `${query}: ${JSON.stringify(res.body)}`)
    return ids(res.body.entries)
  }
  assert.deepEqual(await q(w.teammate, `team_id=${w.teamId}`), ids([e.team, e.teamOwn, e.inNb]).reverse())
  assert.deepEqual(await q(w.teammate, `org_id=${w.orgId}`), [e.org.id])
  assert.deepEqual(await q(w.teammate, `notebook_id=${nb.id}`), [e.inNb.id])
  assert.deepEqual(await q(w.teammate, `mood=${mood}`), ids([e.team, e.org, e.pub]).reverse())
  assert.deepEqual(await q(w.teammate, `mood=${mood.toUpperCase()}`), ids([e.team, e.org, e.pub]).reverse())
  assert.deepEqual(await q(w.teammate, `tag=nb&team_id=${w.teamId}`), [e.inNb.id])
  assert.deepEqual(await q(w.teammate, `tag=${tag}&mood=${mood}&org_id=${w.orgId}`), [e.org.id])
  // Filters naming a team, organization or notebook the caller cannot see return nothing of others'.
  for (const query of [`team_id=${w.teamId}`, `org_id=${w.orgId}`, `notebook_id=${nb.id}`]) {
    assert.deepEqual(await q(w.stranger, query), [], query)
  }
  assert.deepEqual(await q(w.orgmate, `team_id=${w.teamId}`), [])
  assert.deepEqual(await q(w.stranger, `mood=${mood}`), [e.pub.id])
  // The own scope with filters.
  const own = await api(`/api/journal?mood=${mood}&limit=100`, { token: w.owner.token })
  assert.deepEqual(ids(own.body.entries), ids([e.team, e.org, e.privMood]).reverse())
  // The team filter follows the effective level: the notebook's team counts too.
  const ownTeam = await api(`/api/journal?team_id=${w.teamId}`, { token: w.owner.token })
  assert.deepEqual(ids(ownTeam.body.entries), ids([e.team, e.inNb]).reverse())
  for (
    const [query, field] of [
      ['scope=all', 'scope'],
      ['team_id=x', 'team_id'],
      ['org_id=1', 'org_id'],
      ['notebook_id=nb', 'notebook_id'],
      ['tag=' + 't'.repeat(LIMITS.tag + 1), 'tag'],
      ['mood=' + 'm'.repeat(LIMITS.mood + 1), 'mood'],
      ['q=', 'q'],
      ['user_id=' + w.owner.id, 'user_id'],
    ]
  ) {
    assertError(await api(`/api/journal?${query}`, { token: w.teammate.token }), 400, field)
  }
})

test('GET /api/journal?q=: search matches titles and visible text only, never hidden content', async () => {
  const w = await sharingWorld()
  const word = `zebra${rnd()}`
  const e = {
    hiddenText: await postEntry(w.owner, {
      title: 'Plain',
      content: `the ${word} is here`,
      metadata_visibility: 'team',
      team_id: w.teamId,
    }),
    sharedText: await postEntry(w.owner, {
      title: 'Shared',
      content: `another ${word}`,
      metadata_visibility: 'team',
      content_visibility: 'team',
      team_id: w.teamId,
    }),
    inTitle: await postEntry(w.owner, {
      title: `A ${word.toUpperCase()} title`,
      content: 'nothing',
      metadata_visibility: 'team',
      team_id: w.teamId,
    }),
    publicHidden: await postEntry(w.owner, {
      title: 'Public title',
      content: `public ${word}`,
      metadata_visibility: 'public',
    }),
    privateText: await postEntry(w.owner, { title: 'Private', content: `private ${word}` }),
  }
  const search = async (u: TestUser, scope = 'visible') => {
    const res = await api(`/api/journal?scope=${scope}&q=${word}&limit=100`, { token: u.token })
    assert.equal(res.status, 200, JSON.stringify(res.body))
    return ids(res.body.entries)
  }
  assert.deepEqual(await search(w.teammate), ids([e.sharedText, e.inTitle]).reverse())
  assert.deepEqual(await search(w.stranger), [])
  assert.deepEqual(await search(w.orgmate), [])
  assert.deepEqual(await search(w.owner), ids(Object.values(e)).reverse())
  assert.deepEqual(await search(w.owner, 'own'), ids(Object.values(e)).reverse())
  // LIKE wildcards in q are literal characters.
  const u = await createUser()
  const pct = await postEntry(u, { title: 'Sale', content: 'now 50%_off today' })
  await postEntry(u, { title: 'Other', content: 'nothing special' })
  assert.deepEqual(ids((await api('/api/journal?q=0%25_o', { token: u.token })).body.entries), [pct.id])
  assert.deepEqual(ids((await api('/api/journal?q=%25', { token: u.token })).body.entries), [pct.id])
  assert.deepEqual(ids((await api('/api/journal?q=_', { token: u.token })).body.entries), [pct.id])
})

test('keyset pagination: paging through either scope yields every visible entry exactly once, newest first', async () => {
  const w = await sharingWorld()
  const tag = `page-${rnd()}`
  const tie = '2026-03-01T12:00:00.000Z'
  const minutesBefore = (m: number) => new Date(Date.parse(tie) - m * 60_000).toISOString()
  // Entries of every branch (own, team, org, public) and invisible ones, several sharing one created_at.
  const plan: [TestUser, string, string][] = [
    [w.teammate, 'user', tie],
    [w.owner, 'team', tie],
    [w.orgmate, 'org', tie],
    [w.stranger, 'public', tie],
    [w.teammate, 'team', tie],
    [w.owner, 'public', tie],
    [w.owner, 'user', tie],
    [w.stranger, 'user', tie],
    [w.owner, 'org', minutesBefore(1)],
    [w.teammate, 'user', minutesBefore(2)],
    [w.orgmate, 'user', minutesBefore(2)],
    [w.orgmate, 'team', minutesBefore(3)],
    [w.stranger, 'public', minutesBefore(4)],
    [w.owner, 'team', minutesBefore(4)],
    [w.teammate, 'org', minutesBefore(5)],
    [w.owner, 'user', minutesBefore(6)],
  ]
  const visible: { id: string; created_at: string }[] = []
  const invisible: string[] = []
  const ownRows: { id: string; created_at: string }[] = []
  for (const [u, meta, at] of plan) {
    if (meta === 'team' && u === w.orgmate) {
      // The orgmate is not in the team: shares with the organization instead, but only the title is visible.
      const row = await insertEntryAt(u, at, { tags: [tag], meta: 'org', org_id: w.orgId })
      visible.push(row)
      continue
    }
    // Only the group its level names (an entry names only groups its owner belongs to).
    const row = await insertEntryAt(u, at, {
      tags: [tag],
      meta,
      team_id: meta === 'team' ? w.teamId : undefined,
      org_id: meta === 'org' ? w.orgId : undefined,
    })
    if (u === w.teammate) ownRows.push(row)
    if (u === w.teammate || meta !== 'user') visible.push(row)
    else invisible.push(row.id)
  }
  for (let i = 0; i < 3; i++) {
    visible.push(
      await postEntry(w.owner, {
        title: `now ${i}`,
        tags: [tag],
        metadata_visibility: 'team',
        team_id: w.teamId,
      }),
    )
  }
  invisible.push((await postEntry(w.owner, { title: 'private now', tags: [tag] })).id)
  const expected = newestFirst(visible)
  assert.equal(expected.length, 15)

  for (const limit of [1, 2, 3, 5, 7, 100]) {
    const { seen, pages } = await pageThrough(w.teammate, `scope=visible&tag=${tag}`, limit)
    assert.deepEqual(seen, expected, `limit ${limit}`)
    assert.equal(new Set(seen).size, seen.length)
    assert.equal(pages, Math.ceil(expected.length / limit), `pages at limit ${limit}`)
    for (const id of invisible) assert.ok(!seen.includes(id))
  }
  // The own scope pages the same way, over the caller's entries only.
  const ownExpected = newestFirst(ownRows)
  assert.equal(ownExpected.length, 4)
  for (const limit of [1, 3]) {
    assert.deepEqual((await pageThrough(w.teammate, `tag=${tag}`, limit)).seen, ownExpected)
  }
  // An unfiltered visible feed holds the same entries in the same order (other users' public entries may be mixed in).
  const firstPage = await api('/api/journal?scope=visible&limit=100', { token: w.teammate.token })
  const mine = ids(firstPage.body.entries).filter((id) => expected.includes(id))
  assert.deepEqual(mine, expected.slice(0, mine.length))
  assert.ok(mine.length >= 3)
})

test('pagination: limit defaults to 50 and goes up to 100; bad limit or cursor is 400', async () => {
  const u = await createUser()
  const tag = `bulk-${rnd()}`
  await sql`
    with e as (
      insert into public.journal_entries (user_id, title, tags, created_at)
      select ${u.id}, 'bulk ' || g, array[${tag}], now() - g * interval '1 second' from generate_series(1, 105) g
      returning id)
    insert into public.journal_entry_contents (entry_id, content) select id, 'bulk' from e`
  const first = await api('/api/journal', { token: u.token })
  assert.equal(first.status, 200)
  assert.equal(first.body.entries.length, 50)
  assert.equal(typeof first.body.next_cursor, 'string')
  assert.deepEqual(first.body.entries.slice(0, 3).map((e: any) => e.title), ['bulk 1', 'bulk 2', 'bulk 3'])
  for (
    const q of [
      'limit=0',
      'limit=101',
      'limit=-1',
      'limit=abc',
      'limit=1.5',
      'before=garbage',
      'before=' + encodeURIComponent(btoa('["2026-01-01T00:00:00Z","1 or 1=1"]')),
      'before=' + encodeURIComponent(btoa('["yesterday","00000000-0000-0000-0000-000000000000"]')),
    ]
  ) {
    assertError(await api(`/api/journal?${q}`, { token: u.token }), 400, q.split('=')[0])
    assertError(await api(`/api/journal?scope=visible&${q}`, { token: u.token }), 400, q.split('=')[0])
  }
})

test('pagination with limit=100 over more than 100 entries gives a next_cursor and the rest on page 2', async () => {
  const u = await createUser()
  const tag = `hundred-${rnd()}`
  await sql`
    with e as (
      insert into public.journal_entries (user_id, title, tags, created_at)
      select ${u.id}, 'bulk ' || g, array[${tag}], now() - g * interval '1 second' from generate_series(1, 105) g
      returning id)
    insert into public.journal_entry_contents (entry_id, content) select id, 'bulk' from e`
  for (const scope of ['own', 'visible']) {
    const page1 = await api(`/api/journal?scope=${scope}&tag=${tag}&limit=100`, { token: u.token })
    assert.equal(page1.status, 200)
    assert.equal(page1.body.entries.length, 100)
    // journal_feed clamps page_size to 100, but the route asks for limit + 1 rows to know
    // whether a next page exists: at limit=100 the cursor is lost and entries 101..105 too.
    assert.equal(
      typeof page1.body.next_cursor,
      'string',
      `${scope}: next_cursor is ${page1.body.next_cursor} with 5 entries left`,
    )
    const page2 = await api(
      `/api/journal?scope=${scope}&tag=${tag}&limit=100&before=${encodeURIComponent(page1.body.next_cursor)}`,
      { token: u.token },
    )
    assert.deepEqual(page2.body.entries.map((e: any) => e.title), [
      'bulk 101',
      'bulk 102',
      'bulk 103',
      'bulk 104',
      'bulk 105',
    ])
  }
})

// ---------------------------------------------------------------------------------------
// Stats

test("GET /api/journal/stats: counts, tags and moods of one's own entries", async () => {
  const w = await sharingWorld()
  await postEntry(w.teammate, { title: 'a', tags: ['work', 'gym'], mood: 'happy' })
  await postEntry(w.teammate, {
    title: 'b',
    tags: ['work'],
    mood: 'sad',
    metadata_visibility: 'team',
    team_id: w.teamId,
  })
  await postEntry(w.teammate, { title: 'c' })
  await postEntry(w.owner, {
    title: 'not mine',
    tags: ['work'],
    mood: 'happy',
    metadata_visibility: 'team',
    team_id: w.teamId,
  })
  for (const path of ['/api/journal/stats', '/api/journal/stats?scope=own']) {
    const res = await api(path, { token: w.teammate.token })
    assert.equal(res.status, 200, JSON.stringify(res.body))
    assert.deepEqual(res.body, {
      count: 3,
      tags: [{ tag: 'work', count: 2 }, { tag: 'gym', count: 1 }],
      moods: [{ mood: 'happy', count: 1 }, { mood: 'sad', count: 1 }],
    })
  }
  assert.deepEqual((await api('/api/journal/stats', { token: w.stranger.token })).body, {
    count: 0,
    tags: [],
    moods: [],
  })
  assertError(await api('/api/journal/stats?scope=everyone', { token: w.teammate.token }), 400, 'scope')
  assertError(await api('/api/journal/stats?tag=x', { token: w.teammate.token }), 400, 'tag')
})

test('GET /api/journal/stats?scope=visible: shared tags and moods count; a private tag of another user never appears', async () => {
  const w = await sharingWorld()
  const s = rnd()
  await postEntry(w.owner, {
    title: 'private',
    content: 'x',
    tags: [`private-${s}`, `both-${s}`],
    mood: `secretmood-${s}`,
  })
  await postEntry(w.owner, {
    title: 'content only public',
    content: 'x',
    tags: [`contentpublic-${s}`],
    content_visibility: 'public',
  })
  await postEntry(w.owner, {
    title: 'team',
    content: 'x',
    tags: [`team-${s}`, `both-${s}`],
    mood: `teammood-${s}`,
    metadata_visibility: 'team',
    team_id: w.teamId,
  })
  await postEntry(w.owner, {
    title: 'team titles',
    content: 'x',
    tags: [`team-${s}`],
    metadata_visibility: 'team',
    team_id: w.teamId,
  })
  await postEntry(w.orgmate, {
    title: 'org',
    content: 'x',
    tags: [`org-${s}`],
    metadata_visibility: 'org',
    org_id: w.orgId,
  })
  const stats = async (u: TestUser) => {
    const res = await api('/api/journal/stats?scope=visible', { token: u.token })
    assert.equal(res.status, 200, JSON.stringify(res.body))
    const tags = Object.fromEntries(
      res.body.tags.filter((t: any) => t.tag.endsWith(s)).map((t: any) => [t.tag, t.count]),
    )
    const moods = Object.fromEntries(
      res.body.moods.filter((m: any) => m.mood.endsWith(s)).map((m: any) => [m.mood, m.count]),
    )
    return { count: res.body.count as number, tags, moods }
  }
  const teammate = await stats(w.teammate)
  assert.deepEqual(teammate.tags, { [`team-${s}`]: 2, [`both-${s}`]: 1, [`org-${s}`]: 1 })
  assert.deepEqual(teammate.moods, { [`teammood-${s}`]: 1 })
  assert.ok(teammate.count >= 3)
  const orgmate = await stats(w.orgmate)
  assert.deepEqual(orgmate.tags, { [`org-${s}`]: 1 })
  assert.deepEqual(orgmate.moods, {})
  const stranger = await stats(w.stranger)
  assert.deepEqual(stranger.tags, {})
  assert.deepEqual(stranger.moods, {})
  const owner = await stats(w.owner)
  assert.deepEqual(owner.tags, {
    [`private-${s}`]: 1,
    [`both-${s}`]: 2,
    [`contentpublic-${s}`]: 1,
    [`team-${s}`]: 2,
    [`org-${s}`]: 1,
  })
  assert.deepEqual(owner.moods, { [`secretmood-${s}`]: 1, [`teammood-${s}`]: 1 })
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
  assert.deepEqual(Object.keys(u).sort(), ENTRY_FIELDS)
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

test('super admins read every entry with its content (by id and in stats)', async () => {
  const w = await sharingWorld()
  const s = rnd()
  const e = await postEntry(w.owner, { title: 'very private', content: 'for me only', tags: [`adm-${s}`] })
  const res = await read(e.id, w.superAdmin)
  assert.equal(res.status, 200)
  assert.equal(res.body.entry.content, 'for me only')
  assert.equal(res.body.entry.content_hidden, false)
  const stats = await api('/api/journal/stats?scope=visible', { token: w.superAdmin.token })
  assert.ok(stats.body.tags.some((t: any) => t.tag === `adm-${s}`))
})

test('the visible feed of a super admin lists what a super admin may see (rule 6), like stats and /:id do', async () => {
  const w = await sharingWorld()
  const tag = `adm-feed-${rnd()}`
  const e = await postEntry(w.owner, { title: 'very private', content: 'for me only', tags: [tag] })
  const stats = await api('/api/journal/stats?scope=visible', { token: w.superAdmin.token })
  assert.ok(stats.body.tags.some((t: any) => t.tag === tag), 'stats count it for the super admin')
  const feed = await api(`/api/journal?scope=visible&tag=${tag}`, { token: w.superAdmin.token })
  assert.equal(feed.status, 200)
  // journal_feed only unions own, my teams, my orgs and public, so the entry a super admin
  // reads by id (and counts in stats) is missing from their scope=visible feed.
  assert.deepEqual(ids(feed.body.entries), [e.id])
})

// ---------------------------------------------------------------------------------------
// Mentions

test("journal_feed as a super admin: each filter narrows everyone's entries (planned with the request's values)", async () => {
  const owner = await createUser({ prefix: 'owner' })
  const mate = await createUser({ prefix: 'mate' })
  const admin = await createUser({ prefix: 'super', superAdmin: true })
  const orgId = await orgWith(owner, [mate])
  const teamId = await teamWith(orgId, owner, [mate])
  const word = `needle${crypto.randomUUID().slice(0, 6)}`
  const tag = `t-${crypto.randomUUID().slice(0, 6)}`
  const nb = await postNotebook(owner, {
    name: 'team notebook',
    metadata_visibility: 'team',
    team_id: teamId,
  })
  const post = async (u: typeof owner, body: Record<string, unknown>) =>
    (await api('/api/journal', { token: u.token, body: { tags: [tag], ...body } })).body.entry.id as string
  const team = await post(owner, {
    title: 'team',
    content: `has the ${word}`,
    metadata_visibility: 'team',
    team_id: teamId,
  })
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
  const next = await api(`/api/journal?scope=visible&limit=2&tag=${tag}&before=${first.body.next_cursor}`, {
    token: admin.token,
  })
  assert.deepEqual(next.body.entries.map((e: { id: string }) => e.id), [nbEntry, inNb])
})

test('mentions written as @[Name](<uuid>) are indexed on create', async () => {
  const w = await sharingWorld()
  const mentions = async (id: string) =>
    (await sql`select mentioned_user_id from public.journal_entry_mentions where entry_id = ${id} order by 1`)
      .map((r) => r.mentioned_user_id)
  const e = await postEntry(w.owner, {
    title: 'Shout-outs',
    content:
      `thanks @[Tea Mate](${w.teammate.id}) and @[Org](${w.orgmate.id.toUpperCase()}), again @[T](${w.teammate.id}), ` +
      `not @[Ghost](${crypto.randomUUID()}) nor @Plain or [x](${w.stranger.id})`,
  })
  assert.deepEqual(await mentions(e.id), [w.teammate.id, w.orgmate.id].sort())
  // Changing other fields keeps them.
  const upd = await api(`/api/journal/${e.id}`, {
    method: 'PUT',
    token: w.owner.token,
    body: { title: 'title only' },
  })
  assert.equal(upd.status, 200)
  assert.deepEqual(await mentions(e.id), [w.teammate.id, w.orgmate.id].sort())
  const [{ at }] =
    await sql`select mentions_indexed_at as at from public.journal_entry_contents where entry_id = ${e.id}`
  assert.ok(at instanceof Date, 'new texts are marked as indexed')
})

test("POST /api/journal/backfill-mentions: indexes the caller's unindexed texts; {remaining: 0}; idempotent", async () => {
  const w = await sharingWorld()
  const a = await postEntry(w.owner, { title: 'a', content: `hi @[Tea](${w.teammate.id})` })
  const b = await postEntry(w.owner, {
    title: 'b',
    content: `hi @[Org](${w.orgmate.id}) and @[Tea](${w.teammate.id})`,
  })
  const c = await postEntry(w.owner, { title: 'c', content: 'no mentions' })
  const theirs = await postEntry(w.stranger, { title: 'd', content: `hi @[Owner](${w.owner.id})` })
  const all = [a.id, b.id, c.id, theirs.id]
  // Texts written before the index existed: no mentions, never indexed.
  await sql`delete from public.journal_entry_mentions where entry_id in ${sql(all)}`
  await sql`update public.journal_entry_contents set mentions_indexed_at = null where entry_id in ${sql(all)}`
  const snapshot = async () =>
    (await sql`select entry_id, mentioned_user_id from public.journal_entry_mentions where entry_id in ${
      sql(all)
    } order by 1, 2`)
      .map((r) => `${r.entry_id}:${r.mentioned_user_id}`)
  assert.deepEqual(await snapshot(), [])

  const first = await api('/api/journal/backfill-mentions', { method: 'POST', token: w.owner.token })
  assert.equal(first.status, 200, JSON.stringify(first.body))
  assert.deepEqual(first.body, { remaining: 0 })
  const expected = [`${a.id}:${w.teammate.id}`, `${b.id}:${w.orgmate.id}`, `${b.id}:${w.teammate.id}`].sort()
  assert.deepEqual((await snapshot()).sort(), expected)
  const [{ unindexed }] = await sql`select count(*)::int as unindexed from public.journal_entry_contents
                                    where entry_id in ${
    sql([a.id, b.id, c.id])
  } and mentions_indexed_at is null`
  assert.equal(unindexed, 0)
  // Another user's texts are theirs to backfill.
  const [{ at }] =
    await sql`select mentions_indexed_at as at from public.journal_entry_contents where entry_id = ${theirs.id}`
  assert.equal(at, null)

  const again = await api('/api/journal/backfill-mentions', { method: 'POST', token: w.owner.token })
  assert.deepEqual(again.body, { remaining: 0 })
  assert.deepEqual((await snapshot()).sort(), expected)

  const other = await api('/api/journal/backfill-mentions', { method: 'POST', token: w.stranger.token })
  assert.deepEqual(other.body, { remaining: 0 })
  assert.deepEqual((await snapshot()).sort(), [...expected, `${theirs.id}:${w.owner.id}`].sort())
})

test('POST /api/journal/backfill-mentions: works in batches; repeat until remaining is 0', async () => {
  const u = await createUser()
  const friend = await createUser()
  await sql`
    with e as (
      insert into public.journal_entries (user_id, title) select ${u.id}, 'old ' || g from generate_series(1, 230) g returning id)
    insert into public.journal_entry_contents (entry_id, content) select id, ${`hello @[F](${friend.id})`} from e`
  await sql`delete from public.journal_entry_mentions where entry_id in (select id from public.journal_entries where user_id = ${u.id})`
  await sql`update public.journal_entry_contents set mentions_indexed_at = null where user_id = ${u.id}`
  const counts: number[] = []
  for (let i = 0; i < 10; i++) {
    const res = await api('/api/journal/backfill-mentions', { method: 'POST', token: u.token })
    assert.equal(res.status, 200, JSON.stringify(res.body))
    assert.equal(typeof res.body.remaining, 'number')
    counts.push(res.body.remaining)
    if (res.body.remaining === 0) break
  }
  assert.equal(counts.at(-1), 0)
  assert.ok(counts.length >= 2, `230 texts take more than one batch: ${counts}`)
  assert.ok(counts.every((n, i) => i === 0 || n < counts[i - 1]), `remaining decreases: ${counts}`)
  const [{ n }] = await sql`select count(*)::int as n from public.journal_entry_mentions m
                            join public.journal_entries e on e.id = m.entry_id where e.user_id = ${u.id} and m.mentioned_user_id = ${friend.id}`
  assert.equal(n, 230)
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
