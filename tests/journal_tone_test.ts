// Tone analysis as a queued job (supabase/schemas/journal/tone_queue.sql, docs/ai.md): every
// write path queues the text, the worker sets the mood later, the owner sees it arrive through
// Realtime. The fake model (tests/fakes/ai.ts) is steered by a marker in each entry's text.
import { strict as assert } from 'node:assert'
import { api, clientAs, createUser, env, sql, test, type TestUser } from './_helpers.ts'
import { closeAll, listen, realtimeClient, until } from './_realtime.ts'
import { toneSettled } from './_tone.ts'
import { aiMarker, aiRequests, type Reply, scriptAi } from './fakes/ai_control.ts'

const tone = (primaryTone: string, confidence = 0.9, delay_ms = 0): Reply => ({
  json: { primaryTone, tones: [{ tone: primaryTone, score: confidence }], confidence },
  usage: { prompt_tokens: 100, completion_tokens: 10 },
  ...(delay_ms ? { delay_ms } : {}),
})

async function scripted(...replies: Reply[]) {
  const marker = aiMarker()
  await scriptAi(marker, replies)
  return marker
}

const rpcEntry = (user: TestUser, args: Record<string, unknown>) =>
  clientAs(user.token).rpc('create_journal_entry', { title: 'A day', ...args }).select('*, mood_pending').single()

const usageCount = async (entryId: string) =>
  (await sql`select count(*)::int as n from public.ai_usage where entry_id = ${entryId}`)[0].n

test('supabase-js rpc(create_journal_entry) without a mood: answers with mood_pending, then the model sets the mood', async () => {
  const user = await createUser()
  const marker = await scripted(tone('grateful'))
  const { data, error } = await rpcEntry(user, { content: `Thankful. ${marker}` })
  assert.equal(error, null, JSON.stringify(error))
  const entry = data as any
  assert.equal(entry.mood, null)
  assert.equal(entry.mood_pending, true)
  const settled = await toneSettled(entry.id)
  assert.deepEqual([settled.mood, settled.moodDetected], ['grateful', true])
  assert.equal(await usageCount(entry.id), 1)
  // The next read has it, and nothing is pending any more.
  const { data: read } = await clientAs(user.token).from('journal_entry_details').select('mood, mood_pending')
    .eq('id', entry.id).single()
  assert.deepEqual(read, { mood: 'grateful', mood_pending: false })
  // With a mood: nothing queued, nothing asked.
  const chosen = await scripted(tone('sad'))
  const withMood = await rpcEntry(user, { content: `x ${chosen}`, mood: 'proud' })
  assert.equal((withMood.data as any).mood_pending, false)
  assert.deepEqual(await aiRequests(chosen), [])
})

test('direct PostgREST writes (insert, then a text change) are analysed too', async () => {
  const user = await createUser()
  const marker = await scripted(tone('calm'), tone('angry'))
  const db = clientAs(user.token)
  const { data: row } = await db.from('journal_entries').insert({ title: 'Direct' }).select('id').single()
  const id = (row as any).id
  assert.equal((await db.from('journal_entry_contents').insert({ entry_id: id, content: `Still. ${marker}` })).error, null)
  assert.equal((await toneSettled(id)).mood, 'calm')
  await db.from('journal_entry_contents').update({ content: `Furious now. ${marker}` }).eq('entry_id', id)
  assert.equal((await toneSettled(id)).mood, 'angry', 'a detected mood follows a changed text')
  assert.equal((await aiRequests(marker)).length, 2)
})

test('POST /api/journal answers without waiting for the model; the mood arrives later', async () => {
  const user = await createUser()
  const marker = await scripted(tone('hopeful', 0.9, 1500))
  const started = Date.now()
  const res = await api('/api/journal', { token: user.token, body: { title: 'Soon', content: `Maybe. ${marker}` } })
  const writeMs = Date.now() - started
  assert.equal(res.status, 201)
  assert.equal(res.body.entry.mood, null)
  assert.equal(res.body.entry.mood_pending, true)
  assert.ok(writeMs < 1000, `the write took ${writeMs} ms: it waited for the 1.5 s model`)
  assert.equal((await toneSettled(res.body.entry.id)).mood, 'hopeful')
})

test('a mood the user chooses while the analysis runs is kept (and the call still recorded)', async () => {
  const user = await createUser()
  const marker = await scripted(tone('sad', 0.95, 1500))
  const res = await api('/api/journal', { token: user.token, body: { title: 'T', content: `Meh. ${marker}` } })
  const id = res.body.entry.id
  const deadline = Date.now() + 10_000
  while ((await aiRequests(marker)).length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25))
  assert.equal((await aiRequests(marker)).length, 1, 'the analysis is under way')
  const put = await api(`/api/journal/${id}`, { method: 'PUT', token: user.token, body: { mood: 'Proud' } })
  assert.equal(put.status, 200)
  const settled = await toneSettled(id)
  assert.deepEqual([settled.mood, settled.moodDetected], ['proud', false])
  assert.equal(await usageCount(id), 1, 'the billed call is recorded even though its mood was not used')
})

test('text changed while the analysis runs: the newer text is analysed again, its mood wins', async () => {
  const user = await createUser()
  const marker = await scripted(tone('sad', 0.95, 1200), tone('joyful'))
  const res = await api('/api/journal', { token: user.token, body: { title: 'T', content: `One. ${marker}` } })
  const id = res.body.entry.id
  const deadline = Date.now() + 10_000
  while ((await aiRequests(marker)).length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25))
  const put = await api(`/api/journal/${id}`, { method: 'PUT', token: user.token, body: { content: `Two. ${marker}` } })
  assert.equal(put.body.entry.mood_pending, true)
  const settled = await toneSettled(id)
  assert.equal(settled.mood, 'joyful')
  assert.equal((await aiRequests(marker)).length, 2, 'each text version analysed once')
})

test('a failing model leaves the mood null and the entry saved, silently; the unbilled call is given back', async () => {
  const user = await createUser()
  const marker = await scripted({ status: 500 }, { status: 500 })
  const res = await api('/api/journal', { token: user.token, body: { title: 'T', content: `x ${marker}` } })
  assert.equal(res.status, 201)
  assert.equal((await toneSettled(res.body.entry.id)).mood, null)
  const read = await api(`/api/journal/${res.body.entry.id}`, { token: user.token })
  assert.equal(read.body.entry.content, `x ${marker}`)
  const [{ calls }] = await sql`select coalesce(sum(calls), 0)::int as calls from private.ai_daily_calls
                                 where user_id = ${user.id} and usage_type = 'tone_analysis'`
  assert.equal(calls, 0)
})

test('the daily cap holds across paths: RPC, /api and direct writes share one counter', async () => {
  const user = await createUser()
  const [{ cap }] =
    await sql`select daily_cap_per_user as cap from private.ai_usage_types where usage_type = 'tone_analysis'`
  await sql`insert into private.ai_daily_calls (user_id, day, usage_type, calls)
            values (${user.id}, (now() at time zone 'UTC')::date, 'tone_analysis', ${cap - 1})`
  const last = await scripted(tone('joyful'))
  const viaRpc = (await rpcEntry(user, { content: `a ${last}` })).data as any
  assert.equal((await toneSettled(viaRpc.id)).mood, 'joyful', 'the last call under the cap runs')
  const over = await scripted(tone('joyful'))
  const viaApi = await api('/api/journal', { token: user.token, body: { title: 'T', content: `b ${over}` } })
  assert.equal((await toneSettled(viaApi.body.entry.id)).mood, null)
  const db = clientAs(user.token)
  const { data: row } = await db.from('journal_entries').insert({ title: 'Direct' }).select('id').single()
  await db.from('journal_entry_contents').insert({ entry_id: (row as any).id, content: `c ${over}` })
  assert.equal((await toneSettled((row as any).id)).mood, null)
  assert.deepEqual(await aiRequests(over), [], 'over the cap the provider is not called')
  const [{ calls }] = await sql`select calls from private.ai_daily_calls
                                 where user_id = ${user.id} and usage_type = 'tone_analysis'`
  assert.equal(calls, cap)
})

test('one request to the worker for a burst of writes; the queue keeps one row per entry', async () => {
  const user = await createUser()
  await sql.begin(async (tx) => {
    await tx`update private.tone_worker set requested_at = null`
    // As the user's request would run it (PostgREST: claims, then the authenticated role).
    await tx`select set_config('request.jwt.claims', ${JSON.stringify({ sub: user.id, role: 'authenticated' })}, true)`
    const before = (await tx`select count(*)::int as n from net.http_request_queue where url like '%/analyze-tone'`)[0].n
    const ids = await tx`insert into public.journal_entries (user_id, title)
                         select ${user.id}, 'burst ' || i from generate_series(1, 200) i returning id`
    await tx`insert into public.journal_entry_contents (entry_id, user_id, content)
             select id, ${user.id}, 'burst text' from unnest(${ids.map((r) => r.id)}::uuid[]) id`
    await tx`update public.journal_entry_contents set content = 'burst text, edited' where user_id = ${user.id}`
    const after = (await tx`select count(*)::int as n from net.http_request_queue where url like '%/analyze-tone'`)[0].n
    assert.equal(after - before, 1, '400 queued writes, one request')
    const [{ rows, versions }] = await tx`select count(*)::int as rows, min(version) as versions
                                           from private.tone_analysis_queue q join public.journal_entries e on e.id = q.entry_id
                                          where e.user_id = ${user.id}`
    assert.deepEqual([rows, versions], [200, 2], 'the edit replaced each queued version')
    throw new Error('rollback')
  }).catch((e) => {
    if (e.message !== 'rollback') throw e
  })
})

test("a killed worker's claim expires and its entry is analysed by the next run", async () => {
  const user = await createUser()
  const marker = await scripted(tone('content'), tone('tired'))
  const res = await api('/api/journal', { token: user.token, body: { title: 'T', content: `z ${marker}` } })
  const id = res.body.entry.id
  assert.equal((await toneSettled(id)).mood, 'content')
  // A run that claimed the entry and died 2 minutes ago.
  await sql`insert into private.tone_analysis_queue (entry_id, claimed_at, attempts)
            values (${id}, now() - interval '2 minutes', 1)`
  const run = await api('/api/journal/cron/analyze-tone', {
    headers: { 'x-cron-secret': env('CHAT_CRON_SECRET') },
    body: { scheduled_at: new Date().toISOString(), invocation: 1 },
  })
  assert.equal(run.status, 200, JSON.stringify(run.body))
  assert.equal((await toneSettled(id)).mood, 'tired')
  assert.equal(
    (await api('/api/journal/cron/analyze-tone', { body: {} })).status,
    401,
    'the worker needs the cron secret',
  )
})

test('Realtime: the owner sees the mood arrive; another user, even filtering on the owner, sees nothing', async () => {
  const owner = await createUser()
  const stranger = await createUser()
  const ownerClient = realtimeClient(owner.token)
  const strangerClient = realtimeClient(stranger.token)
  try {
    const mine = await listen(ownerClient, { event: 'UPDATE', table: 'journal_entries', filter: `user_id=eq.${owner.id}` })
    const theirs = await listen(strangerClient, { table: 'journal_entries', filter: `user_id=eq.${owner.id}` })
    const everything = await listen(strangerClient, { table: 'journal_entries' })
    for (const l of [mine, theirs, everything]) assert.deepEqual(l.errors, [], JSON.stringify(l.system))
    const marker = await scripted(tone('excited'))
    const res = await api('/api/journal', { token: owner.token, body: { title: 'Live', content: `Wow. ${marker}` } })
    await until(() => mine.changes.some((c) => c.new?.id === res.body.entry.id && c.new?.mood === 'excited'), 'the mood')
    const change = mine.changes.find((c) => c.new?.mood === 'excited')
    assert.equal(change.new.mood_detected, true)
    assert.ok(!('content' in change.new), 'no change carries the text (it lives in journal_entry_contents)')
    // The stranger's own write arrives: everything before it had its chance to.
    const own = await api('/api/journal', { token: stranger.token, body: { title: 'Mine', mood: 'calm' } })
    await until(() => everything.changes.some((c) => c.new?.id === own.body.entry.id), "the stranger's own entry")
    assert.deepEqual(theirs.changes, [])
    assert.ok(everything.changes.every((c) => c.new?.user_id === stranger.id), JSON.stringify(everything.changes))
  } finally {
    await closeAll(ownerClient, strangerClient)
  }
})

test("a project whose Vault lacks the worker's URL or secret still saves entries: the request is skipped, never the write", async () => {
  const user = await createUser()
  await sql`update vault.secrets set name = name || '_moved' where name in ('project_url', 'CHAT_CRON_SECRET')`
  await sql`update private.tone_worker set requested_at = null where id`
  try {
    const res = await api('/api/journal', { token: user.token, body: { title: 'No vault', content: 'Plain words.' } })
    assert.equal(res.status, 201, JSON.stringify(res.body))
    const direct = await clientAs(user.token).rpc('create_journal_entry', { title: 'Again', content: 'More words.' })
    assert.equal(direct.error, null)
  } finally {
    await sql`update vault.secrets set name = left(name, -6) where name in ('project_url_moved', 'CHAT_CRON_SECRET_moved')`
    // The mark was set without a worker on its way: cleared, so the next write asks for one.
    await sql`update private.tone_worker set requested_at = null where id`
  }
})

test('mood_pending called as an RPC with a made-up row tells nothing of another user’s entry', async () => {
  const [owner, other] = await Promise.all([createUser(), createUser()])
  const marker = await scripted(tone('calm', 0.9, 1500))
  const res = await api('/api/journal', { token: owner.token, body: { title: 'Mine', content: `Quiet. ${marker}` } })
  assert.equal(res.body.entry.mood_pending, true)
  const entry = { id: res.body.entry.id, user_id: other.id }
  const asOther = await clientAs(other.token).rpc('mood_pending', { entry })
  assert.equal(asOther.error, null)
  assert.equal(asOther.data, false, 'the queue is not told to someone who claims to own the entry')
  const asOwner = await clientAs(owner.token).rpc('mood_pending', { entry: { ...entry, user_id: owner.id } })
  assert.equal(asOwner.data, true)
  await toneSettled(res.body.entry.id)
})

/** Runs fn in a transaction as the user's PostgREST request would (claims, then rolled back). */
async function asUserRolledBack(user: TestUser, fn: (tx: any) => Promise<void>) {
  await sql.begin(async (tx) => {
    await tx`select set_config('request.jwt.claims', ${JSON.stringify({ sub: user.id, role: 'authenticated' })}, true)`
    await fn(tx)
    throw new Error('rollback')
  }).catch((e) => {
    if (e.message !== 'rollback') throw e
  })
}
const workerRequests = async (tx: any) =>
  (await tx`select count(*)::int as n from net.http_request_queue where url like '%/analyze-tone'`)[0].n
const toneRuns = async () =>
  (await sql`select count(*)::int as n from private.job_runs where job = 'journal-tone-analysis'`)[0].n

test('over the daily cap a write queues nothing and asks for no worker; under it, unchanged', async () => {
  const [capped, free] = await Promise.all([createUser(), createUser()])
  const [{ cap }] = await sql`select coalesce(w.daily_cap, t.daily_cap_per_user) as cap
                                from private.ai_usage_types t, private.tone_worker w where t.usage_type = 'tone_analysis'`
  await sql`insert into private.ai_daily_calls (user_id, day, usage_type, calls)
            values (${capped.id}, (now() at time zone 'UTC')::date, 'tone_analysis', ${cap})`
  for (const [user, expected] of [[capped, 0], [free, 1]] as const) {
    await asUserRolledBack(user, async (tx) => {
      await tx`update private.tone_worker set requested_at = null`
      const before = await workerRequests(tx)
      const [{ id }] = await tx`insert into public.journal_entries (user_id, title) values (${user.id}, 'T') returning id`
      await tx`insert into public.journal_entry_contents (entry_id, user_id, content) values (${id}, ${user.id}, 'words')`
      const [{ queued }] = await tx`select count(*)::int as queued from private.tone_analysis_queue where entry_id = ${id}`
      assert.deepEqual([queued, (await workerRequests(tx)) - before], [expected, expected], user === capped ? 'capped' : 'free')
    })
  }
  // Through /api: nothing pending, no model call, no logged run.
  const runs = await toneRuns()
  const marker = await scripted(tone('joyful'))
  const res = await api('/api/journal', { token: capped.token, body: { title: 'T', content: `over ${marker}` } })
  assert.equal(res.status, 201)
  assert.equal(res.body.entry.mood_pending, false)
  await new Promise((r) => setTimeout(r, 300))
  assert.deepEqual(await aiRequests(marker), [])
  assert.equal(await toneRuns(), runs, 'no worker run was logged')
})

test('a worker run that found nothing to do logs no run; one that analysed logs one', async () => {
  const user = await createUser()
  const run = () =>
    api('/api/journal/cron/analyze-tone', {
      headers: { 'x-cron-secret': env('CHAT_CRON_SECRET') },
      body: { scheduled_at: new Date().toISOString(), invocation: 1 },
    })
  const before = await toneRuns()
  const idle = await run()
  assert.equal(idle.status, 200, JSON.stringify(idle.body))
  assert.equal(idle.body.analysed, 0)
  assert.equal(await toneRuns(), before, 'an idle run writes no job_runs row')
  const marker = await scripted(tone('calm'))
  const res = await api('/api/journal', { token: user.token, body: { title: 'T', content: `Calm. ${marker}` } })
  assert.equal((await toneSettled(res.body.entry.id)).mood, 'calm')
  const deadline = Date.now() + 5000
  while ((await toneRuns()) === before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
  assert.equal(await toneRuns(), before + 1, 'the run that analysed is logged')
})

test('writes ask for a worker at most once per min_request_gap: a run stays until the gap has passed', async () => {
  const user = await createUser()
  await asUserRolledBack(user, async (tx) => {
    // A write just asked for a worker, which found the queue empty: it does not end yet.
    await tx`update private.tone_worker set requested_at = now(), last_requested_at = clock_timestamp(), min_request_gap = '10 seconds'`
    assert.equal((await tx`select private.release_tone_worker(false) as more`)[0].more, true, 'stays within the gap')
    const [{ marked }] = await tx`select requested_at is not null as marked from private.tone_worker`
    assert.equal(marked, true, 'the mark stays set, so writes meanwhile ask for nothing')
    const before = await workerRequests(tx)
    const [{ id }] = await tx`insert into public.journal_entries (user_id, title) values (${user.id}, 'T') returning id`
    await tx`insert into public.journal_entry_contents (entry_id, user_id, content) values (${id}, ${user.id}, 'words')`
    assert.equal((await workerRequests(tx)) - before, 0, 'the lingering run takes it')
    await tx`delete from private.tone_analysis_queue where entry_id = ${id}`
    // Past the gap the run ends and clears the mark: the next write asks again.
    await tx`update private.tone_worker set last_requested_at = clock_timestamp() - interval '11 seconds'`
    assert.equal((await tx`select private.release_tone_worker(false) as more`)[0].more, false)
    const [{ id: next }] = await tx`insert into public.journal_entries (user_id, title) values (${user.id}, 'U') returning id`
    await tx`insert into public.journal_entry_contents (entry_id, user_id, content) values (${next}, ${user.id}, 'more words')`
    assert.equal((await workerRequests(tx)) - before, 1)
  })
  // End to end: a write right after another's mood arrived is analysed by the lingering run,
  // well before pg_cron's minute.
  const marker = await scripted(tone('calm'), tone('hopeful'))
  const first = await api('/api/journal', { token: user.token, body: { title: 'A', content: `One. ${marker}` } })
  assert.equal((await toneSettled(first.body.entry.id)).mood, 'calm')
  const second = await api('/api/journal', { token: user.token, body: { title: 'B', content: `Two. ${marker}` } })
  const settled = await toneSettled(second.body.entry.id, 5000)
  assert.equal(settled.mood, 'hopeful')
})
