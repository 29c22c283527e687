// The admin console's Users tab, a user's page, /auth/impersonate-callback and the AI users tab in
// a real browser: a role change (audited), support's deletion with its progress, an impersonation
// with its mandatory reason ended by ?stop=1 (audited, its token refused afterwards), and three AI
// users generated; the API's messages on the page, axe-core and a screenshot on each.
import { strict as assert } from 'node:assert'
import { API_URL, sql, test } from './_helpers.ts'
import { consoleUser, withConsole } from './_admin_console.ts'

test('admin console users: search, a role change with its fresh-session warning (audited), a support deletion with its progress', async () => {
  const admin = await consoleUser()
  const target = await consoleUser('user', 'console-role')
  const victim = await consoleUser('user', 'console-victim')
  await withConsole(async (c) => {
    const { page } = c
    await c.signIn(admin)
    await page.getByRole('heading', { name: 'Users', level: 2 }).waitFor()
    await page.getByLabel('Search by e-mail or name').fill(target.email)
    await page.getByRole('button', { name: 'Search' }).click()
    const row = page.getByRole('row').filter({ hasText: target.email })
    await page.getByRole('table', { name: `Users matching “${target.email}”` }).waitFor()
    await row.getByRole('link', { name: target.email, exact: true }).waitFor()
    assert.equal(await page.getByRole('row').count(), 2, 'the header and the one match')
    await c.checkAccessibility('dashboard: users')
    await c.screenshot('dashboard-users')

    // The role change: a confirmation that says a fresh session is needed; audited as the backend does.
    await row.getByRole('button', { name: 'Make super admin' }).click()
    const dialog = page.getByRole('dialog')
    await dialog.getByText('a fresh session is needed').waitFor()
    await c.checkAccessibility('dashboard: users, role dialog')
    await dialog.getByRole('button', { name: 'Make super admin' }).click()
    await page.getByRole('status').filter({ hasText: 'is now Super admin' }).waitFor()
    await row.getByRole('button', { name: 'Make ordinary user' }).waitFor()
    assert.equal((await sql`select role from public.profiles where id = ${target.id}`)[0].role, 'super_admin')
    const changes = await sql`select old_role, new_role, changed_by from public.role_changes where user_id = ${target.id}`
    assert.deepEqual(changes.map((r) => ({ ...r })), [{ old_role: 'user', new_role: 'super_admin', changed_by: admin.id }])

    // Support's deletion: a wrong confirmation word gets the API's message in the dialog, nothing happens.
    await page.getByLabel('Search by e-mail or name').fill(victim.email)
    await page.getByRole('button', { name: 'Search' }).click()
    const victimRow = page.getByRole('row').filter({ hasText: victim.email })
    await victimRow.getByRole('button', { name: 'Delete account' }).click()
    await dialog.getByLabel('Type DELETE to confirm').fill('delete')
    await dialog.getByRole('button', { name: 'Delete account' }).click()
    await dialog.getByRole('alert').filter({ hasText: 'confirm' }).waitFor()
    assert.equal((await sql`select count(*)::int as n from private.account_deletions where user_id = ${victim.id}`)[0].n, 0)
    await dialog.getByLabel('Type DELETE to confirm').fill('DELETE')
    await dialog.getByRole('button', { name: 'Delete account' }).click()
    const progress = page.getByRole('region', { name: 'Deletions started here' })
    await progress.getByText(victim.email).waitFor()
    await progress.getByText(/Status: (Deleted|In progress)/).waitFor()
    await progress.getByRole('list', { name: 'Deletion steps' }).waitFor()
    const [d] = await sql`select requested_via, requested_by from private.account_deletions where user_id = ${victim.id}`
    assert.deepEqual({ ...d }, { requested_via: 'support', requested_by: admin.id })
    await c.checkAccessibility('dashboard: users, deletion')
    await c.screenshot('dashboard-users-deletion')
  })
})

test('admin console users: impersonation with a mandatory reason, the banner on every page, ended by ?stop=1; the user page shows the audit', async () => {
  const admin = await consoleUser()
  const target = await consoleUser('user', 'console-imp')
  await withConsole(async (c) => {
    const { page } = c
    await c.signIn(admin)
    await c.open('/auth/impersonate-callback')
    await page.getByRole('link', { name: 'Users tab' }).waitFor()
    await c.checkAccessibility('impersonate: how to start')
    await c.screenshot('impersonate-explain')

    await c.open('/dashboard/admin?tab=users')
    await page.getByLabel('Search by e-mail or name').fill(target.email)
    await page.getByRole('button', { name: 'Search' }).click()
    await page.getByRole('link', { name: `Impersonate ${target.email}` }).click()
    await page.getByRole('heading', { name: 'Start an impersonation' }).waitFor()
    await page.getByText(`act as ${target.email}`).waitFor()

    // Without a reason: the API refuses it, its message on the page, no audit row.
    await page.getByRole('button', { name: 'Start impersonation' }).click()
    await page.getByRole('alert').filter({ hasText: 'reason' }).waitFor()
    assert.equal((await sql`select count(*)::int as n from public.impersonation_audit where target_id = ${target.id}`)[0].n, 0)
    await c.checkAccessibility('impersonate: start')
    await c.screenshot('impersonate-start-refused')

    const reason = 'Ticket 4242: cannot see her streak'
    await page.getByLabel('Reason (required, audited)').fill(reason)
    const started = page.waitForResponse((r) => r.url().endsWith('/api/admin/impersonation') && r.request().method() === 'POST')
    await page.getByRole('button', { name: 'Start impersonation' }).click()
    const token: string = (await (await started).json()).access_token
    const banner = page.getByRole('region', { name: 'Impersonation in progress' })
    await banner.filter({ hasText: `Acting as ${target.email} because “${reason}”, ends at` }).waitFor()
    await page.getByRole('button', { name: 'Read their profile as them' }).click()
    await page.getByLabel('Their profile').filter({ hasText: target.email }).waitFor()
    await c.checkAccessibility('impersonate: acting')
    await c.screenshot('impersonate-acting')
    await c.open('/dashboard/admin/health')
    await banner.waitFor() // on every page

    // ?stop=1 (the banner's link): ended with the token itself, back on the user's page.
    await banner.getByRole('link', { name: 'End impersonation' }).click()
    await page.waitForURL(`**/dashboard/admin/users/${target.id}`)
    await page.getByRole('status').filter({ hasText: `The impersonation of ${target.email} ended.` }).waitFor()
    assert.equal(await banner.count(), 0)
    const audit = await sql`select event, admin_id, reason from public.impersonation_audit where target_id = ${target.id} order by id`
    assert.deepEqual(audit.map((r) => ({ ...r })), [
      { event: 'start', admin_id: admin.id, reason },
      { event: 'stop', admin_id: admin.id, reason },
    ])
    const refused = await fetch(`${API_URL}/functions/v1/api/user/profile`, { headers: { authorization: `Bearer ${token}` } })
    assert.equal(refused.status, 401, 'the token is refused once the session ended')
    assert.match((await refused.json()).error, /impersonation session has ended/i)

    // The user's page: summary, no deletion, the audit of the session.
    await page.getByRole('heading', { name: `User ${target.email}` }).waitFor()
    const sessions = page.getByRole('table', { name: /Impersonation sessions/ })
    const session = sessions.getByRole('row').filter({ hasText: reason })
    await session.getByText('stopped').waitFor()
    await session.getByRole('link', { name: admin.id }).waitFor()
    await session.getByRole('button', { name: 'Every action of this session' }).click() // .../sessions/{id}/writes
    await session.getByRole('listitem').filter({ hasText: 'POST /api/admin/impersonation/stop' }).waitFor()
    await page.getByText('No deletion is under way for this account.').waitFor()
    await c.checkAccessibility('user page')
    await c.screenshot('user-page')

    // An unknown user's page: the API's message.
    await c.open(`/dashboard/admin/users/${crypto.randomUUID()}`)
    await page.getByRole('alert').filter({ hasText: 'No such user' }).first().waitFor()
  })
})

test('admin console users: the AI users tab generates three (is_ai profiles), pauses and deletes one, shows a date\'s teams', async () => {
  const admin = await consoleUser()
  await withConsole(async (c) => {
    const { page } = c
    await c.signIn(admin)
    await c.open('/dashboard/admin?tab=ai-users')
    await page.getByRole('heading', { name: 'Generate AI users' }).waitFor()
    await page.getByRole('heading', { name: 'Red team' }).waitFor()
    const before = (await sql`select count(*)::int as n from public.profiles where is_ai`)[0].n

    // Over the API's bound: its message, nothing created.
    await page.getByLabel('How many (1–1000)').fill('1001')
    await page.getByRole('button', { name: 'Generate' }).click()
    await page.getByRole('alert').filter({ hasText: 'count' }).waitFor()
    assert.equal((await sql`select count(*)::int as n from public.profiles where is_ai`)[0].n, before)

    await page.getByLabel('How many (1–1000)').fill('3')
    await page.getByLabel('Check-in probability (0–1)').fill('0.5')
    await page.getByRole('button', { name: 'Generate' }).click()
    const created = page.getByRole('list', { name: 'Created AI users' }).getByRole('listitem')
    await created.first().waitFor()
    assert.equal(await created.count(), 3)
    const fresh = await sql`select p.id, p.full_name, a.checkin_probability::float as pr, a.is_active
                              from public.profiles p join public.workout_ai_users a on a.user_id = p.id
                             where p.is_ai order by p.created_at desc limit 3`
    assert.equal((await sql`select count(*)::int as n from public.profiles where is_ai`)[0].n, before + 3)
    assert.ok(fresh.every((r) => r.pr === 0.5), 'the configuration applied')
    for (const r of fresh) assert.ok((await created.allInnerTexts()).some((t) => t.startsWith(r.full_name)))
    await c.checkAccessibility('dashboard: ai users')
    await c.screenshot('dashboard-ai-users')

    // Pause one of them, then delete it (confirmed).
    const one = fresh[0]
    const row = page.getByRole('row').filter({ has: page.locator(`a[href="/dashboard/admin/users/${one.id}"]`) })
    await row.getByRole('button', { name: 'Pause' }).click()
    await row.getByRole('button', { name: 'Activate' }).waitFor()
    assert.equal(
      (await sql`select is_active from public.workout_ai_users where user_id = ${one.id}`)[0].is_active,
      false,
      `${one.full_name} paused`,
    )
    await row.getByRole('button', { name: 'Delete' }).click()
    await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click()
    await page.getByRole('status').filter({ hasText: 'was deleted' }).waitFor()
    assert.equal((await sql`select count(*)::int as n from public.profiles where id = ${one.id}`)[0].n, 0)
  })
})
