// /api/chat (routes/chat/): the note-analysis job (analyze-notes) against the fake AI
// provider: who is due, what the model is sent, what is stored, token usage, a provider failure
// for one user, the one-per-day rule; and the latest analysis a user reads.
import { strict as assert } from 'node:assert'
import { aiMarker, aiRequests, scriptAi } from './fakes/ai_control.ts'
import { api, assertError, createUser, env, sql, test, type TestUser } from './_helpers.ts'
import { analysis, drain, dropsCron, optIn, sum, usage } from './_ai_jobs.ts'

const chatCron = () => ({ 'x-cron-secret': env('CHAT_CRON_SECRET') })

const analyze = () => drain('/api/chat/cron/analyze-notes', chatCron())

async function entries(u: TestUser, n: number, text: string, ageHours = 1) {
  await sql`insert into public.journal_entries (id, user_id, title, created_at)
            select gen_random_uuid(), ${u.id}, 'Day ' || i, now() - make_interval(hours => ${ageHours}) - make_interval(mins => i)
              from generate_series(1, ${n}) i`
  await sql`insert into public.journal_entry_contents (entry_id, user_id, content)
            select e.id, e.user_id, ${text} || ' #' || e.title from public.journal_entries e
             where e.user_id = ${u.id} and not exists (select 1 from public.journal_entry_contents c where c.entry_id = e.id)`
}

test('analyze-notes: refuses a wrong secret; analyses opted-in users with recent entries (7 days, at most 50), once a day', async () => {
  assertError(
    await api('/api/chat/cron/analyze-notes', { method: 'POST', headers: { 'x-cron-secret': 'wrong' } }),
    401,
  )
  assertError(
    await api('/api/chat/cron/analyze-notes', { method: 'POST', headers: dropsCron() }),
    401,
    'x-cron-secret',
  )
  const marker = aiMarker()
  const [writer, quiet, privateUser] = await Promise.all([createUser(), createUser(), createUser()])
  await optIn(writer)
  await optIn(quiet)
  await entries(writer, 52, `ran today ${marker}`)
  await entries(writer, 1, `OLD ${marker}`, 24 * 8)
  await entries(quiet, 1, 'long ago', 24 * 9)
  await entries(privateUser, 2, `not opted in ${marker}`)
  await scriptAi(marker, [{ json: analysis(`You ran a lot ${marker}`) }])

  const replies = await analyze()
  assert.equal(replies[0].success, true)
  assert.match(replies[0].message, /Analysed \d+ of \d+ users/)
  const sent = await aiRequests(marker)
  assert.equal(sent.length, 1, 'one call, for the writer only')
  const prompt = sent[0].body.messages.map((m: any) => m.content).join('\n')
  assert.equal((prompt.match(/^Entry \d+ /gm) ?? []).length, 50, 'at most 50 entries are read')
  assert.ok(!prompt.includes('OLD'), 'entries older than 7 days are not read')
  assert.equal(sent[0].body.response_format.type, 'json_schema')

  const latest = await api('/api/chat/analysis/latest', { token: writer.token })
  assert.equal(latest.status, 200)
  assert.equal(latest.body.analysis.summary, `You ran a lot ${marker}`)
  assert.equal(latest.body.analysis.entry_count, 50)
  assert.deepEqual(latest.body.analysis.insights.achievements, ['5k done'])
  assert.equal(latest.body.analysis.analysis_date, new Date().toISOString().slice(0, 10))
  assert.equal(await usage(writer, 'note_analysis'), 1, 'token use recorded')
  assert.deepEqual(
    (await api('/api/chat/analysis/latest', { token: quiet.token })).body,
    { analysis: null },
    'no recent entries: skipped',
  )
  assert.deepEqual((await api('/api/chat/analysis/latest', { token: privateUser.token })).body, {
    analysis: null,
  }, 'not opted in')
  assert.deepEqual((await api('/api/chat/analysis/latest', { token: quiet.token })).body, { analysis: null })
  assertError(await api('/api/chat/analysis/latest'), 401)

  // A second run the same day analyses nobody again.
  await analyze()
  assert.equal((await aiRequests(marker)).length, 1)
  assert.equal(
    (await sql`select count(*)::int as n from public.note_analyses where user_id = ${writer.id}`)[0].n,
    1,
  )
})

test('analyze-notes: a provider failure for one user is reported in results.errors and does not stop the run', async () => {
  const bad = aiMarker()
  const good = aiMarker()
  const [failing, fine] = await Promise.all([createUser(), createUser()])
  await optIn(failing)
  await optIn(fine)
  await entries(failing, 2, `bad day ${bad}`)
  await entries(fine, 2, `good day ${good}`)
  await scriptAi(bad, [{ status: 500, error: { message: 'upstream exploded' } }])
  await scriptAi(good, [{ json: analysis(`fine ${good}`) }])
  const replies = await analyze()
  assert.ok(sum(replies, 'failed') >= 1)
  const errors: string[] = replies.flatMap((r: any) => r.results.errors)
  assert.ok(errors.some((e) => e.startsWith(failing.id) && /500/.test(e)), JSON.stringify(errors))
  assert.ok(replies.every((r: any) => r.success === true))
  assert.equal(
    (await api('/api/chat/analysis/latest', { token: fine.token })).body.analysis.summary,
    `fine ${good}`,
  )
  assert.equal((await api('/api/chat/analysis/latest', { token: failing.token })).body.analysis, null)
  // Not retried the same day (a later run has nothing due for that user).
  const before = (await aiRequests(bad)).length
  await analyze()
  assert.equal((await aiRequests(bad)).length, before)
})
