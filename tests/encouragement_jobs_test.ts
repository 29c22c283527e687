// The assistant's daily drop (generate-daily-drops) against the fake AI provider: who is due,
// what the model is sent, what is stored, token usage, a provider failure for one user, the
// one-per-day rule, chunks and batches. Note analysis (routes/chat/): chat_test.ts.
import { strict as assert } from 'node:assert'
import { aiMarker, aiRequests, scriptAi } from './fakes/ai_control.ts'
import { api, assertError, clientAs, createUser, sql, test, type TestUser } from './_helpers.ts'
import { analysis, drain, dropsCron, optIn, sum, usage } from './_ai_jobs.ts'

const ASSISTANT = 'a5515700-0000-4000-8000-000000000001'

const dailyDrops = () => drain('/api/encouragement-drops/cron/generate-daily-drops', dropsCron())

async function giveAnalysis(u: TestUser, summary: string) {
  const a = analysis(summary)
  await sql`insert into public.note_analyses (user_id, analysis_date, summary, mood_trends, topics, patterns, recommendations, insights, entry_count)
            values (${u.id}, current_date - 1, ${summary}, ${sql.json(a.mood_trends)}, ${
    sql.json(a.topics)
  }, ${sql.json(a.patterns)},
                    ${sql.json(a.recommendations)}, ${sql.json(a.insights)}, 3)`
}

test('generate-daily-drops: personalized from the latest analysis, generic without one, from the assistant, once a day', async () => {
  const marker = aiMarker()
  const [analysed, plain, halfway] = await Promise.all([createUser(), createUser(), createUser()])
  await optIn(analysed, true)
  await optIn(plain, true)
  await optIn(halfway, false)
  await sql`update public.profiles set full_name = 'Ana' where id = ${analysed.id}`
  await giveAnalysis(analysed, `Ana ran every morning ${marker}`)
  await giveAnalysis(halfway, `halfway ${marker}`)
  await scriptAi(marker, [{ json: { message: `Ana, your morning runs are paying off! ${marker}` } }])
  assertError(await api('/api/encouragement-drops/cron/generate-daily-drops', { method: 'POST' }), 401)

  const replies = await dailyDrops()
  assert.ok(sum(replies, 'generated') >= 2)
  assert.match(replies[0].message, /Generated \d+ of \d+ daily drops/)
  const sent = await aiRequests(marker)
  assert.equal(sent.length, 1, 'one AI call: the analysed user (the halfway user is not eligible)')
  assert.ok(JSON.stringify(sent[0].body.messages).includes('Ana ran every morning'))

  const inbox = await api('/api/encouragement-drops/received', { token: analysed.token })
  assert.equal(inbox.body.drops.length, 1)
  const drop = inbox.body.drops[0]
  assert.equal(drop.content, `Ana, your morning runs are paying off! ${marker}`)
  assert.equal(drop.sender_id, ASSISTANT)
  assert.equal(drop.sender_name, 'Hive Assistant')
  assert.match(drop.sender_avatar_url, /^https:\/\//)
  assert.equal(drop.is_system, true)
  assert.equal(drop.drop_type, 'encouragement')
  const generic = await api('/api/encouragement-drops/received', { token: plain.token })
  assert.equal(generic.body.drops.length, 1)
  assert.match(generic.body.drops[0].content, /Every entry you write/)
  assert.deepEqual((await api('/api/encouragement-drops/received', { token: halfway.token })).body.drops, [])
  assert.equal(await usage(analysed, 'assistant_drop'), 1)
  assert.equal(await usage(plain, 'assistant_drop'), 0, 'the generic message costs nothing')
  assert.equal(
    (await sql`select count(*)::int as n from public.encouragement_daily_drops where user_id = ${ASSISTANT}`)[
      0
    ].n,
    0,
    'assistant drops count against no allowance',
  )

  // Twice the same day: nothing new (the queue says done; the unique key would refuse anyway).
  await dailyDrops()
  assert.equal(
    (await sql`select count(*)::int as n from public.encouragement_sent_drops where recipient_id = ${analysed.id}`)[
      0
    ].n,
    1,
  )
  assert.equal((await aiRequests(marker)).length, 1)
  const service = await sql`select public.send_assistant_drop(${plain.id}, 'another') as sent`
  assert.equal(service[0].sent, false, 'a second assistant drop the same day is skipped')
})

test("generate-daily-drops: one user's provider failure is reported, the others get theirs; batches of 5, 1 s apart", async () => {
  const bad = aiMarker()
  const marker = aiMarker()
  const failing = await createUser()
  await optIn(failing, true)
  await giveAnalysis(failing, `bad ${bad}`)
  await scriptAi(bad, [{ status: 400, error: { message: 'invalid request' } }])
  const batch = await Promise.all(Array.from({ length: 7 }, () => createUser()))
  for (const u of batch) {
    await optIn(u, true)
    await giveAnalysis(u, `batched ${marker}`)
  }
  await scriptAi(marker, [{ json: { message: `hello ${marker}` } }])
  const replies = await dailyDrops()
  assert.ok(sum(replies, 'total') >= 8)
  assert.ok(sum(replies, 'failed') >= 1)
  const errors: string[] = replies.flatMap((r: any) => r.results.errors)
  assert.ok(errors.some((e) => e.startsWith(failing.id)), JSON.stringify(errors))
  assert.deepEqual((await api('/api/encouragement-drops/received', { token: failing.token })).body.drops, [])
  for (const u of batch) {
    const got = await api('/api/encouragement-drops/received', { token: u.token })
    assert.equal(got.body.drops[0]?.content, `hello ${marker}`)
  }
  // Seven users cannot share one batch of five: their calls span at least one 1 s pause.
  const times = (await aiRequests(marker)).map((r) => Date.parse(r.at)).sort((a, b) => a - b)
  assert.equal(times.length, 7)
  assert.ok(times[6] - times[0] >= 950, `calls spread over ${times[6] - times[0]} ms`)
})

test('claims are bounded chunks: concurrent claims get disjoint users and report what remains', async () => {
  const users = await Promise.all(Array.from({ length: 5 }, () => createUser()))
  for (const u of users) await optIn(u, true)
  const ids = new Set(users.map((u) => u.id))
  const claim = () =>
    sql`select public.claim_ai_job_chunk('generate-daily-drops', 2) as r`.then((rows) => rows[0].r)
  const [a, b] = await Promise.all([claim(), claim()])
  const mine = (r: any) => r.users.map((u: any) => u.user_id).filter((id: string) => ids.has(id))
  assert.ok(a.users.length <= 2 && b.users.length <= 2, 'never more than the chunk')
  const claimed = [...mine(a), ...mine(b)]
  assert.equal(new Set(claimed).size, claimed.length, 'no user is claimed twice')
  assert.ok(a.remaining >= 1 && b.remaining >= 1)
  const outsider = await createUser()
  const { error } = await clientAs(outsider.token).rpc('claim_ai_job_chunk', {
    job_name: 'generate-daily-drops',
    chunk_size: 5,
  })
  assert.equal(error?.code, '42501', 'users cannot claim job chunks through PostgREST')
  // Finish what was claimed (as a worker would), then the endpoint drains the rest.
  for (const r of [a, b]) {
    for (const u of r.users) await sql`select public.send_assistant_drop(${u.user_id}, 'hello')`
  }
  const replies = await dailyDrops()
  assert.equal(replies[replies.length - 1].results.remaining, 0)
  const got =
    await sql`select count(*)::int as n from public.encouragement_sent_drops where is_system and recipient_id in ${
      sql([...ids])
    }`
  assert.equal(got[0].n, 5, 'each user got exactly one drop')
})

test('the pg_cron continuation calls the job through net while users wait unclaimed, and the job drains them', async () => {
  const waiting = await createUser()
  await optIn(waiting, true)
  const path = '/api/encouragement-drops/cron/generate-daily-drops'
  await sql`insert into private.ai_job_queue (job, day, user_id, queued_at)
            values ('generate-daily-drops', (now() at time zone 'UTC')::date, ${waiting.id}, now() - interval '2 minutes')`
  const [{ called }] =
    await sql`select private.continue_ai_job('generate-daily-drops', ${path}, 'DROPS_CRON_SECRET') as called`
  assert.equal(called, true)
  let drops = 0
  for (let i = 0; i < 100 && drops === 0; i++) {
    ;[{ n: drops }] =
      await sql`select count(*)::int as n from public.encouragement_sent_drops where recipient_id = ${waiting.id} and is_system`
    if (drops === 0) await new Promise((r) => setTimeout(r, 100))
  }
  assert.equal(drops, 1, 'the continuation reached the function, which sent the drop')
  const [{ again }] =
    await sql`select private.continue_ai_job('generate-daily-drops', ${path}, 'DROPS_CRON_SECRET') as again`
  assert.equal(again, false, 'nothing left: no call')
})
