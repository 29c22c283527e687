// GET/POST /api/sync (docs/sync.md): WatermelonDB's pull and push over the caller's journal.
import { strict as assert } from 'node:assert'
import { api, assertError, asUserInTransaction, createUser, pause, postEntry, sql, test, type TestUser } from './_helpers.ts'
import { Device, idsOf, pull, pullUntil, push, settled } from './_sync.ts'

const entryCount = async (u: TestUser) =>
  (await sql`select count(*)::int as n from public.journal_entries where user_id = ${u.id}`)[0].n

async function goal(u: TestUser, title = 'Run') {
  const res = await api('/api/goals', { token: u.token, body: { title } })
  assert.equal(res.status, 201)
  return res.body
}

test('first pull: every own record once, as raw values; another user\'s rows never appear', async () => {
  const [me, other] = [await createUser(), await createUser()]
  const nb = (await api('/api/notebooks', { token: me.token, body: { name: 'Trips' } })).body
  const e = await postEntry(me, { title: 'Day one', content: 'words', mood: 'calm', tags: ['a', 'b'], notebook_id: nb.id })
  const g = await goal(me)
  const c = (await api(`/api/goals/${g.id}/check-ins`, { token: me.token, body: { notes: 'done' } })).body
  await postEntry(other, { title: 'not yours', metadata_visibility: 'public', content_visibility: 'public' })

  const p = await pullUntil(me, null, (a) => (a.changes.goal_check_ins?.created.length ?? 0) > 0)
  assert.ok(p.timestamp > 0 && Number.isInteger(p.timestamp))
  assert.deepEqual(Object.keys(p.changes).sort(), ['goal_check_ins', 'goals', 'journal_entries', 'notebooks'])
  assert.deepEqual(idsOf(p, 'journal_entries'), { created: [e.id], updated: [], deleted: [] })
  assert.deepEqual(idsOf(p, 'notebooks').created, [nb.id])
  assert.deepEqual(idsOf(p, 'goals').created, [g.id])
  assert.deepEqual(idsOf(p, 'goal_check_ins').created, [c.id])
  const rec = p.changes.journal_entries.created[0]
  assert.equal(rec.content, 'words')
  assert.equal(rec.tags, '["a","b"]', 'tags travel as a JSON string')
  assert.equal(rec.created_at, Date.parse(e.created_at), 'times in milliseconds')
  assert.equal(rec.notebook_id, nb.id)
  assert.equal(rec.user_id, me.id)
  for (const t of Object.values(p.changes)) {
    for (const r of [...t.created, ...t.updated]) {
      for (const v of Object.values(r)) assert.ok(v === null || ['string', 'number', 'boolean'].includes(typeof v))
      assert.ok(!('_status' in r) && !('row_version' in r))
    }
  }
  // Nothing changed: the next pull is empty, and the cursor does not go back.
  const again = await pull(me, p.timestamp)
  for (const t of Object.values(again.changes)) assert.deepEqual(t, { created: [], updated: [], deleted: [] })
  assert.ok(again.timestamp >= p.timestamp)
})

test('incremental pull: created, updated and deleted since the cursor, each once, by any path', async () => {
  const me = await createUser()
  // Moods given: no tone analysis changes the entries behind the test's back.
  const kept = await postEntry(me, { title: 'kept', mood: 'calm' })
  const edited = await postEntry(me, { title: 'edited', mood: 'calm' })
  const gone = await postEntry(me, { title: 'gone', mood: 'calm' })
  const p0 = await pullUntil(me, null, (a) => a.changes.journal_entries.created.length === 3)

  const made = await postEntry(me, { title: 'new', mood: 'calm' })
  assert.equal((await api(`/api/journal/${edited.id}`, { method: 'PUT', token: me.token, body: { content: 'new text' } })).status, 200)
  assert.equal((await api(`/api/journal/${gone.id}`, { method: 'DELETE', token: me.token })).status, 200)
  const p1 = await pullUntil(me, p0.timestamp, (a) => a.changes.journal_entries.deleted.length > 0)
  assert.deepEqual(idsOf(p1, 'journal_entries'), { created: [made.id], updated: [edited.id], deleted: [gone.id] })
  assert.equal(p1.changes.journal_entries.updated[0].content, 'new text', 'a text edit is a change of the entry')
  assert.ok(!idsOf(p1, 'journal_entries').updated.includes(kept.id))

  // A direct PostgREST write is a change too.
  await sql`update public.journal_entries set title = 'by sql' where id = ${kept.id}`
  const p2 = await pullUntil(me, p1.timestamp, (a) => a.changes.journal_entries.updated.length > 0)
  assert.deepEqual(idsOf(p2, 'journal_entries'), { created: [], updated: [kept.id], deleted: [] })
  assert.equal(p2.changes.journal_entries.updated[0].title, 'by sql')
})

test('long-running transactions committing out of order are all pulled, none twice', async () => {
  const me = await createUser()
  const base = await pull(me, null)
  let release!: () => void
  const held = new Promise<void>((r) => release = r)
  let early!: string
  // The early transaction takes its id first, writes, and commits last.
  const slow = asUserInTransaction(me, async (tx) => {
    const [row] = await tx`insert into public.journal_entries (title) values ('early, committed late') returning id`
    early = row.id
    await held
  })
  await pause(200)
  const late = await postEntry(me, { title: 'late, committed first' })
  const during = await pull(me, base.timestamp)
  const seen = new Set(idsOf(during, 'journal_entries').created)
  release()
  await slow
  const after = await pullUntil(me, during.timestamp, (a) => seen.size + a.changes.journal_entries.created.length >= 2)
  const both = [...seen, ...idsOf(after, 'journal_entries').created]
  assert.deepEqual(both.sort(), [early, late.id].sort(), 'each change exactly once across the two pulls')
  assert.equal(new Set(both).size, both.length)
})

test('push: created, updated and deleted records apply through the same rules, all or none', async () => {
  const me = await createUser()
  // A track playing before the push: the pushed entry is linked to it, as one made through /api.
  const track = `sync-${crypto.randomUUID().slice(0, 8)}`
  await sql`insert into public.music_tracks (id, name, raw) values (${track}, 'Sync song', '{}')`
  await sql`insert into public.music_plays (user_id, played_at, track_id) values (${me.id}, now() - interval '5 minutes', ${track})`
  const p0 = await pull(me, null)
  const nb = crypto.randomUUID(), e = crypto.randomUUID(), g = crypto.randomUUID(), c = crypto.randomUUID()
  const res = await push(me, p0.timestamp, {
    notebooks: { created: [{ id: nb, name: ' Offline ', _status: 'created', _changed: '' }] },
    journal_entries: {
      created: [{ id: e, title: 'On a plane', content: 'clouds', tags: '["sky"," sky "]', notebook_id: nb, mood: null, _status: 'created', _changed: '' }],
    },
    goals: { created: [{ id: g, title: 'Fly', target_date: '2027-01-02' }] },
    goal_check_ins: { created: [{ id: c, goal_id: g, notes: 'took off' }] },
  })
  assert.equal(res.status, 200, JSON.stringify(res.body))
  const [row] = await sql`select e.title, e.tags, e.notebook_id, c.content from public.journal_entries e
                           join public.journal_entry_contents c on c.entry_id = e.id where e.id = ${e}`
  assert.deepEqual({ ...row }, { title: 'On a plane', tags: ['sky'], notebook_id: nb, content: 'clouds' })
  assert.equal((await sql`select name from public.notebooks where id = ${nb}`)[0].name, 'Offline')
  const [queued] = await sql`select count(*)::int as n from private.tone_analysis_queue where entry_id = ${e}`
  assert.equal(queued.n, 1, 'a pushed entry without a mood is queued for tone analysis')
  const [linked] = await sql`select music_track_id from public.journal_entries where id = ${e}`
  assert.equal(linked.music_track_id, track, 'the music link runs for a pushed entry')
  const [indexed] = await sql`select mentions_indexed_at is not null as done from public.journal_entry_contents where entry_id = ${e}`
  assert.ok(indexed.done, 'its text is indexed for mentions')

  // A bad record anywhere: nothing of the push is applied.
  const p1 = await pull(me, p0.timestamp)
  const bad = await push(me, p1.timestamp, {
    journal_entries: { created: [{ id: crypto.randomUUID(), title: 'fine' }], updated: [{ id: e, title: '' }] },
  })
  assertError(bad, 400, /journal_entries\.title/)
  assert.equal(await entryCount(me), 1)
})

test('push: a retried push is applied once; a record changed on the server since the pull is a 409 naming it', async () => {
  const me = await createUser()
  const e = await postEntry(me, { title: 'shared', mood: 'calm' })
  await settled(me)
  const p0 = await pull(me, null)
  const made = crypto.randomUUID()
  const body = {
    journal_entries: { created: [{ id: made, title: 'made offline', mood: 'happy' }], updated: [{ id: e.id, title: 'renamed', mood: 'calm' }] },
  }
  const first = await push(me, p0.timestamp, body)
  assert.equal(first.status, 200, JSON.stringify(first.body))
  const [v1] = await sql`select row_version::text as v from public.journal_entries where id = ${e.id}`
  const retry = await push(me, p0.timestamp, body)
  assert.equal(retry.status, 200, JSON.stringify(retry.body))
  assert.equal(retry.body.unchanged, 2)
  assert.equal(await entryCount(me), 2)
  const [v2] = await sql`select row_version::text as v from public.journal_entries where id = ${e.id}`
  assert.equal(v2.v, v1.v, 'the retry wrote nothing')

  // Another device changes the title; this device, behind, is refused and told which record.
  await api(`/api/journal/${e.id}`, { method: 'PUT', token: me.token, body: { title: 'from the web' } })
  const stale = await push(me, p0.timestamp, { journal_entries: { updated: [{ id: e.id, title: 'from the phone' }] } })
  assertError(stale, 409, e.id)
  assert.equal(stale.body.code, 'sync_conflict')
  assert.equal((await sql`select title from public.journal_entries where id = ${e.id}`)[0].title, 'from the web')
})

test('push: another user\'s record, a foreign user_id, or a team the user is not in is refused with the field; their deletion is a no-op', async () => {
  const [me, other] = [await createUser(), await createUser()]
  const theirs = await postEntry(other, { title: 'theirs' })
  await settled(me)
  const p = await pull(me, null)
  assertError(await push(me, p.timestamp, { journal_entries: { updated: [{ id: theirs.id, title: 'mine now' }] } }), 403, theirs.id)
  // Deleting someone else's id changes nothing, in the words a missing id gets (no oracle).
  const quiet = await push(me, p.timestamp, { journal_entries: { deleted: [theirs.id] } })
  assert.equal(quiet.status, 200)
  assert.equal(quiet.body.unchanged, 1)
  assertError(await push(me, p.timestamp, { journal_entries: { created: [{ id: theirs.id, title: 'clash' }] } }), 403)
  assertError(
    await push(me, p.timestamp, { journal_entries: { created: [{ id: crypto.randomUUID(), title: 'x', user_id: other.id }] } }),
    403,
    /journal_entries\.user_id/,
  )
  assertError(
    await push(me, p.timestamp, {
      journal_entries: { created: [{ id: crypto.randomUUID(), title: 'x', metadata_visibility: 'team', team_id: crypto.randomUUID() }] },
    }),
    400,
    /journal_entries\.team_id/,
  )
  assert.equal((await sql`select title from public.journal_entries where id = ${theirs.id}`)[0].title, 'theirs')
  assert.equal(await entryCount(me), 0)
})

test('bad input: malformed changes, unknown table or column, future timestamp, missing id are 400 naming it', async () => {
  const me = await createUser()
  const p = await pull(me, null)
  const cases: [unknown, RegExp, number?][] = [
    [[], /object/],
    [{ diaries: { created: [] } }, /diaries/],
    [{ journal_entries: { created: [{ id: crypto.randomUUID(), title: 't', colour: 'red' }] } }, /colour/],
    [{ journal_entries: { created: [{ title: 'no id' }] } }, /id/],
    [{ journal_entries: { deleted: ['not-a-uuid'] } }, /deleted/],
    [{ journal_entries: { created: [{ id: crypto.randomUUID(), title: 't', tags: '[1' }] } }, /tags/],
    [{ goals: { created: [{ id: crypto.randomUUID(), title: 't', target_date: '2027-02-30' }] } }, /target_date/],
    [{ journal_entries: { created: [{ id: crypto.randomUUID(), title: 'ok' }] } }, /last_pulled_at/, Date.now()],
  ]
  for (const [body, mention, cursor] of cases) {
    const res = await api(`/api/sync?last_pulled_at=${cursor ?? p.timestamp}`, { token: me.token, body })
    assertError(res, 400, mention)
  }
  assertError(await api(`/api/sync?last_pulled_at=${Date.now()}`, { token: me.token }), 400, /last_pulled_at/)
  assertError(await api('/api/sync?last_pulled_at=null&schema_version=9', { token: me.token }), 400, /schema_version/)
  assertError(await api('/api/sync?last_pulled_at=1&migration=%7B', { token: me.token }), 400, /migration/)
  assertError(await api('/api/sync?last_pulled_at=0', { token: me.token, body: {} }), 400, /last_pulled_at/)
  assertError(await api('/api/sync'), 401)
  assert.equal(await entryCount(me), 0)
})

test('schema versions: version 1 gets the columns it knows; a migration brings the new ones of records it has', async () => {
  const me = await createUser()
  const e = await postEntry(me, { title: 'old app', mood: 'calm' })
  const g = await goal(me)
  const c = (await api(`/api/goals/${g.id}/check-ins`, { token: me.token, body: {} })).body
  await settled(me)
  const v1 = await pull(me, null, 1)
  assert.deepEqual(Object.keys(v1.changes).sort(), ['goals', 'journal_entries', 'notebooks'])
  const rec = v1.changes.journal_entries.created[0]
  assert.ok(!('mood_detected' in rec) && !('music_track_id' in rec) && 'title' in rec)

  const migrated = await pull(me, v1.timestamp, 2, {
    from: 1,
    tables: ['goal_check_ins'],
    columns: [{ table: 'journal_entries', columns: ['mood_detected', 'music_track_id', 'background_url'] }],
  })
  assert.deepEqual(idsOf(migrated, 'goal_check_ins').created, [c.id])
  assert.deepEqual(idsOf(migrated, 'journal_entries'), { created: [], updated: [e.id], deleted: [] })
  assert.equal(migrated.changes.journal_entries.updated[0].mood_detected, false)
  assert.deepEqual(idsOf(migrated, 'goals'), { created: [], updated: [], deleted: [] })
  assertError(await api(`/api/sync?last_pulled_at=${v1.timestamp}&schema_version=2&migration=${
    encodeURIComponent(JSON.stringify({ from: 1, tables: ['secrets'], columns: [] }))
  }`, { token: me.token }), 400, /secrets/)
})

test('tombstones: kept for 90 days; a cursor older than the pruned ones gets a replacement pull', async () => {
  const me = await createUser()
  const a = await postEntry(me, { title: 'a' })
  const b = await postEntry(me, { title: 'b' })
  await settled(me)
  const p0 = await pull(me, null)
  await api(`/api/journal/${a.id}`, { method: 'DELETE', token: me.token })
  const [t] = await sql`select user_id from private.sync_tombstones where table_name = 'journal_entries' and id = ${a.id}`
  assert.equal(t.user_id, me.id)
  // Age it past 90 days and prune (the hourly job's function).
  await sql`update private.sync_tombstones set deleted_at = now() - interval '91 days' where id = ${a.id}`
  const [run] = await sql`select private.prune_sync_tombstones() as r`
  assert.ok(run.r.pruned >= 1)
  const [log] = await sql`select succeeded from private.job_runs where job = 'sync-tombstones' order by id desc limit 1`
  assert.ok(log.succeeded >= 1)
  const p1 = await pull(me, p0.timestamp)
  assert.equal(p1.experimentalStrategy, 'replacement')
  assert.deepEqual(idsOf(p1, 'journal_entries'), { created: [], updated: [b.id], deleted: [] })
  const d = new Device(me)
  d.table('journal_entries').set(a.id, { id: a.id })
  d.applyPull(p1)
  assert.ok(!d.table('journal_entries').has(a.id), 'the replacement drops what the server no longer has')
  assertError(await push(me, p0.timestamp, { journal_entries: { updated: [{ id: b.id, title: 'x' }] } }), 409)
})

test('two devices edit offline, sync and converge; a same-field conflict is resolved by pull then push', async () => {
  const me = await createUser()
  const [phone, laptop] = [new Device(me), new Device(me)]
  await phone.sync()
  await laptop.sync()
  const id = crypto.randomUUID()
  phone.create('journal_entries', { id, title: 'Train', content: 'first draft', tags: '[]' })
  await phone.sync()
  await laptop.sync()
  assert.equal(laptop.table('journal_entries').get(id)?.content, 'first draft')

  phone.update('journal_entries', id, { title: 'Train to Lyon' })
  laptop.update('journal_entries', id, { title: 'Train (laptop)', content: 'second draft' })
  const replies = await laptop.sync(() => phone.sync())
  assert.deepEqual(replies.map((r) => r.status), [409, 200], 'refused once, then applied after a pull')
  await phone.sync()
  for (const d of [phone, laptop]) {
    const r = d.table('journal_entries').get(id)!
    assert.equal(r.title, 'Train (laptop)', 'the later device keeps the field it changed')
    assert.equal(r.content, 'second draft')
  }
  // A deletion on one device reaches the other.
  laptop.delete('journal_entries', id)
  await laptop.sync()
  await phone.sync()
  assert.ok(!phone.table('journal_entries').has(id))
  assert.equal(await entryCount(me), 0)
})

test("an id another user makes again never hides the owner's deletion, nor blocks the owner's devices", async () => {
  const [me, other] = [await createUser(), await createUser()]
  const e = await postEntry(me, { title: 'mine', mood: 'calm', metadata_visibility: 'public', content_visibility: 'public' })
  await settled(me)
  const p0 = await pull(me, null)
  await api(`/api/journal/${e.id}`, { method: 'DELETE', token: me.token })
  // Someone who saw the public id makes an entry with it.
  const taken = await api('/api/journal', { token: other.token, body: { id: e.id, title: 'taken', mood: 'calm' } })
  assert.equal(taken.status, 201, JSON.stringify(taken.body))
  // My device, behind, edited it offline: told to pull, then the pull brings the deletion.
  const stale = await push(me, p0.timestamp, { journal_entries: { updated: [{ id: e.id, title: 'edited offline' }] } })
  assertError(stale, 409, e.id)
  const p1 = await pullUntil(me, p0.timestamp, (a) => a.changes.journal_entries.deleted.length > 0)
  assert.deepEqual(idsOf(p1, 'journal_entries'), { created: [], updated: [], deleted: [e.id] })
  // A device that still pushes it after that is not stuck: the record is dropped, nothing written.
  const late = await push(me, p1.timestamp, { journal_entries: { updated: [{ id: e.id, title: 'again' }] } })
  assert.equal(late.status, 200, JSON.stringify(late.body))
  assert.equal(late.body.unchanged, 1)
  assert.equal((await sql`select title, user_id from public.journal_entries where id = ${e.id}`)[0].title, 'taken')
  // Their deletion is theirs: mine stays mine, and deleting their id from my device says nothing.
  const quiet = await push(me, p1.timestamp, { journal_entries: { deleted: [e.id] } })
  assert.equal(quiet.status, 200)
  assert.equal(await entryCount(other), 1)
  const [t] = await sql`select user_id from private.sync_tombstones where id = ${e.id}`
  assert.equal(t.user_id, me.id)
})

test('push limits and leniency: at most 2000 records; an empty user_id is the caller\'s own', async () => {
  const me = await createUser()
  await settled(me)
  const p = await pull(me, null)
  const many = Array.from({ length: 2001 }, () => crypto.randomUUID())
  assertError(await push(me, p.timestamp, { journal_entries: { deleted: many } }), 400, /2000/)
  const id = crypto.randomUUID()
  const res = await push(me, p.timestamp, { notebooks: { created: [{ id, name: 'n', user_id: '' }] } })
  assert.equal(res.status, 200, JSON.stringify(res.body))
  assert.equal((await sql`select user_id from public.notebooks where id = ${id}`)[0].user_id, me.id)
})

test('pull: one at a time per account (429 while another runs); refused inside an impersonation session', async () => {
  const me = await createUser()
  let release!: () => void
  const held = new Promise<void>((r) => release = r)
  let locked!: () => void
  const isLocked = new Promise<void>((r) => locked = r)
  const holder = sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(hashtext('sync pull'), hashtext(${me.id}))`
    locked()
    await held
  })
  await isLocked
  assertError(await api('/api/sync?last_pulled_at=null', { token: me.token }), 429, /under way/)
  release()
  await holder
  assert.equal((await api('/api/sync?last_pulled_at=null', { token: me.token })).status, 200)

  const admin = await createUser({ superAdmin: true })
  const session = await api('/api/admin/impersonation', { token: admin.token, body: { user_id: me.id, reason: 'Ticket 9: sync' } })
  assert.equal(session.status, 201, JSON.stringify(session.body))
  assertError(await api('/api/sync?last_pulled_at=null', { token: session.body.access_token }), 403, /impersonating/i)
})

test('a first pull counts as a write against the write rate limit; incremental pulls are free', async () => {
  const me = await createUser()
  await sql`insert into private.write_rate_limits (subject_kind, subject, max_writes, window_seconds)
            values ('user', ${me.id}, 2, 300)`
  try {
    const first = await pull(me, null)
    await pull(me, null)
    assertError(await api('/api/sync?last_pulled_at=null', { token: me.token }), 429)
    for (let i = 0; i < 3; i++) await pull(me, first.timestamp)
  } finally {
    await sql`delete from private.write_rate_limits where subject_kind = 'user' and subject = ${me.id}`
    await sql`delete from private.write_rate_counters where subject = ${'user:' + me.id}`
  }
})
