// Reading /api/journal: an entry by id, the caller's own entries and the visible feed with its
// filters, search and keyset pagination, also as a super admin.
import { strict as assert } from 'node:assert'
import {
  api,
  assertError,
  createUser,
  env,
  orgWith,
  postEntry,
  postNotebook,
  sharingWorld,
  sql,
  teamWith,
  test,
  type TestUser,
} from './_helpers.ts'
import { LIMITS } from '../functions/api/routes/journal.ts'
import { ENTRY_FIELDS, ids, read, rnd } from './_journal.ts'
import { withApi } from './_api_process.ts'

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

// The feed through /api costs what the direct PostgREST call costs plus the route itself
// (docs/performance.md, "The visible feed"): a read makes one PostgREST request and nothing
// else, no write count, no impersonation or profile lookup, no second query.
test('GET /api/journal and /api/journal/:id: one PostgREST request each, nothing else', async () => {
  const owner = await createUser({ prefix: 'feed-calls' })
  for (const title of ['one', 'two', 'three']) await postEntry(owner, { title })
  const upstream = env('SUPABASE_REST_URL')
  const requests: string[] = []
  // A counting proxy in front of PostgREST, as the api process's SUPABASE_REST_URL.
  const counter = Deno.serve({ hostname: '127.0.0.1', port: 0, onListen: () => {} }, async (req) => {
    const url = new URL(req.url)
    requests.push(`${req.method} ${url.pathname}`)
    const headers = new Headers(req.headers)
    headers.delete('host')
    const res = await fetch(upstream + url.pathname + url.search, {
      method: req.method,
      headers,
      body: req.method === 'GET' || req.method === 'HEAD' ? undefined : await req.arrayBuffer(),
    })
    const out = new Headers(res.headers)
    out.delete('content-encoding')
    out.delete('content-length')
    return new Response(await res.arrayBuffer(), { status: res.status, headers: out })
  })
  try {
    await withApi({ SUPABASE_REST_URL: `http://127.0.0.1:${counter.addr.port}` }, async (base) => {
      const get = async (path: string) => {
        const res = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${owner.token}` } })
        const body = await res.json()
        assert.equal(res.status, 200, JSON.stringify(body))
        return body
      }
      await get('/api/journal') // the process's first request also fetches its write pass, once
      requests.length = 0
      const first = await get('/api/journal?limit=2')
      assert.equal(first.entries.length, 2)
      const next = await get(`/api/journal?limit=2&before=${first.next_cursor}`)
      assert.equal(next.entries.length, 1)
      await get('/api/journal?scope=visible&limit=2')
      await get(`/api/journal/${first.entries[0].id}`)
      assert.deepEqual(requests, [
        'POST /rpc/journal_feed',
        'POST /rpc/journal_feed',
        'POST /rpc/journal_feed',
        'GET /journal_entry_details',
      ])
    })
  } finally {
    await counter.shutdown()
  }
})
