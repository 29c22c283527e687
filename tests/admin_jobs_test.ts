// GET /api/admin/jobs, POST /api/admin/jobs/{name}/run (the admin console's tasks page), the
// health page's queues, job runs and providers, and pg_cron's next-run computation.
import { strict as assert } from 'node:assert'
import { CronSyntaxError, nextRun, parseCron } from '../functions/_shared/cron_schedule.ts'
import { describeCommand } from '../functions/api/routes/admin_jobs.ts'
import { api, assertError, createUser, env, pause, SERVICE_ROLE_KEY, sql, test } from './_helpers.ts'

const at = (iso: string) => new Date(iso)
const next = (schedule: string, from: string) => nextRun(schedule, at(from))?.toISOString()

test('next run: every minute, steps, ranges, lists, interval seconds (UTC)', () => {
  assert.equal(next('* * * * *', '2026-03-10T10:15:30Z'), '2026-03-10T10:16:00.000Z')
  assert.equal(next('* * * * *', '2026-03-10T10:15:00Z'), '2026-03-10T10:16:00.000Z', 'strictly later')
  assert.equal(next('*/5 * * * *', '2026-03-10T10:15:00Z'), '2026-03-10T10:20:00.000Z')
  assert.equal(next('*/5 * * * *', '2026-03-10T10:57:00Z'), '2026-03-10T11:00:00.000Z')
  assert.equal(next('2-59/10 * * * *', '2026-03-10T10:15:00Z'), '2026-03-10T10:22:00.000Z')
  assert.equal(next('*/10 3-5 * * *', '2026-03-10T05:55:00Z'), '2026-03-11T03:00:00.000Z', 'after the range: next day')
  assert.equal(next('*/10 3-5 * * *', '2026-03-10T04:31:00Z'), '2026-03-10T04:40:00.000Z')
  assert.equal(next('0 3,15 * * *', '2026-03-10T04:00:00Z'), '2026-03-10T15:00:00.000Z')
  assert.equal(next('17 3 * * *', '2026-12-31T03:17:00Z'), '2027-01-01T03:17:00.000Z', 'over the year')
  assert.equal(next('0 0 1 * *', '2026-01-31T12:00:00Z'), '2026-02-01T00:00:00.000Z')
  assert.equal(next('30 0 1 * *', '2026-02-01T00:10:00Z'), '2026-02-01T00:30:00.000Z')
  assert.equal(next('0 0 * * 1', '2026-03-10T10:00:00Z'), '2026-03-16T00:00:00.000Z', 'the next Monday')
  assert.equal(next('0 20 * * 0', '2026-03-10T10:00:00Z'), '2026-03-15T20:00:00.000Z', 'Sunday is 0')
  assert.equal(next('0 20 * * 7', '2026-03-10T10:00:00Z'), '2026-03-15T20:00:00.000Z', 'and 7')
  assert.equal(next('0 9 * * mon-fri', '2026-03-13T10:00:00Z'), '2026-03-16T09:00:00.000Z', 'names, weekdays')
  assert.equal(next('0 0 29 feb *', '2026-03-01T00:00:00Z'), '2028-02-29T00:00:00.000Z', 'the next leap day')
  assert.equal(next('0 12 $ * *', '2026-02-10T00:00:00Z'), '2026-02-28T12:00:00.000Z', "$: the month's last day")
  // Both day fields restricted: either fires (the 13th, or a Friday).
  assert.equal(next('0 0 13 * 5', '2026-03-01T00:00:00Z'), '2026-03-06T00:00:00.000Z')
  assert.equal(next('30 seconds', '2026-03-10T10:15:00Z'), '2026-03-10T10:15:30.000Z')
  assert.equal(next('0 0 31 2 *', '2026-03-10T10:15:00Z'), undefined, 'never')
  assert.deepEqual(parseCron('1 seconds'), { kind: 'seconds', seconds: 1 })
  for (const bad of ['* * * *', '60 * * * *', '* 24 * * *', '5-1 * * * *', '*/0 * * * *', '0 seconds', '60 seconds', 'x * * * *']) {
    assert.throws(() => parseCron(bad), CronSyntaxError, bad)
  }
})

test('what a job runs: the endpoint of an edge job, never its Vault lookups; SQL as it is', () => {
  const [edge] = [describeCommand(`select net.http_post(
      url := (select decrypted_secret from vault.decrypted_secrets where name = 'project_url') || '/functions/v1' || '/api/notifications/cron/deliver',
      headers := jsonb_build_object('x-cron-secret', (select decrypted_secret from vault.decrypted_secrets where name = 'NOTIFICATIONS_CRON_SECRET'))
    ) from generate_series(1, 4) as invocation`)]
  assert.deepEqual(edge, { kind: 'edge', endpoint: '/api/notifications/cron/deliver', invocations: 4, sql: null })
  const mosaic = describeCommand(`select net.http_post(
  url := (select decrypted_secret from vault.decrypted_secrets where name = 'project_url')
         || '/functions/v1/api/workout-window/mosaic/generate/' || ((now() at time zone 'UTC')::date - 1)::text)`)
  assert.deepEqual(mosaic, { kind: 'edge', endpoint: '/api/workout-window/mosaic/generate/…', invocations: 1, sql: null })
  assert.deepEqual(describeCommand(' select private.run_retention() '), {
    kind: 'sql', endpoint: null, invocations: null, sql: 'select private.run_retention()',
  })
})

const secrets = () =>
  [SERVICE_ROLE_KEY, env('JWT_SECRET'), 'local-frontend-cron-secret', 'local-notifications-cron-secret', 'local-drops-cron-secret']

function assertNoSecret(body: unknown) {
  const text = JSON.stringify(body)
  for (const s of secrets()) assert.ok(!text.includes(s), 'no secret in the reply')
  assert.ok(!/decrypted_secret/.test(text), "no Vault lookup in the reply")
}

test('GET /api/admin/jobs: every pg_cron job with its next run, last runs and the admin work waiting', async () => {
  const admin = await createUser({ superAdmin: true })
  const res = await api('/api/admin/jobs', { token: admin.token })
  assert.equal(res.status, 200)
  const jobs = res.body.jobs as any[]
  const [{ n }] = await sql`select count(*)::int as n from cron.job`
  assert.equal(jobs.length, n, 'every job')
  const byName = new Map(jobs.map((j) => [j.name, j]))
  const deliveries = byName.get('notification-deliveries')
  assert.equal(deliveries.schedule, '* * * * *')
  assert.equal(deliveries.runs.kind, 'edge')
  assert.equal(deliveries.runs.endpoint, '/api/notifications/cron/deliver')
  const ms = Date.parse(deliveries.next_run_at) - Date.now()
  assert.ok(ms > 0 && ms <= 61_000, 'every minute: within the next minute')
  const retention = byName.get('retention')
  assert.deepEqual(retention.runs, { kind: 'sql', endpoint: null, invocations: null, sql: 'select private.run_retention()' })
  assert.match(retention.next_run_at, /T0[345]:[0-5]0:00\.000Z$/, '*/10 3-5 * * *')
  for (const k of ['pending_sponsors', 'pending_opportunities', 'pending_videos', 'checkins_to_review', 'account_deletions']) {
    assert.equal(typeof res.body.waiting[k], 'number', k)
  }
  assertNoSecret(res.body)
})

test('GET /api/admin/jobs and run now: other users 403, anonymous 401', async () => {
  const user = await createUser()
  assertError(await api('/api/admin/jobs', { token: user.token }), 403)
  assertError(await api('/api/admin/jobs'), 401)
  assertError(await api('/api/admin/jobs/retention/run', { method: 'POST', token: user.token }), 403)
  assertError(await api('/api/admin/jobs/retention/run', { method: 'POST' }), 401)
  // Below the API too: the RPCs refuse a user who is not a super admin.
  const rpc = await fetch(`${env('SUPABASE_URL')}/rest/v1/rpc/run_cron_job`, {
    method: 'POST',
    headers: { apikey: env('SUPABASE_ANON_KEY'), authorization: `Bearer ${user.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ job_name: 'retention' }),
  })
  assert.equal(rpc.status, 403)
  await rpc.body?.cancel()
  const [{ n }] = await sql`select count(*)::int as n from private.cron_manual_runs where run_by = ${user.id}`
  assert.equal(n, 0, 'nothing ran')
})

test('run now: an unknown job 404, a name that is not one 400 naming the field', async () => {
  const admin = await createUser({ superAdmin: true })
  assertError(await api('/api/admin/jobs/no-such-job/run', { method: 'POST', token: admin.token }), 404, /no-such-job/)
  assertError(await api(`/api/admin/jobs/${encodeURIComponent("x'; drop table y")}/run`, { method: 'POST', token: admin.token }), 400, /name/)
})

test('run now: a SQL job runs its own command, logs a new job_runs row, and is audited', async () => {
  const admin = await createUser({ superAdmin: true })
  const before = new Date()
  const [{ last }] = await sql`select coalesce(max(id), 0)::int as last from private.job_runs where job = 'process-engagement'`
  const res = await api('/api/admin/jobs/process-engagement/run', { method: 'POST', token: admin.token })
  assert.equal(res.status, 202)
  assert.equal(res.body.job, 'process-engagement')
  assert.equal(res.body.status, 'succeeded', res.body.message)
  assert.deepEqual(res.body.runs, { kind: 'sql', endpoint: null, invocations: null, sql: 'select public.process_encouragement_engagement()' })
  assertNoSecret(res.body)
  const runs = await sql`select id, started_at from private.job_runs where job = 'process-engagement' and id > ${last}`
  assert.equal(runs.length, 1, 'a new job_runs row')
  const [audit] = await sql`select * from private.cron_manual_runs where id = ${res.body.audit_id}`
  assert.equal(audit.job_name, 'process-engagement')
  assert.equal(audit.run_by, admin.id)
  assert.equal(audit.run_via, 'authenticated')
  assert.equal(audit.status, 'succeeded')
  assert.ok(audit.started_at >= new Date(before.getTime() - 1000))
  const [cronRun] = await sql`select status, return_message from cron.job_run_details where runid = ${res.body.run_id}`
  assert.equal(cronRun.status, 'succeeded')
  assert.match(cronRun.return_message, new RegExp(`audit ${res.body.audit_id}`))
  // The jobs list shows the new run and the manual run.
  const list = await api('/api/admin/jobs', { token: admin.token })
  const job = list.body.jobs.find((j: any) => j.name === 'process-engagement')
  assert.equal(job.job_runs[0].id, Number(runs[0].id))
  assert.equal(job.cron_runs[0].run_id, res.body.run_id)
  assert.equal(job.manual_runs[0].id, res.body.audit_id)
})

test('run now: an edge job queues its own request to its endpoint with its secret (never in the reply)', async () => {
  const admin = await createUser({ superAdmin: true })
  const [{ last }] = await sql`select coalesce(max(id), 0)::int as last from net._http_response`
  const res = await api('/api/admin/jobs/notification-deliveries/run', { method: 'POST', token: admin.token })
  assert.equal(res.status, 202)
  assert.equal(res.body.status, 'succeeded')
  assert.equal(res.body.runs.kind, 'edge')
  assert.equal(res.body.runs.endpoint, '/api/notifications/cron/deliver')
  assertNoSecret(res.body)
  // The gateway sends the queued request to the endpoint, which accepts the job's secret.
  let answered: any[] = []
  for (let i = 0; i < 40 && answered.length === 0; i++) {
    await pause(250)
    answered = await sql`select status_code, content from net._http_response where id > ${last} and content like '%claimed%'`
  }
  assert.ok(answered.length > 0, 'the endpoint answered the queued request')
  assert.equal(answered[0].status_code, 200, answered[0].content)
  const [audit] = await sql`select command, run_by from private.cron_manual_runs where id = ${res.body.audit_id}`
  assert.equal(audit.run_by, admin.id)
  assert.ok(!audit.command.includes('local-notifications-cron-secret'), 'the audit names the secret, never its value')
})

test('run now: a command that fails is reported and audited as failed', async () => {
  const admin = await createUser({ superAdmin: true })
  const name = `test-failing-${crypto.randomUUID().slice(0, 8)}`
  await sql`select cron.schedule(${name}, '0 0 1 1 *', 'select 1/0')`
  try {
    const res = await api(`/api/admin/jobs/${name}/run`, { method: 'POST', token: admin.token })
    assert.equal(res.status, 202)
    assert.equal(res.body.status, 'failed')
    assert.match(res.body.message, /division by zero/)
    const [audit] = await sql`select status, message from private.cron_manual_runs where id = ${res.body.audit_id}`
    assert.equal(audit.status, 'failed')
    const [cronRun] = await sql`select status from cron.job_run_details where runid = ${res.body.run_id}`
    assert.equal(cronRun.status, 'failed')
  } finally {
    await sql`select cron.unschedule(${name})`
  }
})

test('health: queues, job runs with counts and errors, providers; the old fields unchanged', async () => {
  const admin = await createUser({ superAdmin: true })
  await sql`insert into private.job_runs (job, started_at, succeeded, failed, remaining, details)
            values ('analyze-notes', now() - interval '1 minute', 3, 2, 0, '{"errors": ["user 1: provider timed out"]}')`
  const res = await api('/api/admin/health', { token: admin.token })
  assert.equal(res.status, 200)
  for (const k of ['status', 'database_latency_ms', 'commit', 'uptime_seconds', 'unapplied_migrations', 'cron', 'notification_channels']) {
    assert.ok(k in res.body, k)
  }
  const queues = new Map((res.body.queues as any[]).map((q) => [q.name, q]))
  for (const q of ['notification_outbox', 'engagement', 'account_deletions', 'ai_jobs']) {
    assert.equal(typeof queues.get(q)?.depth, 'number', q)
  }
  assert.equal(queues.get('tone_analysis').depth, null, 'not queued')
  const job = (res.body.jobs as any[]).find((j) => j.job === 'analyze-notes')
  assert.ok(job.failed_24h >= 2 && job.succeeded_24h >= 3)
  assert.deepEqual(job.runs[0].details.errors, ['user 1: provider timed out'])
  assert.deepEqual(Object.keys(res.body.providers).sort(), ['ai', 'expo', 'music', 'resend', 'stripe', 'web_push'])
  for (const v of Object.values(res.body.providers)) assert.equal(typeof v, 'boolean')
  assertNoSecret(res.body)
  const user = await createUser()
  assertError(await api('/api/admin/health', { token: user.token }), 403)
})

test('run now: a job switched off is refused (409) with the reason, and nothing is audited', async () => {
  const admin = await createUser({ superAdmin: true })
  const [job] = await sql`select jobname from cron.job where not active order by jobname limit 1`
  const name = job?.jobname ?? 'music-sync-all'
  if (!job) await sql`update cron.job set active = false where jobname = ${name}`
  try {
    const [{ n: audited }] = await sql`select count(*)::int as n from private.cron_manual_runs`
    const res = await api(`/api/admin/jobs/${name}/run`, { method: 'POST', token: admin.token })
    assertError(res, 409, 'switched off')
    const [{ n }] = await sql`select count(*)::int as n from private.cron_manual_runs`
    assert.equal(n, audited)
  } finally {
    if (!job) await sql`update cron.job set active = true where jobname = ${name}`
  }
})
