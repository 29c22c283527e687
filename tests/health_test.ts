// GET /health, GET /api/admin/health (with the pg_cron jobs), CORS and unknown routes.
import { strict as assert } from 'node:assert'
import { healthReport, migrationFiles } from '../functions/api/routes/admin.ts'
import { api, API_URL, assertError, createUser, env, sql, test } from './_helpers.ts'

test('GET /health answers status and a current timestamp', async () => {
  const res = await api('/health')
  assert.equal(res.status, 200)
  assert.equal(res.body.status, 'ok')
  assert.ok(Math.abs(Date.parse(res.body.timestamp) - Date.now()) < 60_000)
  assertError(await api('/health', { method: 'POST', body: {} }), 405)
})

test('CORS: preflight answered on every function, headers on replies and errors', async () => {
  for (const path of ['/api/user/profile', '/api/auth/verify', '/health']) {
    const res = await fetch(`${API_URL}/functions/v1${path}`, {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example.com', 'access-control-request-method': 'PUT' },
    })
    await res.body?.cancel()
    assert.equal(res.status, 204, path)
    assert.equal(res.headers.get('access-control-allow-origin'), '*')
    assert.match(res.headers.get('access-control-allow-headers')!, /authorization/)
  }
  const err = await api('/api/user/profile')
  assert.equal(err.headers.get('access-control-allow-origin'), '*')
})

test('unknown routes are 404 {error}', async () => {
  assertError(await api('/api/nope'), 404)
  assertError(await api('/nope'), 404)
})

test('admin health: super admins get status, latency, commit, uptime and unapplied migrations', async () => {
  const admin = await createUser({ superAdmin: true })
  const res = await api('/api/admin/health', { token: admin.token })
  assert.equal(res.status, 200)
  assert.equal(res.body.status, 'ok')
  assert.equal(typeof res.body.database_latency_ms, 'number')
  assert.ok(res.body.database_latency_ms >= 0 && res.body.database_latency_ms < 5000)
  assert.equal(res.body.commit, env('COMMIT_SHA'))
  assert.ok(Number.isInteger(res.body.uptime_seconds) && res.body.uptime_seconds >= 0)
  assert.deepEqual(res.body.unapplied_migrations, [])
})

test('admin health: other users 403, anonymous 401', async () => {
  const user = await createUser()
  assertError(await api('/api/admin/health', { token: user.token }), 403)
  assertError(await api('/api/admin/health'), 401)
})

test('admin health lists each pg_cron job with its last run', async () => {
  const admin = await createUser({ superAdmin: true })
  const user = await createUser()
  const [job] = await sql`select jobid from cron.job where jobname = 'labs-process-step-prompts'`
  assert.ok(job, 'the step-prompt job is scheduled')
  await sql`insert into cron.job_run_details (jobid, runid, job_pid, database, username, command, status, return_message, start_time, end_time)
            values (${job.jobid}, nextval('cron.runid_seq'), 1, 'postgres', 'postgres', 'select 1', 'failed', 'boom', now() - interval '2 minutes', now() - interval '1 minute'),
                   (${job.jobid}, nextval('cron.runid_seq'), 1, 'postgres', 'postgres', 'select 1', 'succeeded', '1 row', now() - interval '10 seconds', now())`
  const res = await api('/api/admin/health', { token: admin.token })
  assert.equal(res.status, 200)
  const row = res.body.cron.find((j: { job_name: string }) => j.job_name === 'labs-process-step-prompts')
  assert.equal(row.schedule, '0 3 * * *')
  assert.equal(row.last_status, 'succeeded', 'the latest run')
  assert.ok(row.last_finished_at)
  assertError(await api('/api/admin/health', { token: user.token }), 403)
})

test('health report: unapplied files are listed; a failed round trip is degraded', async () => {
  const dir = await Deno.makeTempDir()
  try {
    for (const f of ['20260101000000_a.sql', '20260102000000_b.sql', '20260103000000_c.sql', 'README.md']) {
      await Deno.writeTextFile(`${dir}/${f}`, '')
    }
    const files = await migrationFiles(dir)
    assert.deepEqual([...files.keys()].sort(), ['20260101000000', '20260102000000', '20260103000000'])
    const ok = healthReport(
      { ok: true, latencyMs: 3.14159, appliedVersions: ['20260101000000', '20260103000000'] },
      files,
      'abc',
      12.7,
    )
    assert.deepEqual(ok, {
      status: 'ok',
      database_latency_ms: 3.1,
      commit: 'abc',
      uptime_seconds: 12,
      unapplied_migrations: ['20260102000000_b.sql'],
    })
    const down = healthReport({ ok: false, latencyMs: 5000, appliedVersions: [] }, files, 'abc', 1)
    assert.equal(down.status, 'degraded')
    assert.equal(down.database_latency_ms, null)
    assert.equal(down.unapplied_migrations, null)
  } finally {
    await Deno.remove(dir, { recursive: true })
  }
})
