// The visibility matrix through PostgREST with supabase-js as a real client, against
// /api/journal: metadata level x content level (16 pairs), without a notebook and inside two
// notebooks the 'user' levels inherit from, for the owner, a team member, an organization
// member outside the team, a stranger, a super admin and anonymous. Every path must give the
// answers SPEC's visibility rules give, and the same answers as each other. The internal scope
// columns stay out of anonymous clients' reach.
import { strict as assert } from 'node:assert'
import {
  api,
  clientAs,
  createUser,
  orgWith,
  postEntry,
  postNotebook,
  type SharingWorld,
  sharingWorld,
  sql,
  teamWith,
  test,
  type TestUser,
} from './_helpers.ts'

const LEVELS = ['user', 'team', 'org', 'public'] as const
type Level = typeof LEVELS[number]

interface Viewer {
  name: string
  user?: TestUser
  owner?: boolean
  superAdmin?: boolean
  team?: boolean
  org?: boolean
}

interface Case {
  id: string
  meta: Level
  content: Level
  notebook: 'none' | 'A' | 'B'
  text: string
}

// Notebook A: titles to the organization, text to the team. Notebook B: titles public, text to the organization.
const NOTEBOOKS = { A: { meta: 'org', content: 'team' }, B: { meta: 'public', content: 'org' } } as const

const effective = (level: Level, nb: Case['notebook'], part: 'meta' | 'content'): Level =>
  level !== 'user' ? level : nb === 'none' ? 'user' : NOTEBOOKS[nb][part]

const admits = (level: Level, v: Viewer) =>
  !!(v.owner || v.superAdmin || level === 'public' || (level === 'team' && v.team) ||
    (level === 'org' && v.org))

/** What SPEC's rules say the viewer gets: nothing, metadata only, or everything. */
function expected(c: Case, v: Viewer) {
  const meta = admits(effective(c.meta, c.notebook, 'meta'), v)
  const content = meta && admits(effective(c.content, c.notebook, 'content'), v)
  return { meta, content }
}

interface Fixture {
  w: SharingWorld
  tag: string
  cases: Case[]
  notebooks: { A: string; B: string }
  viewers: Viewer[]
}

let fixture: Promise<Fixture> | undefined
function setup(): Promise<Fixture> {
  fixture ??= (async () => {
    const w = await sharingWorld()
    const tag = `matrix-${crypto.randomUUID().slice(0, 8)}`
    const sharing = { team_id: w.teamId, org_id: w.orgId }
    const A = (await postNotebook(w.owner, {
      name: 'A',
      metadata_visibility: 'org',
      content_visibility: 'team',
      ...sharing,
    })).id
    const B = (await postNotebook(w.owner, {
      name: 'B',
      metadata_visibility: 'public',
      content_visibility: 'org',
      ...sharing,
    })).id
    const cases: Case[] = []
    for (const notebook of ['none', 'A', 'B'] as const) {
      for (const meta of LEVELS) {
        for (const content of LEVELS) {
          const text = `text ${meta}/${content}/${notebook} for @[Tea](${w.teammate.id})`
          const e = await postEntry(w.owner, {
            title: `${meta}/${content}/${notebook}`,
            content: text,
            tags: [tag],
            metadata_visibility: meta,
            content_visibility: content,
            notebook_id: notebook === 'none' ? null : notebook === 'A' ? A : B,
            ...sharing,
          })
          cases.push({ id: e.id, meta, content, notebook, text })
        }
      }
    }
    const viewers: Viewer[] = [
      { name: 'owner', user: w.owner, owner: true, team: true, org: true },
      { name: 'team member', user: w.teammate, team: true, org: true },
      { name: 'org member outside the team', user: w.orgmate, org: true },
      { name: 'stranger', user: w.stranger },
      { name: 'super admin', user: w.superAdmin, superAdmin: true },
      { name: 'anonymous' },
    ]
    return { w, tag, cases, notebooks: { A, B }, viewers }
  })()
  return fixture
}

const label = (c: Case, v: Viewer) => `${v.name}: ${c.meta}/${c.content} notebook ${c.notebook}`

/** The entry rows PostgREST's journal_entry_details gives the viewer, by id. */
async function restDetails(f: Fixture, v: Viewer) {
  const { data, error } = await clientAs(v.user?.token).from('journal_entry_details').select('*').contains(
    'tags',
    [f.tag],
  )
  assert.equal(error, null, `${v.name}: ${JSON.stringify(error)}`)
  return new Map(data!.map((r: any) => [r.id, r]))
}

async function checkViewer(name: string) {
  const f = await setup()
  const v = f.viewers.find((x) => x.name === name)!
  const rest = await restDetails(f, v)
  let metaOnly = 0
  let full = 0
  for (const c of f.cases) {
    const want = expected(c, v)
    const row = rest.get(c.id)
    // PostgREST (journal_entry_details, a security_invoker view over the two tables).
    assert.equal(!!row, want.meta, `PostgREST visibility, ${label(c, v)}`)
    if (row) {
      assert.equal(row.title, `${c.meta}/${c.content}/${c.notebook}`)
      assert.equal(row.content, want.content ? c.text : null, `PostgREST content, ${label(c, v)}`)
      assert.equal(row.content_hidden, !want.content, `PostgREST content_hidden, ${label(c, v)}`)
    }
    if (want.content) full++
    else if (want.meta) metaOnly++
    // /api/journal/:id gives exactly the same answer.
    if (v.user) {
      const res = await api(`/api/journal/${c.id}`, { token: v.user.token })
      if (want.meta) {
        assert.equal(res.status, 200, `API visibility, ${label(c, v)}: ${JSON.stringify(res.body)}`)
        assert.deepEqual(res.body.entry, row, `API and PostgREST agree, ${label(c, v)}`)
      } else {
        assert.equal(res.status, 404, `API visibility, ${label(c, v)}`)
        assert.deepEqual(res.body, { error: 'Entry not found', code: 'not_found' })
      }
    } else {
      assert.equal((await api(`/api/journal/${c.id}`)).status, 401)
    }
    // A single-row read by id through PostgREST agrees with the list.
    if (c.notebook !== 'B' || c.meta === 'team') {
      const one = await clientAs(v.user?.token).from('journal_entry_details').select(
        'id, content, content_hidden',
      ).eq('id', c.id).maybeSingle()
      assert.equal(one.error, null)
      assert.deepEqual(
        one.data,
        row ? { id: row.id, content: row.content, content_hidden: row.content_hidden } : null,
        label(c, v),
      )
    }
  }
  return { metaOnly, full }
}

test('matrix through PostgREST and /api/journal/:id: the owner sees all 48 cases with content', async () => {
  const r = await checkViewer('owner')
  assert.deepEqual(r, { metaOnly: 0, full: 48 })
})

test('matrix through PostgREST and /api/journal/:id: a team member (16 pairs x no notebook, notebook A, notebook B)', async () => {
  const r = await checkViewer('team member')
  // Without a notebook: metadata team/org/public (12), content hidden where content is user (3).
  // Notebook A (org/team) and B (public/org) fill in every 'user' level: all 16 visible, all with content.
  assert.deepEqual(r, { metaOnly: 3, full: 9 + 16 + 16 })
})

test('matrix through PostgREST and /api/journal/:id: an organization member outside the team', async () => {
  const r = await checkViewer('org member outside the team')
  assert.ok(r.metaOnly > 0 && r.full > 0)
})

test('matrix through PostgREST and /api/journal/:id: a stranger sees public metadata only where due', async () => {
  const r = await checkViewer('stranger')
  // Without a notebook: public metadata (4), with public content (1). Notebook A: public metadata (4), public content (1).
  // Notebook B: metadata user (inherits public) or public (8), with content only where content is public (2).
  assert.deepEqual(r, { metaOnly: 3 + 3 + 6, full: 1 + 1 + 2 })
})

test('matrix through PostgREST and /api/journal/:id: a super admin sees everything', async () => {
  const r = await checkViewer('super admin')
  assert.deepEqual(r, { metaOnly: 0, full: 48 })
})

test('matrix through PostgREST: anonymous sees public metadata (and public content) only; the API says 401', async () => {
  const r = await checkViewer('anonymous')
  assert.deepEqual(r, { metaOnly: 3 + 3 + 6, full: 1 + 1 + 2 })
})

test('journal_feed over PostgREST (rpc) and /api/journal?scope=visible give the same rows the rules give', async () => {
  const f = await setup()
  for (const v of f.viewers) {
    if (!v.user) continue // anonymous has no feed RPC; its rows are checked above
    const wanted = f.cases.filter((c) => expected(c, v).meta)
    const { data, error } = await clientAs(v.user.token).rpc('journal_feed', {
      scope: 'visible',
      tag: f.tag,
      page_size: 100,
    })
    assert.equal(error, null, JSON.stringify(error))
    assert.deepEqual(new Set(data.map((r: any) => r.id)), new Set(wanted.map((c) => c.id)), v.name)
    const api100 = await api(`/api/journal?scope=visible&tag=${f.tag}&limit=100`, { token: v.user.token })
    assert.equal(api100.status, 200)
    assert.deepEqual(api100.body.entries, data, `${v.name}: the API feed is the rpc's page`)
    const rest = await restDetails(f, v)
    for (const row of data) {
      const c = f.cases.find((x) => x.id === row.id)!
      assert.equal(row.content, expected(c, v).content ? c.text : null, label(c, v))
      assert.equal(row.content_hidden, !expected(c, v).content, label(c, v))
      assert.deepEqual(row, rest.get(row.id), `feed row and details row agree, ${label(c, v)}`)
    }
    // Searching the text finds only entries whose text the viewer may read (titles do not contain "text").
    const search = await clientAs(v.user.token).rpc('journal_feed', {
      scope: 'visible',
      tag: f.tag,
      search: 'for @[Tea]',
      page_size: 100,
    })
    assert.deepEqual(
      new Set(search.data.map((r: any) => r.id)),
      new Set(f.cases.filter((c) => expected(c, v).content).map((c) => c.id)),
      `${v.name}: search never matches hidden text`,
    )
    // Stats agree: the matrix tag is counted once per entry whose metadata is visible.
    const stats = await clientAs(v.user.token).rpc('journal_stats', { scope: 'visible' })
    const count = stats.data.tags.find((t: any) => t.tag === f.tag)?.count ?? 0
    assert.equal(count, wanted.length, `${v.name}: stats`)
  }
  // Anonymous callers get the public entries from the feed, exactly as journal_entry_details
  // shows them to anon (public is anyone); their own feed is empty.
  const anonViewer = f.viewers.find((v) => v.name === 'anonymous')!
  const anon = await clientAs().rpc('journal_feed', { scope: 'visible', tag: f.tag, page_size: 100 })
  assert.equal(anon.error, null, JSON.stringify(anon.error))
  assert.deepEqual(
    new Set(anon.data.map((r: any) => r.id)),
    new Set(f.cases.filter((c) => expected(c, anonViewer).meta).map((c) => c.id)),
  )
  const anonRest = await restDetails(f, anonViewer)
  assert.equal(anon.data.length, anonRest.size)
  for (const row of anon.data) {
    assert.deepEqual(row, anonRest.get(row.id), 'anonymous: feed row and details row agree')
  }
  const anonSearch = await clientAs().rpc('journal_feed', {
    scope: 'visible',
    tag: f.tag,
    search: 'for @[Tea]',
    page_size: 100,
  })
  assert.deepEqual(
    new Set(anonSearch.data.map((r: any) => r.id)),
    new Set(f.cases.filter((c) => expected(c, anonViewer).content).map((c) => c.id)),
    'anonymous: search never matches hidden text',
  )
  const anonStats = await clientAs().rpc('journal_stats', { scope: 'visible' })
  assert.equal(anonStats.error, null, JSON.stringify(anonStats.error))
  assert.equal(
    anonStats.data.tags.find((t: any) => t.tag === f.tag)?.count ?? 0,
    anonRest.size,
    'anonymous: stats over the public entries',
  )
  assert.equal(
    (await clientAs().rpc('journal_stats', {})).data.count,
    0,
    'anonymous: no entries of their own to count',
  )
  const anonOwn = await clientAs().rpc('journal_feed', { tag: f.tag })
  assert.equal(anonOwn.error, null, JSON.stringify(anonOwn.error))
  assert.deepEqual(anonOwn.data, [], 'anonymous: no entries of their own')
})

test("PostgREST embedding notebooks?select=*,journal_entries(*) respects the entries' own visibility", async () => {
  const f = await setup()
  for (const v of f.viewers) {
    const { data, error } = await clientAs(v.user?.token).from('notebooks')
      .select('id, name, journal_entries(id, title, journal_entry_contents(content))')
      .in('id', [f.notebooks.A, f.notebooks.B])
    assert.equal(error, null, `${v.name}: ${JSON.stringify(error)}`)
    const byId = new Map(data!.map((n: any) => [n.id, n]))
    for (const nb of ['A', 'B'] as const) {
      const notebookVisible = admits(NOTEBOOKS[nb].meta as Level, v)
      const row: any = byId.get(f.notebooks[nb])
      assert.equal(!!row, notebookVisible, `${v.name}: notebook ${nb}`)
      if (!row) continue
      const inNotebook = f.cases.filter((c) => c.notebook === nb)
      const embedded = new Map(row.journal_entries.map((e: any) => [e.id, e]))
      assert.deepEqual(
        new Set(embedded.keys()),
        new Set(inNotebook.filter((c) => expected(c, v).meta).map((c) => c.id)),
        `${v.name}: entries embedded in notebook ${nb}`,
      )
      for (const c of inNotebook) {
        const e: any = embedded.get(c.id)
        if (!e) continue
        const contents = Array.isArray(e.journal_entry_contents)
          ? e.journal_entry_contents[0] ?? null
          : e.journal_entry_contents
        assert.equal(
          contents?.content ?? null,
          expected(c, v).content ? c.text : null,
          `${label(c, v)}: embedded content`,
        )
      }
    }
  }
})

test('PostgREST: the content table and the mention index show text only where the content level admits', async () => {
  const f = await setup()
  const ids = f.cases.map((c) => c.id)
  for (const v of f.viewers) {
    const wanted = new Set(f.cases.filter((c) => expected(c, v).content).map((c) => c.id))
    const contents = await clientAs(v.user?.token).from('journal_entry_contents').select('entry_id, content')
      .in('entry_id', ids)
    assert.equal(contents.error, null, JSON.stringify(contents.error))
    assert.deepEqual(new Set(contents.data!.map((r: any) => r.entry_id)), wanted, `${v.name}: content rows`)
    // The raw metadata table agrees with the details view.
    const meta = await clientAs(v.user?.token).from('journal_entries').select('id').in('id', ids)
    assert.equal(meta.error, null)
    assert.deepEqual(
      new Set(meta.data!.map((r: any) => r.id)),
      new Set(f.cases.filter((c) => expected(c, v).meta).map((c) => c.id)),
      `${v.name}: entry rows`,
    )
    if (!v.user) continue
    const mentions = await clientAs(v.user.token).from('journal_entry_mentions').select(
      'entry_id, mentioned_user_id',
    ).in('entry_id', ids)
    assert.equal(mentions.error, null, JSON.stringify(mentions.error))
    assert.deepEqual(new Set(mentions.data!.map((r: any) => r.entry_id)), wanted, `${v.name}: mentions`)
    assert.ok(mentions.data!.every((r: any) => r.mentioned_user_id === f.w.teammate.id))
  }
})

test("PostgREST: writes are the owner's alone, as through the API", async () => {
  const f = await setup()
  const c = f.cases.find((x) => x.meta === 'team' && x.content === 'team' && x.notebook === 'none')!
  const mate = clientAs(f.w.teammate.token)
  const upd = await mate.from('journal_entries').update({ title: 'hijacked' }).eq('id', c.id).select('id')
  assert.deepEqual(upd.data ?? [], [])
  const text = await mate.from('journal_entry_contents').update({ content: 'hijacked' }).eq('entry_id', c.id)
    .select('entry_id')
  assert.deepEqual(text.data ?? [], [])
  const del = await mate.from('journal_entries').delete().eq('id', c.id).select('id')
  assert.deepEqual(del.data ?? [], [])
  const rpc = await mate.rpc('update_journal_entry', { entry_id: c.id, patch: { title: 'hijacked' } })
  assert.equal(rpc.error?.code, '42501')
  const scope = await clientAs(f.w.owner.token).from('journal_entries').update({ meta_scope: 'public' }).eq(
    'id',
    c.id,
  )
  assert.ok(scope.error, 'derived scope columns are not writable')
  assert.equal(
    (await api(`/api/journal/${c.id}`, {
      method: 'PUT',
      token: f.w.teammate.token,
      body: { title: 'hijacked' },
    })).status,
    403,
  )
  const after = await api(`/api/journal/${c.id}`, { token: f.w.owner.token })
  assert.equal(after.body.entry.title, 'team/team/none')
  assert.equal(after.body.entry.content, c.text)
  // A stranger cannot even tell the entry exists.
  const s = await clientAs(f.w.stranger.token).rpc('update_journal_entry', {
    entry_id: c.id,
    patch: { title: 'x' },
  })
  const missing = await clientAs(f.w.stranger.token).rpc('update_journal_entry', {
    entry_id: crypto.randomUUID(),
    patch: { title: 'x' },
  })
  assert.equal(s.error?.code, missing.error?.code)
  assert.equal(s.error?.message, missing.error?.message)
})

test('after the owner narrows content_visibility, PostgREST must stop serving the text too (storage level)', async () => {
  const w = await sharingWorld()
  const e = await postEntry(w.owner, {
    title: 'narrowed',
    content: 'was for the team',
    metadata_visibility: 'team',
    content_visibility: 'team',
    team_id: w.teamId,
  })
  const res = await api(`/api/journal/${e.id}`, {
    method: 'PUT',
    token: w.owner.token,
    body: { content_visibility: 'user' },
  })
  assert.equal(res.status, 200, JSON.stringify(res.body))
  const mate = clientAs(w.teammate.token)
  const details = await mate.from('journal_entry_details').select('content, content_hidden').eq('id', e.id)
    .single()
  const raw = await mate.from('journal_entry_contents').select('content').eq('entry_id', e.id)
  const viaApi = await api(`/api/journal/${e.id}`, { token: w.teammate.token })
  // Both paths agree with each other, but both still serve the text: the content row keeps its old scope.
  assert.deepEqual(
    {
      details: details.data,
      raw: raw.data,
      api: { content: viaApi.body.entry?.content, content_hidden: viaApi.body.entry?.content_hidden },
    },
    {
      details: { content: null, content_hidden: true },
      raw: [],
      api: { content: null, content_hidden: true },
    },
  )
})

test('PostgREST: anonymous clients do not read the internal scope columns; public entries still read', async () => {
  const author = await createUser({ prefix: 'author' })
  const orgId = await orgWith(author)
  const teamId = await teamWith(orgId, author)
  const res = await api('/api/journal', {
    token: author.token,
    body: {
      title: 'public title, team text',
      content: 'for the team',
      metadata_visibility: 'public',
      content_visibility: 'team',
      team_id: teamId,
    },
  })
  assert.equal(res.status, 201)
  const id = res.body.entry.id
  const anon = clientAs()
  for (
    const [table, column, key] of [
      ['journal_entries', 'content_scope_id', 'id'],
      ['journal_entries', 'meta_scope_id', 'id'],
      ['journal_entry_contents', 'content_scope_id', 'entry_id'],
      ['notebooks', 'meta_scope_id', 'id'],
    ] as const
  ) {
    const { data, error } = await anon.from(table).select(`${key}, ${column}`).limit(5)
    assert.ok(error && data === null, `${table}.${column} is not readable by anon`)
  }
  const plain = await anon.from('journal_entries').select('id, title, meta_scope').eq('id', id)
  assert.deepEqual(plain.data, [{ id, title: 'public title, team text', meta_scope: 'public' }])
  const details = await anon.from('journal_entry_details').select('id, content, content_hidden').eq('id', id)
  assert.deepEqual(details.data, [{ id, content: null, content_hidden: true }])
  const signedIn = await clientAs((await createUser()).token).from('journal_entry_contents').select(
    'entry_id, content_scope_id',
  )
  assert.ok(signedIn.error, "signed-in clients do not read the contents' scope columns either")
})

test('direct writes are refused in words, naming the field as /api does (table, RPC, notebooks)', async () => {
  const w = await sharingWorld()
  const db = clientAs(w.owner.token)
  const cases: [string, PromiseLike<{ error: any }>, string][] = [
    [
      'insert team level',
      db.from('journal_entries').insert({ title: 'x', metadata_visibility: 'team' }),
      'team_id: required when a visibility is team',
    ],
    [
      'insert org level',
      db.from('journal_entries').insert({ title: 'x', content_visibility: 'org' }),
      'org_id: required when a visibility is org',
    ],
    [
      'insert bad level',
      db.from('journal_entries').insert({ title: 'x', metadata_visibility: 'friends' }),
      'metadata_visibility: must be one of user, team, org, public',
    ],
    ['insert empty title', db.from('journal_entries').insert({ title: '' }), 'title: must not be empty'],
    [
      'insert long title',
      db.from('journal_entries').insert({ title: 'x'.repeat(201) }),
      'title: must be at most 200 characters',
    ],
    [
      'insert long mood',
      db.from('journal_entries').insert({ title: 'x', mood: 'm'.repeat(51) }),
      'mood: must be at most 50 characters',
    ],
    [
      'insert bad tags',
      db.from('journal_entries').insert({ title: 'x', tags: [''] }),
      'tags: at most 20 tags, each 1 to 50 characters',
    ],
    [
      'rpc create',
      db.rpc('create_journal_entry', { title: 'x', content: 'y', content_visibility: 'team' }),
      'team_id: required when a visibility is team',
    ],
    [
      'notebook team level',
      db.from('notebooks').insert({ name: 'n', metadata_visibility: 'team' }),
      'team_id: required when a visibility is team',
    ],
    ['notebook blank name', db.from('notebooks').insert({ name: '   ' }), 'name: must not be empty'],
  ]
  for (const [what, reply, message] of cases) {
    const { error } = await reply
    assert.equal(error?.message, message, what)
    assert.equal(error?.code, '23514', what)
  }
  const mine = await postEntry(w.owner, { title: 'mine', content: 'x' })
  const patch = await db.from('journal_entries').update({ content_visibility: 'org' }).eq('id', mine.id)
  assert.equal(patch.error?.message, 'org_id: required when a visibility is org')
  const rpcPatch = await db.rpc('update_journal_entry', {
    entry_id: mine.id,
    patch: { metadata_visibility: 'team' },
  })
  assert.equal(rpcPatch.error?.message, 'team_id: required when a visibility is team')
  // /api answers the same words (its own check or the database's).
  const viaApi = await api('/api/journal', {
    token: w.owner.token,
    body: { title: 'x', content: 'y', metadata_visibility: 'team' },
  })
  assert.equal(viaApi.status, 400)
  assert.equal(viaApi.body.error, 'team_id: required when a visibility is team')
  const [{ n }] =
    await sql`select count(*)::int as n from public.journal_entries where user_id = ${w.owner.id}`
  assert.equal(n, 1, 'nothing refused was written')
})

test('an entry its owner inserts straight into journal_entries reads whole for them: empty text, content_hidden false', async () => {
  const w = await sharingWorld()
  const db = clientAs(w.owner.token)
  const { data, error } = await db.from('journal_entries')
    .insert({
      title: 'no text yet',
      metadata_visibility: 'team',
      content_visibility: 'team',
      team_id: w.teamId,
    }).select('id').single()
  assert.equal(error, null, JSON.stringify(error))
  const id = data!.id
  const details = await db.from('journal_entry_details').select('content, content_hidden').eq('id', id)
    .single()
  assert.deepEqual(details.data, { content: '', content_hidden: false })
  const feed = await db.rpc('journal_feed', {})
  assert.deepEqual(feed.data.filter((r: any) => r.id === id).map((r: any) => [r.content, r.content_hidden]), [
    ['', false],
  ])
  const visible = await db.rpc('journal_feed', { scope: 'visible' })
  assert.deepEqual(
    visible.data.filter((r: any) => r.id === id).map((r: any) => [r.content, r.content_hidden]),
    [['', false]],
  )
  const viaApi = await api(`/api/journal/${id}`, { token: w.owner.token })
  assert.equal(viaApi.status, 200)
  assert.equal(viaApi.body.content_hidden ?? viaApi.body.entry?.content_hidden, false)
  // Super admins see every entry whole (rule 6).
  const admin = await clientAs(w.superAdmin.token).from('journal_entry_details').select(
    'content, content_hidden',
  ).eq('id', id).single()
  assert.deepEqual(admin.data, { content: '', content_hidden: false })
  // Writing the text afterwards (the two-step direct path) still works and shows it.
  const text = await db.from('journal_entry_contents').insert({ entry_id: id, content: 'now written' })
  assert.equal(text.error, null)
  const after = await clientAs(w.teammate.token).from('journal_entry_details').select(
    'content, content_hidden',
  ).eq('id', id).single()
  assert.deepEqual(after.data, { content: 'now written', content_hidden: false })
})
