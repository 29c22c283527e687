// Creating is safe to retry (issue 40): a create carrying a client-chosen id, whose reply is
// lost after the commit (a 503 from a proxy, a connection cut mid-reply: tests/_fault_proxy.ts),
// repeated with the same id answers 200 with the row already made: one row, one tone analysis.
// The same id with other content, or another user's id, is 409 id_conflict (docs/journal.md
// "Retrying a create"; the rule: private.refuse_reused_id and create_journal_entry).
import { strict as assert } from 'node:assert'
import { createClient } from '@supabase/supabase-js'
import { ANON_KEY, API_URL, api, clientAs, createUser, sql, test, type TestUser } from './_helpers.ts'
import { checkReply } from './_contract.ts'
import { type Fault, FaultProxy } from './_fault_proxy.ts'
import { toneSettled } from './_tone.ts'
import { aiMarker, aiRequests, scriptAi } from './fakes/ai_control.ts'

const FAULTS: Fault[] = ['reply_503', 'cut_mid_reply']

type Reply = { status: number; body: any }

/** POST to /api through the proxy; a reply that never arrived whole is status 0. Whole replies
 *  are checked against the OpenAPI document as api() checks them. */
async function postViaProxy(proxy: FaultProxy, path: string, token: string, body: unknown): Promise<Reply> {
  try {
    const res = await fetch(`${proxy.url}/functions/v1${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    })
    const text = await res.text()
    if (res.status !== 503) await checkReply(`${API_URL}/functions/v1`, 'POST', path, { status: res.status, headers: res.headers, text })
    return { status: res.status, body: JSON.parse(text) }
  } catch (e) {
    return { status: 0, body: String(e) }
  }
}

interface Kind {
  table: string
  /** The path and the body of a create with this id (the goal a check-in is made on, set up first). */
  create(user: TestUser, id: string, marker: string): Promise<{ path: string; body: Record<string, unknown> }>
  /** The same body with other content. */
  changed(body: Record<string, unknown>): Record<string, unknown>
  /** The created row in a reply. */
  row(reply: any): any
}

async function goalOf(user: TestUser) {
  const res = await api('/api/goals', { token: user.token, body: { title: 'Run' } })
  assert.equal(res.status, 201, JSON.stringify(res.body))
  return res.body.id as string
}

const KINDS: Record<string, Kind> = {
  journal: {
    table: 'journal_entries',
    create: async (_u, id, marker) => ({ path: '/api/journal', body: { id, title: 'Retry', content: `Calm day. ${marker}`, tags: ['x'] } }),
    changed: (b) => ({ ...b, content: 'Another text' }),
    row: (r) => r.entry,
  },
  notebooks: {
    table: 'notebooks',
    create: async (_u, id) => ({ path: '/api/notebooks', body: { id, name: 'Travel' } }),
    changed: (b) => ({ ...b, name: 'Work' }),
    row: (r) => r,
  },
  goals: {
    table: 'goals',
    create: async (_u, id) => ({ path: '/api/goals', body: { id, title: 'Read more', description: 'books' } }),
    changed: (b) => ({ ...b, description: 'papers' }),
    row: (r) => r,
  },
  check_ins: {
    table: 'goal_check_ins',
    create: async (u, id) => ({ path: `/api/goals/${await goalOf(u)}/check-ins`, body: { id, notes: 'ran 5 km' } }),
    changed: (b) => ({ ...b, notes: 'ran 10 km' }),
    row: (r) => r,
  },
}

/** A test with its own proxy in front of the gateway, closed after it. */
async function withProxy(fn: (proxy: FaultProxy) => Promise<void>) {
  const proxy = new FaultProxy(API_URL)
  try {
    await fn(proxy)
  } finally {
    await proxy.close()
  }
}

const rowsWithId = async (table: string, id: string) =>
  (await sql`select count(*)::int as n from ${sql('public.' + table)} where id = ${id}`)[0].n as number

async function scriptedCalm() {
  const marker = aiMarker()
  await scriptAi(marker, [{ json: { primaryTone: 'calm', tones: [{ tone: 'calm', score: 0.9 }], confidence: 0.9 }, usage: { prompt_tokens: 10, completion_tokens: 2 } }])
  return marker
}

/** The entry's text was analysed once: one request to the model, one billed call. */
async function analysedOnce(entryId: string, marker: string) {
  await toneSettled(entryId)
  assert.equal((await aiRequests(marker)).length, 1, 'the model was asked once')
  const [{ n }] = await sql`select count(*)::int as n from public.ai_usage where entry_id = ${entryId}`
  assert.equal(n, 1, 'one tone analysis billed')
}

for (const [name, kind] of Object.entries(KINDS)) {
  for (const fault of FAULTS) {
    test(`${name} via /api, ${fault}: the retry with the same id answers 200 with the row made; other content is 409`, () => withProxy(async (proxy) => {
      const user = await createUser()
      const id = crypto.randomUUID()
      const marker = name === 'journal' ? await scriptedCalm() : ''
      const { path, body } = await kind.create(user, id, marker)
      const attempts: number[] = []
      proxy.failNext(fault)
      const first = await postViaProxy(proxy, path, user.token, body)
      attempts.push(first.status)
      assert.equal(first.status, fault === 'reply_503' ? 503 : 0, JSON.stringify(first.body))
      const retry = await postViaProxy(proxy, path, user.token, body)
      attempts.push(retry.status)
      const rows = await rowsWithId(kind.table, id)
      console.log(`  measured: ${name} ${fault}: ${attempts.length} attempts (${attempts.join(', ')}), ${rows} row(s)`)
      assert.equal(retry.status, 200, JSON.stringify(retry.body))
      assert.equal(kind.row(retry.body).id, id)
      assert.equal(rows, 1)
      if (name === 'journal') await analysedOnce(id, marker)

      const before = (await sql`select to_jsonb(t) as row from ${sql('public.' + kind.table)} t where id = ${id}`)[0].row
      const other = await postViaProxy(proxy, path, user.token, kind.changed(body))
      assert.equal(other.status, 409, JSON.stringify(other.body))
      assert.equal(other.body.code, 'id_conflict')
      assert.match(other.body.error, /^id: /)
      const after = (await sql`select to_jsonb(t) as row from ${sql('public.' + kind.table)} t where id = ${id}`)[0].row
      assert.deepEqual(after, before, 'nothing changed')
      if (name === 'journal') assert.equal((await aiRequests(marker)).length, 1, 'no second analysis')
    }))
  }
}

/** supabase-js talking to PostgREST through the proxy, as the user. */
const proxiedClient = (proxy: FaultProxy, user: TestUser) =>
  createClient(proxy.url, ANON_KEY, {
    auth: { persistSession: false, autoRefreshToken: false },
    global: { headers: { Authorization: `Bearer ${user.token}` } },
  })

for (const fault of FAULTS) {
  test(`journal via supabase-js rpc(create_journal_entry, {id}), ${fault}: the retry returns the entry made`, () => withProxy(async (proxy) => {
    const user = await createUser()
    const db = proxiedClient(proxy, user)
    const id = crypto.randomUUID()
    const marker = await scriptedCalm()
    const args = { title: 'Via RPC', content: `Quiet evening. ${marker}`, id }
    const create = () => db.rpc('create_journal_entry', args).select('*, created_now').single()
    proxy.failNext(fault)
    const first = await create()
    assert.ok(first.error, 'the first attempt failed for the client')
    assert.equal(first.status, fault === 'reply_503' ? 503 : 0, JSON.stringify(first.error))
    const retry = await create()
    const rows = await rowsWithId('journal_entries', id)
    console.log(`  measured: journal rpc ${fault}: 2 attempts (${first.status}, ${retry.status}), ${rows} row(s)`)
    assert.equal(retry.error, null, JSON.stringify(retry.error))
    assert.deepEqual([(retry.data as any).id, (retry.data as any).created_now], [id, false])
    assert.equal(rows, 1)
    await analysedOnce(id, marker)
    // The mood tone analysis set stands for "no mood": the same request is still a retry.
    const again = await create()
    assert.deepEqual([(again.data as any)?.mood, (again.data as any)?.created_now], ['calm', false])

    const other = await db.rpc('create_journal_entry', { ...args, title: 'Changed' }).select('*').single()
    assert.deepEqual([other.status, other.error?.code, other.error?.hint], [409, '23505', 'id_conflict'])
    const [entry] = await sql`select title from public.journal_entries where id = ${id}`
    assert.equal(entry.title, 'Via RPC')
  }))
}

test('a retry is compared as /api normalises: trimmed title, lower-case mood, tags as a set', async () => {
  const user = await createUser()
  const id = crypto.randomUUID()
  const made = await api('/api/journal', { token: user.token, body: { id, title: 'Plan', content: 'c', mood: 'Happy', tags: ['a', 'b'] } })
  assert.equal(made.status, 201, JSON.stringify(made.body))
  const rpc = await clientAs(user.token).rpc('create_journal_entry', { id, title: ' Plan ', content: 'c', mood: ' happy', tags: ['b', 'a', 'a'] })
    .select('id, created_now').single()
  assert.deepEqual(rpc.data, { id, created_now: false }, JSON.stringify(rpc.error))
  const moodChanged = await api('/api/journal', { token: user.token, body: { id, title: 'Plan', content: 'c', mood: 'sad', tags: ['a', 'b'] } })
  assert.deepEqual([moodChanged.status, moodChanged.body.code], [409, 'id_conflict'])
  const noMood = await api('/api/journal', { token: user.token, body: { id, title: 'Plan', content: 'c', tags: ['a', 'b'] } })
  assert.equal(noMood.status, 409, 'a mood the user chose is content: leaving it out is a change')
})

test("another user's id is 409 in the same words as other content, and nothing of the row is revealed", async () => {
  const [owner, other] = await Promise.all([createUser(), createUser()])
  for (const [name, kind] of Object.entries(KINDS)) {
    const id = crypto.randomUUID()
    const mine = await kind.create(owner, id, '')
    assert.equal((await api(mine.path, { token: owner.token, body: mine.body })).status, 201, name)
    const changed = await api(mine.path, { token: owner.token, body: kind.changed(mine.body) })
    const theirs = await kind.create(other, id, '')
    const stolen = await api(theirs.path, { token: other.token, body: theirs.body })
    assert.deepEqual([stolen.status, stolen.body.code], [409, 'id_conflict'], `${name}: ${JSON.stringify(stolen.body)}`)
    assert.equal(stolen.body.error, changed.body.error, `${name}: the same words`)
    assert.equal(await rowsWithId(kind.table, id), 1)
  }
  // The RPC as well, for an entry shared publicly (its reader may see it, still not take its id).
  const id = crypto.randomUUID()
  await api('/api/journal', { token: owner.token, body: { id, title: 'Public', metadata_visibility: 'public', content_visibility: 'public' } })
  const rpc = await clientAs(other.token).rpc('create_journal_entry', { id, title: 'Public', metadata_visibility: 'public', content_visibility: 'public' })
  assert.deepEqual([rpc.status, rpc.error?.hint], [409, 'id_conflict'])
})

test('five identical creates at once make one row: one 201, four 200', async () => {
  for (const [name, kind] of Object.entries(KINDS)) {
    const user = await createUser()
    const id = crypto.randomUUID()
    const { path, body } = await kind.create(user, id, '')
    const replies = await Promise.all(Array.from({ length: 5 }, () => api(path, { token: user.token, body })))
    const statuses = replies.map((r) => r.status).sort()
    const rows = await rowsWithId(kind.table, id)
    console.log(`  measured: ${name} concurrent: 5 attempts (${statuses.join(', ')}), ${rows} row(s)`)
    assert.deepEqual(statuses, [200, 200, 200, 200, 201], `${name}: ${JSON.stringify(replies.map((r) => r.body))}`)
    assert.ok(replies.every((r) => kind.row(r.body).id === id))
    assert.equal(rows, 1)
  }
})

test('an id that is not a UUID is a 400 naming id', async () => {
  const user = await createUser()
  for (const kind of Object.values(KINDS)) {
    const { path, body } = await kind.create(user, 'not-a-uuid', '')
    const res = await api(path, { token: user.token, body })
    assert.deepEqual([res.status, res.body.code], [400, 'id_invalid'], JSON.stringify(res.body))
  }
})

test('direct PostgREST inserts with an id in use: 409, hint already_created for a retry, id_conflict otherwise', async () => {
  const user = await createUser()
  const db = clientAs(user.token)
  const id = crypto.randomUUID()
  assert.equal((await db.from('goals').insert({ id, title: 'Direct' })).error, null)
  const retry = await db.from('goals').insert({ id, title: 'Direct' })
  assert.deepEqual([retry.status, retry.error?.code, retry.error?.hint], [409, '23505', 'already_created'])
  const other = await db.from('goals').insert({ id, title: 'Else' })
  assert.deepEqual([other.status, other.error?.hint], [409, 'id_conflict'])
  // goal_check_ins take a client-chosen id too.
  const checkInId = crypto.randomUUID()
  assert.equal((await db.from('goal_check_ins').insert({ id: checkInId, goal_id: id, notes: 'n' })).error, null)
  assert.equal((await db.from('goal_check_ins').insert({ id: checkInId, goal_id: id, notes: 'n' })).error?.hint, 'already_created')
})
