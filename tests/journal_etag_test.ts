// ETag / If-Match on entries, notebooks and goals (issue 40, docs/journal.md "ETag and
// If-Match"): reads and writes send the row's version as ETag; a PUT or DELETE with a stale
// If-Match is a 412 with the row as it is now, nothing written, whether it comes through /api,
// supabase-js or PostgREST directly, since the database decides (supabase/schemas/sync.sql).
import { strict as assert } from 'node:assert'
import {
  ANON_KEY,
  type ApiResponse,
  api,
  API_URL,
  assertError,
  clientAs,
  createUser,
  postEntry,
  type SharingWorld,
  sharingWorld,
  sql,
  test,
  type TestUser,
} from './_helpers.ts'

/** One versioned resource: where /api serves it, its table, and a field each write changes. */
interface Resource {
  field: 'entry' | 'notebook' | 'goal'
  path: string
  table: 'journal_entries' | 'notebooks' | 'goals'
  /** The column a write changes (title or name), through /api and supabase-js alike. */
  column: 'title' | 'name'
  newBody: Record<string, unknown>
}

const RESOURCES: Resource[] = [
  { field: 'entry', path: '/api/journal', table: 'journal_entries', column: 'title', newBody: { title: 't', content: 'c' } },
  { field: 'notebook', path: '/api/notebooks', table: 'notebooks', column: 'name', newBody: { name: 'n' } },
  { field: 'goal', path: '/api/goals', table: 'goals', column: 'title', newBody: { title: 'g' } },
]

/** The row in an /api reply: entries come as {entry}, notebooks and goals as themselves. */
const rowOf = (r: Resource, body: any) => (r.field === 'entry' ? body.entry : body)
const etagOf = (row: { row_version: string }) => `"${row.row_version}"`

/** Creates one through POST /api (its reply carries the ETag); returns the row. */
async function create(r: Resource, u: TestUser) {
  const res = await api(r.path, { token: u.token, body: r.newBody })
  assert.equal(res.status, 201, JSON.stringify(res.body))
  const row = rowOf(r, res.body)
  assert.match(row.row_version, /^\d+$/)
  assert.equal(res.headers.get('etag'), etagOf(row), `POST ${r.path}: ETag of the row written`)
  return row
}

const read = (r: Resource, u: TestUser, id: string) => api(`${r.path}/${id}`, { token: u.token })

async function currentETag(r: Resource, u: TestUser, id: string): Promise<string> {
  const res = await read(r, u, id)
  assert.equal(res.status, 200, JSON.stringify(res.body))
  const etag = res.headers.get('etag')
  assert.equal(etag, etagOf(rowOf(r, res.body)), `GET ${r.path}/{id}: ETag is the row_version read`)
  return etag!
}

const put = (r: Resource, u: TestUser, id: string, value: string, ifMatch?: string) =>
  api(`${r.path}/${id}`, {
    method: 'PUT',
    token: u.token,
    body: { [r.column]: value },
    headers: ifMatch === undefined ? {} : { 'if-match': ifMatch },
  })

const del = (r: Resource, u: TestUser, id: string, ifMatch?: string) =>
  api(`${r.path}/${id}`, {
    method: 'DELETE',
    token: u.token,
    headers: ifMatch === undefined ? {} : { 'if-match': ifMatch },
  })

/** A write through supabase-js (PostgREST) as the user, If-Match sent when given. */
function directWrite(r: Resource, u: TestUser, id: string, value: string, ifMatch?: string) {
  const q = clientAs(u.token).from(r.table).update({ [r.column]: value } as never).eq('id', id).select('id')
  return ifMatch === undefined ? q : q.setHeader('If-Match', ifMatch)
}

async function storedValue(r: Resource, id: string): Promise<string | undefined> {
  const [row] = await sql`select ${sql(r.column)} as v from ${sql('public.' + r.table)} where id = ${id}`
  return row?.v
}

/** A 412 of /api: precondition_failed, the row as it is now and its ETag. */
function assertStale(r: Resource, res: ApiResponse, current: string) {
  assertError(res, 412, /changed since it was read/)
  assert.equal(res.body.code, 'precondition_failed')
  const row = res.body[r.field]
  assert.ok(row, `the current ${r.field} comes with the 412: ${JSON.stringify(res.body)}`)
  assert.equal(row[r.column], current)
  assert.equal(res.headers.get('etag'), etagOf(row))
}

for (const r of RESOURCES) {
  test(`${r.path}: GET, POST and PUT send the ETag; every write changes it, through /api or supabase-js`, async () => {
    const u = await createUser()
    const { id } = await create(r, u)
    const first = await currentETag(r, u, id)

    const viaApi = await put(r, u, id, 'via api')
    assert.equal(viaApi.status, 200, JSON.stringify(viaApi.body))
    assert.equal(viaApi.headers.get('etag'), etagOf(rowOf(r, viaApi.body)), 'PUT sends the new ETag')
    const second = await currentETag(r, u, id)
    assert.notEqual(second, first)
    assert.equal(viaApi.headers.get('etag'), second)

    const direct = await directWrite(r, u, id, 'via supabase-js')
    assert.equal(direct.error, null, JSON.stringify(direct.error))
    assert.notEqual(await currentETag(r, u, id), second, 'a direct write without If-Match goes ahead and bumps it')
  })

  test(`${r.path}/{id}: a stale If-Match is 412 with the current row and ETag, nothing written; a fresh one, * or a weak tag writes`, async () => {
    const u = await createUser()
    const { id } = await create(r, u)
    const stale = await currentETag(r, u, id)
    assert.equal((await put(r, u, id, 'second')).status, 200)
    const now = await currentETag(r, u, id)

    const refused = await put(r, u, id, 'lost', stale)
    assertStale(r, refused, 'second')
    assert.equal(refused.headers.get('etag'), now)
    assert.equal(await storedValue(r, id), 'second', 'nothing written')
    assert.equal(await currentETag(r, u, id), now, 'the version is unchanged')

    const fresh = await put(r, u, id, 'third', now)
    assert.equal(fresh.status, 200, JSON.stringify(fresh.body))
    const afterFresh = fresh.headers.get('etag')!
    assert.notEqual(afterFresh, now)
    assert.equal(await currentETag(r, u, id), afterFresh)

    // Any version the list names, a weak tag of it, or *: RFC 9110's forms (docs/journal.md).
    const forms: [string, (etag: string) => string][] = [['any', () => '*'], ['weak', (e) => `W/${e}`], [
      'listed',
      (e) => `"1", ${e}`,
    ]]
    for (const [value, form] of forms) {
      const res = await put(r, u, id, value, form(await currentETag(r, u, id)))
      assert.equal(res.status, 200, `${value}: ${JSON.stringify(res.body)}`)
      assert.equal(await storedValue(r, id), value)
    }
  })

  test(`${r.path}/{id}: DELETE with a stale If-Match is 412 and the row stays; with the current one it goes`, async () => {
    const u = await createUser()
    const { id } = await create(r, u)
    const stale = await currentETag(r, u, id)
    assert.equal((await put(r, u, id, 'kept')).status, 200)
    const refused = await del(r, u, id, stale)
    assertStale(r, refused, 'kept')
    assert.equal(await storedValue(r, id), 'kept', 'the row is still there')
    const gone = await del(r, u, id, refused.headers.get('etag')!)
    assert.equal(gone.status, 200, JSON.stringify(gone.body))
    assert.equal(await storedValue(r, id), undefined)
    // A row that is not there stays a 404, If-Match or not.
    assertError(await del(r, u, id, stale), 404)
    assertError(await put(r, u, id, 'x', stale), 404)
  })

  test(`${r.path}/{id}: a malformed If-Match is 400 naming it; nothing written`, async () => {
    const u = await createUser()
    const { id } = await create(r, u)
    const before = await currentETag(r, u, id)
    for (const bad of ['', '  ', 'abc', '"1"x', '"1,2"', `${before}, *`, `"${'1'.repeat(1001)}"`]) {
      const res = await put(r, u, id, 'bad', bad)
      assertError(res, 400, /If-Match/)
      assert.equal(res.body.code, 'if_match_invalid')
      assertError(await del(r, u, id, bad), 400, /If-Match/)
    }
    assert.equal(await currentETag(r, u, id), before)
  })

  test(`${r.path}/{id}: the If-Match race through /api and supabase-js: exactly one of two writers of the same version wins`, async () => {
    const u = await createUser()
    const { id } = await create(r, u)
    for (let round = 0; round < 6; round++) {
      const etag = await currentETag(r, u, id)
      const [viaApi, direct] = await Promise.all([
        put(r, u, id, `api ${round}`, etag),
        directWrite(r, u, id, `js ${round}`, etag),
      ])
      const apiWon = viaApi.status === 200
      const directWon = direct.error === null
      assert.ok(apiWon !== directWon, `round ${round}: exactly one wins (api ${viaApi.status}, js ${direct.status})`)
      if (apiWon) {
        assert.equal(direct.status, 412)
        assert.equal(direct.error?.code, 'PT412')
        assert.equal(direct.error?.hint, 'precondition_failed')
        assert.equal(await storedValue(r, id), `api ${round}`)
      } else {
        assertStale(r, viaApi, `js ${round}`)
        assert.equal(await storedValue(r, id), `js ${round}`)
      }
      // Two /api writers of the same version: the same.
      const again = await currentETag(r, u, id)
      const both = await Promise.all([put(r, u, id, `a ${round}`, again), put(r, u, id, `b ${round}`, again)])
      assert.deepEqual(both.map((b) => b.status).sort(), [200, 412], `round ${round}: two /api writers`)
    }
  })

  test(`${r.path}/{id}: a direct PostgREST PATCH or DELETE with a stale If-Match is 412 (hint precondition_failed)`, async () => {
    const u = await createUser()
    const { id } = await create(r, u)
    const stale = await currentETag(r, u, id)
    assert.equal((await put(r, u, id, 'current')).status, 200)
    const headers = {
      apikey: ANON_KEY,
      authorization: `Bearer ${u.token}`,
      'content-type': 'application/json',
      'if-match': stale,
    }
    const url = `${API_URL}/rest/v1/${r.table}?id=eq.${id}`
    for (const method of ['PATCH', 'DELETE']) {
      const res = await fetch(url, { method, headers, body: method === 'PATCH' ? JSON.stringify({ [r.column]: 'x' }) : undefined })
      const body = await res.json()
      assert.equal(res.status, 412, `${method}: ${JSON.stringify(body)}`)
      assert.equal(body.hint, 'precondition_failed')
      assert.equal(body.details, id)
    }
    assert.equal(await storedValue(r, id), 'current')
    const fresh = await directWrite(r, u, id, 'fresh', await currentETag(r, u, id))
    assert.equal(fresh.error, null, JSON.stringify(fresh.error))
    assert.equal(await storedValue(r, id), 'fresh')
  })
}

/** The owner's entry, notebook and goal shared where the world's people may see some of them. */
async function sharedRows(w: SharingWorld) {
  const shared = { metadata_visibility: 'team', content_visibility: 'team', team_id: w.teamId }
  const entry = await api('/api/journal', { token: w.owner.token, body: { title: 'e', content: 'c', ...shared } })
  const notebook = await api('/api/notebooks', { token: w.owner.token, body: { name: 'n', ...shared } })
  const goal = await api('/api/goals', { token: w.owner.token, body: { title: 'g' } })
  return [entry.body.entry, notebook.body, goal.body] as { id: string; row_version: string }[]
}

test("If-Match never leaks another user's row: a write of theirs stays 403 (visible) or 404, never 412", async () => {
  const w = await sharingWorld()
  const rows = await sharedRows(w)
  // The team sees the entry and notebook (403), a stranger sees nothing (404), a super admin sees
  // the goal (403); with the current ETag or a stale one alike.
  const expected: [TestUser, number[]][] = [[w.teammate, [403, 403, 404]], [w.stranger, [404, 404, 404]], [
    w.superAdmin,
    [403, 403, 403],
  ]]
  for (const [who, statuses] of expected) {
    for (const [i, r] of RESOURCES.entries()) {
      for (const ifMatch of [etagOf(rows[i]), '"1"']) {
        for (const res of [await put(r, who, rows[i].id, 'theirs', ifMatch), await del(r, who, rows[i].id, ifMatch)]) {
          assertError(res, statuses[i])
          assert.equal(res.body[r.field], undefined, 'no row in the refusal')
          assert.equal(res.headers.get('etag'), null)
        }
      }
    }
  }
  for (const [i, r] of RESOURCES.entries()) assert.notEqual(await storedValue(r, rows[i].id), 'theirs')
})

test("an entry's ETag changes with a text-only change, through /api and supabase-js, and when its notebook's levels re-derive its scope", async () => {
  const w = await sharingWorld()
  const notebook = await api('/api/notebooks', { token: w.owner.token, body: { name: 'n' } })
  const entry = await api('/api/journal', {
    token: w.owner.token,
    body: { title: 't', content: 'one', notebook_id: notebook.body.id },
  })
  const r = RESOURCES[0]
  const id = entry.body.entry.id
  const v0 = await currentETag(r, w.owner, id)

  const text = await api(`/api/journal/${id}`, { method: 'PUT', token: w.owner.token, body: { content: 'two' }, headers: { 'if-match': v0 } })
  assert.equal(text.status, 200, JSON.stringify(text.body))
  const v1 = await currentETag(r, w.owner, id)
  assert.notEqual(v1, v0, 'a text-only PUT bumps it')
  assert.equal(text.headers.get('etag'), v1)
  // A stale text-only PUT is refused like any other.
  assertStale(r, await api(`/api/journal/${id}`, { method: 'PUT', token: w.owner.token, body: { content: 'x' }, headers: { 'if-match': v0 } }), 't')

  const direct = await clientAs(w.owner.token).from('journal_entry_contents').update({ content: 'three' }).eq('entry_id', id)
  assert.equal(direct.error, null, JSON.stringify(direct.error))
  const v2 = await currentETag(r, w.owner, id)
  assert.notEqual(v2, v1, 'a direct text edit bumps it')

  // The entry is at user: it inherits the notebook's levels, so sharing the notebook changes it.
  const shared = await api(`/api/notebooks/${notebook.body.id}`, {
    method: 'PUT',
    token: w.owner.token,
    body: { metadata_visibility: 'team', content_visibility: 'team', team_id: w.teamId },
  })
  assert.equal(shared.status, 200, JSON.stringify(shared.body))
  const v3 = await currentETag(r, w.owner, id)
  assert.notEqual(v3, v2, "the notebook's change re-derived the entry's scope and bumped it")
  assertStale(r, await put(r, w.owner, id, 'late', v2), 't')
  assert.equal((await read(r, w.teammate, id)).headers.get('etag'), v3, 'a reader who may see it gets the same ETag')
})

test('CORS: a browser may send If-Match to /api and to /rest/v1, and reads the ETag /api sends', async () => {
  const u = await createUser()
  const { id } = await create(RESOURCES[1], u)
  for (const path of [`/functions/v1/api/notebooks/${id}`, `/rest/v1/notebooks?id=eq.${id}`]) {
    const res = await fetch(`${API_URL}${path}`, {
      method: 'OPTIONS',
      headers: {
        origin: 'http://localhost:3000',
        'access-control-request-method': 'PUT',
        'access-control-request-headers': 'authorization,apikey,content-type,if-match',
      },
    })
    await res.body?.cancel()
    assert.ok(res.status === 200 || res.status === 204, `${path}: ${res.status}`)
    assert.ok(res.headers.get('access-control-allow-origin'), path)
    const allowed = res.headers.get('access-control-allow-headers')!.toLowerCase().split(/\s*,\s*/)
    assert.ok(allowed.includes('if-match'), `${path}: If-Match allowed (${allowed})`)
  }
  const got = await fetch(`${API_URL}/functions/v1/api/notebooks/${id}`, {
    headers: { origin: 'http://localhost:3000', authorization: `Bearer ${u.token}` },
  })
  await got.body?.cancel()
  assert.ok(got.headers.get('etag'))
  const exposed = got.headers.get('access-control-expose-headers')!.toLowerCase().split(/\s*,\s*/)
  assert.ok(exposed.includes('etag'), `ETag exposed (${exposed})`)
})

test('OpenAPI: If-Match on each PUT and DELETE, ETag on each GET, POST and PUT, 412 with the current row', async () => {
  const doc = (await api('/api/openapi.json')).body
  for (const r of RESOURCES) {
    const item = doc.paths[`${r.path}/{id}`]
    for (const method of ['put', 'delete']) {
      const param = item[method].parameters.find((p: any) => p.in === 'header' && p.name === 'if-match')
      assert.ok(param, `${method} ${r.path}/{id}: If-Match declared`)
      assert.equal(param.required, false)
      const stale = item[method].responses['412']
      assert.match(stale.description, /`precondition_failed`/)
      assert.ok(stale.headers.ETag)
      const component = stale.content['application/json'].schema.$ref.split('/').pop()
      assert.ok(doc.components.schemas[component].properties[r.field], `${component} carries the ${r.field}`)
    }
    for (const [path, method, status] of [[`${r.path}/{id}`, 'get', '200'], [`${r.path}/{id}`, 'put', '200'], [r.path, 'post', '201']]) {
      assert.ok(doc.paths[path][method].responses[status].headers?.ETag, `${method} ${path}: ETag documented`)
    }
  }
})

test("a direct edit of an entry's text answers to the entry's If-Match: stale is 412 and the text stays", async () => {
  const u = await createUser()
  const entry = await postEntry(u, { title: 'text', content: 'first', mood: 'calm' })
  const stale = `"${entry.row_version}"`
  assert.equal((await api(`/api/journal/${entry.id}`, { method: 'PUT', token: u.token, body: { title: 'renamed' } })).status, 200)
  const db = clientAs(u.token)
  const refused = await db.from('journal_entry_contents').update({ content: 'over it' }).eq('entry_id', entry.id)
    .setHeader('If-Match', stale)
  assert.equal(refused.status, 412, JSON.stringify(refused))
  assert.equal(refused.error?.hint, 'precondition_failed')
  const [row] = await sql`select content from public.journal_entry_contents where entry_id = ${entry.id}`
  assert.equal(row.content, 'first')
  const current = (await api(`/api/journal/${entry.id}`, { token: u.token })).headers.get('etag')!
  const applied = await db.from('journal_entry_contents').update({ content: 'fresh' }).eq('entry_id', entry.id)
    .setHeader('If-Match', current)
  assert.equal(applied.error, null)
  assert.equal((await sql`select content from public.journal_entry_contents where entry_id = ${entry.id}`)[0].content, 'fresh')
})
