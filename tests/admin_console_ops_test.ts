// The admin console's operations pages in a real browser: Health (status, latency judged by
// SPEC's guidance, commit, queues, providers) and Tasks (a job run now through the UI, its new
// logged run on the page, the audit row; an API error shown in the dialog); axe-core and a
// screenshot of each.
import { strict as assert } from 'node:assert'
import { env, sql, test } from './_helpers.ts'
import { consoleUser, withConsole } from './_admin_console.ts'

test('admin console: Health shows status, latency judgement, commit, uptime, queues and providers', async () => {
  const admin = await consoleUser()
  await withConsole(async (c) => {
    await c.signIn(admin)
    await c.open('/dashboard/admin/health')
    await c.page.getByRole('heading', { name: 'Health', level: 1 }).waitFor()
    const status = c.page.getByRole('region', { name: 'Status' })
    await status.getByText('ok', { exact: true }).waitFor()
    await status.getByText(/^(normal \(under 200 ms\)|watch \(200–500 ms\)|needs investigation \(above 500 ms\))$/).waitFor()
    await status.getByText(env('COMMIT_SHA'), { exact: true }).waitFor()
    assert.match(await status.innerText(), /Unapplied migrations\s+none/)
    assert.match(await status.innerText(), /Uptime\s+\d+ (second|minute|hour|day)/)
    const queues = c.page.getByRole('table', { name: 'Depth of each work queue' })
    for (const q of ['Notification outbox (push deliveries)', 'Engagement queue (drops to judge)', 'Account deletions in progress']) {
      await queues.getByRole('rowheader', { name: q }).waitFor()
    }
    const providers = c.page.getByRole('region', { name: 'Providers configured' })
    for (const p of ['AI (AI_API_KEY)', 'Stripe (payments)', 'Resend (e-mail)', 'Expo (mobile push)', 'Web Push', 'Music provider']) {
      await providers.getByRole('listitem').filter({ hasText: p }).waitFor()
    }
    await c.page.getByRole('table', { name: /Each pg_cron job/ }).getByRole('rowheader', { name: 'retention', exact: true }).waitFor()
    await c.page.getByText(/Updated at/).waitFor()
    await c.checkAccessibility('health')
    await c.screenshot('health')

    // A degraded server answers 503 with the same report and {error}: the page shows both.
    await c.page.route('**/functions/v1/api/admin/health', (route) =>
      route.fulfill({
        status: 503,
        contentType: 'application/json',
        body: JSON.stringify({
          error: 'The database is unavailable; try again shortly',
          status: 'degraded', database_latency_ms: null, commit: 'abc123', uptime_seconds: 90061,
          unapplied_migrations: null, cron: null, notification_channels: { expo: false, web_push: false, email: false },
          queues: null, jobs: null,
          providers: { ai: true, stripe: false, resend: false, expo: false, web_push: false, music: false },
        }),
      }))
    await c.page.getByRole('button', { name: 'Refresh now' }).click()
    await status.getByText('degraded', { exact: true }).waitFor()
    await status.getByRole('alert').filter({ hasText: 'The database is unavailable; try again shortly' }).waitFor()
    await status.getByText('unknown: the database did not answer').waitFor()
    assert.match(await status.innerText(), /Uptime\s+1 day 1 hour/)
    await providers.getByRole('listitem').filter({ hasText: 'AI (AI_API_KEY): configured' }).waitFor()
    await c.page.unroute('**/functions/v1/api/admin/health')
  })
})

test('admin console: Tasks runs a job now and shows its new run; an API error shows in the dialog', async () => {
  const admin = await consoleUser()
  const gone = `console-gone-${crypto.randomUUID().slice(0, 8)}`
  await sql`select cron.schedule(${gone}, '0 0 1 1 *', 'select 1')`
  try {
    await withConsole(async (c) => {
      await c.signIn(admin)
      await c.open('/dashboard/admin/tasks')
      await c.page.getByRole('heading', { name: 'Tasks', level: 1 }).waitFor()
      await c.page.getByRole('link', { name: 'Check-ins to review' }).waitFor()
      const job = c.page.getByRole('region', { name: 'retention', exact: true })
      await job.getByText('select private.run_retention()').waitFor()
      await job.getByText(/^Next run$/).waitFor()
      const [{ last }] = await sql`select coalesce(max(id), 0)::int as last from private.job_runs where job = 'retention'`

      // Run now, confirmed in the dialog; the page follows the job until its new logged run shows.
      await job.getByRole('button', { name: 'Run retention now' }).click()
      const dialog = c.page.getByRole('dialog', { name: 'Run retention now?' })
      await dialog.getByRole('button', { name: 'Run retention now' }).click()
      await job.getByRole('status').filter({ hasText: 'Run now of retention started' }).waitFor()
      await job.getByRole('status').filter({ hasText: 'New logged run:' }).waitFor({ timeout: 15_000 })
      const [run] = await sql`select id from private.job_runs where job = 'retention' and id > ${last}`
      assert.ok(run, 'a new job_runs row')
      const [audit] = await sql`select run_by, status from private.cron_manual_runs where job_name = 'retention' order by id desc limit 1`
      assert.equal(audit.run_by, admin.id, 'audited with the admin')
      assert.equal(audit.status, 'succeeded')
      await job.getByRole('table', { name: /Logged runs of retention/ }).waitFor()
      await c.checkAccessibility('tasks')
      await c.screenshot('tasks')

      // A job removed after the page loaded: the API's 404 message, shown in the dialog.
      await sql`select cron.unschedule(${gone})`
      const goneJob = c.page.getByRole('region', { name: gone, exact: true })
      await goneJob.getByRole('button', { name: `Run ${gone} now` }).click()
      const goneDialog = c.page.getByRole('dialog', { name: `Run ${gone} now?` })
      await goneDialog.getByRole('button', { name: `Run ${gone} now` }).click()
      await goneDialog.getByRole('alert').filter({ hasText: `no scheduled job named ${gone}` }).waitFor()
      await goneDialog.getByRole('button', { name: 'Cancel' }).click()
    })
  } finally {
    await sql`select cron.unschedule(jobid) from cron.job where jobname = ${gone}`
  }
})
