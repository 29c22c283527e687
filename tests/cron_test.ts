// The shared cron-secret rules (SPEC "Authentication" table) and pg_cron -> net -> function.
import { strict as assert } from 'node:assert'
import { checkCronSecret, type CronGroup, secretsEqual } from '../functions/_shared/cron.ts'
import { API_URL, createUser, env, sql, test } from './_helpers.ts'

const envOf = (vars: Record<string, string>) => (k: string) => vars[k]
const accepts = (group: CronGroup, vars: Record<string, string>, given: string) =>
  checkCronSecret(group, given, envOf(vars)).ok

test('each group accepts exactly the variables SPEC lists', () => {
  const all = {
    WORKOUT_WINDOW_CRON_SECRET: 'ww',
    CHAT_CRON_SECRET: 'chat',
    DROPS_CRON_SECRET: 'drops',
    MUSIC_SYNC_CRON_SECRET: 'music',
    LABS_CRON_SECRET: 'labs',
    ENCOURAGEMENT_DROPS_CRON_SECRET: 'enc',
  }
  const table: [CronGroup, string[]][] = [
    ['workout-window', ['ww']],
    ['chat', ['chat']], // CHAT_CRON_SECRET wins when set: WORKOUT_WINDOW is only its fallback
    ['encouragement-drops', ['drops', 'ww', 'chat']],
    ['encouragement-drops/process-engagement', ['enc', 'drops', 'ww', 'chat']],
    ['drops', ['drops']],
    ['music', ['music']],
    ['labs', ['labs', 'ww']],
  ]
  for (const [group, ok] of table) {
    for (const given of Object.values(all)) {
      assert.equal(accepts(group, all, given), ok.includes(given), `${group} with ${given}`)
    }
    assert.equal(accepts(group, all, ''), false)
    assert.equal(accepts(group, all, 'nope'), false)
  }
})

test('chat falls back to WORKOUT_WINDOW_CRON_SECRET only when CHAT_CRON_SECRET is unset', () => {
  assert.equal(accepts('chat', { WORKOUT_WINDOW_CRON_SECRET: 'ww' }, 'ww'), true)
  assert.equal(accepts('chat', { WORKOUT_WINDOW_CRON_SECRET: 'ww', CHAT_CRON_SECRET: 'c' }, 'ww'), false)
})

test('an unset secret never opens an endpoint', () => {
  const none = checkCronSecret('drops', 'anything', envOf({}))
  assert.deepEqual(none, {
    ok: false,
    reason: 'not-configured',
    optional: true,
    variables: ['DROPS_CRON_SECRET'],
  })
  const required = checkCronSecret('music', '', envOf({}))
  assert.equal(required.ok, false)
  assert.equal(!required.ok && required.reason === 'not-configured' && required.optional, false)
  // An empty header never matches, even against an empty configured value.
  assert.equal(accepts('drops', { DROPS_CRON_SECRET: 'x' }, ''), false)
})

test('secret comparison is exact', () => {
  assert.equal(secretsEqual('abc', 'abc'), true)
  assert.equal(secretsEqual('abc', 'abd'), false)
  assert.equal(secretsEqual('abc', 'abcd'), false)
  assert.equal(secretsEqual('', 'a'), false)
})

test('a pg_cron job made by schedule_edge_function_job reaches the function through net', async () => {
  const user = await createUser()
  const jobName = `test-award-${crypto.randomUUID().slice(0, 8)}`
  await sql`select private.schedule_edge_function_job(${jobName}, '0 0 1 1 *', '/api/drops/cron/award-monthly-all', 'DROPS_CRON_SECRET')`
  try {
    const [job] = await sql`select command, schedule from cron.job where jobname = ${jobName}`
    assert.equal(job.schedule, '0 0 1 1 *')
    // Run the job's command as pg_cron would, then wait for the gateway to send it.
    const [queued] = await sql.unsafe(job.command)
    const id = Number(Object.values(queued)[0])
    let response
    for (let i = 0; i < 100 && !response; i++) {
      ;[response] = await sql`select status_code, content from net._http_response where id = ${id}`
      if (!response) await new Promise((r) => setTimeout(r, 100))
    }
    assert.ok(response, 'the queued request was never sent')
    assert.equal(response.status_code, 200, response.content)
    assert.equal(JSON.parse(response.content).success, true)
    const [award] = await sql`select amount from public.monthly_drop_awards where user_id = ${user.id}`
    assert.equal(award.amount, 30)
  } finally {
    await sql`select cron.unschedule(${jobName})`
  }
})

test('the monthly award job is scheduled for midnight on the 1st (and 00:30), calling the chunked endpoint', async () => {
  const jobs =
    await sql`select jobname, schedule, command from cron.job where jobname like 'award-monthly-drops%' order by jobname`
  assert.deepEqual(jobs.map((j) => [j.jobname, j.schedule]), [['award-monthly-drops', '0 0 1 * *'], [
    'award-monthly-drops-again',
    '30 0 1 * *',
  ]])
  for (const job of jobs) {
    assert.match(job.command, /\/api\/drops\/cron\/award-monthly-all/)
    assert.match(job.command, /DROPS_CRON_SECRET/)
  }
  assert.ok(env('DROPS_CRON_SECRET'))
})

test('pg_cron itself runs a scheduled edge-function job: scheduler -> net queue -> gateway -> function', async () => {
  const jobName = `test-every-minute-${crypto.randomUUID().slice(0, 8)}`
  const [{ since }] = await sql`select now() as since`
  const [{ jobid }] = await sql`select private.schedule_edge_function_job(${jobName}, '* * * * *',
                                  '/api/drops/cron/award-monthly-all', 'DROPS_CRON_SECRET') as jobid`
  try {
    // pg_cron 1.4 schedules by the minute: wait for the next one to come round.
    let run, response
    for (let i = 0; i < 150 && !(run && response); i++) {
      ;[run] = await sql`select status, return_message from cron.job_run_details
                         where jobid = ${jobid} and start_time >= ${since} order by start_time desc limit 1`
      ;[response] = await sql`select status_code, content from net._http_response
                              where created >= ${since} and content like '%"awarded"%' order by created desc limit 1`
      if (!(run && response)) await new Promise((r) => setTimeout(r, 500))
    }
    assert.ok(run, 'pg_cron never ran the job')
    assert.equal(run.status, 'succeeded', run.return_message)
    assert.ok(response, "the job's request never reached the function")
    assert.equal(response.status_code, 200, response.content)
    assert.equal(JSON.parse(response.content).success, true)
  } finally {
    await sql`select cron.unschedule(${jobName})`
  }
})

test('every edge-function job sends a body its endpoint accepts (no 400 for pg_cron’s own fields)', async () => {
  const doc = await (await fetch(`${API_URL}/functions/v1/api/openapi.json`)).json()
  const resolve = (s: any): any => (s?.$ref ? doc.components.schemas[s.$ref.split('/').pop()] : s)
  const jobs = await sql`select jobname, command from cron.job where command like '%net.http_post%' order by jobname`
  assert.ok(jobs.length >= 8, `edge jobs: ${jobs.map((j) => j.jobname)}`)
  const refused: string[] = []
  for (const job of jobs) {
    const path = job.command.match(/'(?:\/functions\/v1)?(\/api\/[^']*)'/)?.[1]
    assert.ok(path, `${job.jobname}: no /api path in ${job.command}`)
    const entry = Object.entries<any>(doc.paths).find(([template]) =>
      new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`).test(path.endsWith('/') ? `${path}x` : path)
    )
    assert.ok(entry?.[1].post, `${job.jobname}: ${path} is no POST route of the API`)
    const schema = resolve(entry[1].post.requestBody?.content?.['application/json']?.schema)
    const sent = ['scheduled_at', 'invocation'].filter((f) => job.command.includes(f))
    const unaccepted = sent.filter((f) => schema?.additionalProperties === false && !(f in (schema.properties ?? {})))
    if (unaccepted.length) refused.push(`${job.jobname} (${path}): ${unaccepted.join(', ')}`)
  }
  assert.deepEqual(refused, [], 'fields a job sends that its endpoint refuses (400)')
})
