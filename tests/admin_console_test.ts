// The admin console's shell in a real browser: sign-in through supabase-js, the permission-denied
// page for everyone but super admins, the conversion-rate tab end to end, keyboard use, and
// axe-core on each page. The pages of each area: tests/admin_console_<area>_test.ts.
import { strict as assert } from 'node:assert'
import { ANON_KEY, SERVICE_ROLE_KEY, sql, test } from './_helpers.ts'
import { ROOT } from '../scripts/lib/proc.ts'
import { ADMIN_DIST, SECRET_VARIABLES, secretsInBundle } from '../scripts/lib/admin_console.ts'
import { CONSOLE_URL, consoleUser, withConsole } from './_admin_console.ts'

test('admin console: an ordinary user who signs in sees the permission-denied page and nothing else', async () => {
  const user = await consoleUser('user', 'console-plain')
  await withConsole(async (c) => {
    await c.page.goto(CONSOLE_URL, { waitUntil: 'networkidle' })
    await c.page.getByLabel('E-mail').fill(user.email)
    await c.page.getByLabel('Password').fill('wrong password')
    await c.page.getByRole('button', { name: 'Sign in' }).click()
    await c.page.getByRole('alert').filter({ hasText: 'Invalid login credentials' }).waitFor()
    await c.checkAccessibility('sign-in')
    await c.screenshot('sign-in')

    await c.page.getByLabel('Password').fill(user.password)
    await c.page.getByRole('button', { name: 'Sign in' }).click()
    await c.page.getByRole('heading', { name: 'Permission denied' }).waitFor()
    assert.equal(await c.page.getByRole('navigation', { name: 'Admin pages' }).count(), 0, 'no admin navigation')
    for (const path of ['/dashboard/admin/health', '/dashboard/admin/tasks', '/auth/impersonate-callback']) {
      await c.open(path)
      await c.page.getByRole('heading', { name: 'Permission denied' }).waitFor()
    }
    await c.checkAccessibility('permission denied')
    await c.screenshot('permission-denied')
  })
})

test('admin console: a super admin sets a conversion rate, seen in force and in the history, keyboard only', async () => {
  const admin = await consoleUser()
  await withConsole(async (c) => {
    await c.signIn(admin)
    await c.page.getByRole('link', { name: 'Conversion rates' }).click()
    await c.page.getByRole('heading', { name: 'Conversion rates' }).waitFor()
    await c.checkAccessibility('dashboard: conversion rates')

    // An invalid rate: the API's message, shown on the page; nothing written.
    const before = (await sql`select count(*)::int as n from public.token_conversion_rates`)[0].n
    const field = c.page.getByLabel('Tokens per drop')
    await field.fill('10000000000000000') // over the API's bound; the browser lets it through
    await c.page.getByRole('button', { name: 'Set rate' }).click()
    await c.page.getByRole('alert').waitFor()
    assert.match(await c.page.getByRole('alert').innerText(), /tokens_per_drop/)
    assert.equal((await sql`select count(*)::int as n from public.token_conversion_rates`)[0].n, before)

    // Keyboard alone: focus the field, type, submit with Enter.
    const rate = 1000 + Math.floor(Math.random() * 100000)
    await field.focus()
    await c.page.keyboard.press('Control+A')
    await c.page.keyboard.type(String(rate))
    await c.page.keyboard.press('Enter')
    await c.page.getByRole('status').filter({ hasText: 'The new rate is saved.' }).waitFor()
    await c.page.locator('.current-rate', { hasText: rate.toLocaleString('en-US') }).waitFor()
    const [row] = await sql`select tokens_per_drop::float as t, created_by from public.token_conversion_rates order by id desc limit 1`
    assert.equal(row.t, rate)
    assert.equal(row.created_by, admin.id, 'set with the admin’s own session')
    await c.screenshot('dashboard-conversion-rates')
  })
})

test('admin console: an unknown console path is a page of its own, and the build is served with its headers', async () => {
  const page = await fetch(`${CONSOLE_URL}/no-such-page`)
  assert.equal(page.status, 200)
  assert.match(page.headers.get('content-type')!, /text\/html/)
  assert.match(page.headers.get('content-security-policy')!, /frame-ancestors 'none'/)
  const html = await page.text()
  const script = html.match(/src="(\/dashboard\/admin\/assets\/[^"]+\.js)"/)
  assert.ok(script, html)
  const js = await fetch(new URL(script[1], CONSOLE_URL))
  assert.equal(js.status, 200)
  assert.match(js.headers.get('cache-control')!, /immutable/)
  await js.body?.cancel()
  const missing = await fetch(`${CONSOLE_URL}/assets/..%2f..%2fpackage.json`)
  assert.equal(missing.status, 404)
  await missing.body?.cancel()
  const admin = await consoleUser()
  await withConsole(async (c) => {
    await c.signIn(admin)
    await c.open('/dashboard/admin/no-such-page')
    await c.page.getByRole('heading', { name: 'Not found' }).waitFor()
    await c.checkAccessibility('not found')
  })
})

test('admin console: the build holds no secret, and the check that says so catches each kind', async () => {
  assert.deepEqual(await secretsInBundle(ADMIN_DIST), [], 'the served build is clean')
  const html = await (await fetch(CONSOLE_URL)).text()
  for (const name of SECRET_VARIABLES) {
    const value = Deno.env.get(name)
    if (value && value.length >= 8) assert.ok(!html.includes(value), name)
  }
  // The check itself, on a build that leaks: each finding is named.
  const dir = await Deno.makeTempDir({ prefix: 'console-leak-' })
  try {
    await Deno.writeTextFile(
      `${dir}/a.js`,
      `const k=${JSON.stringify(SERVICE_ROLE_KEY)};const s="sk_live_abcdefghijklmnop";const t="token-from-env-123"`,
    )
    const found = await secretsInBundle(dir, (k) => (k === 'STRIPE_SECRET_KEY' ? 'token-from-env-123' : undefined))
    assert.ok(found.some((f) => f.includes('the local service-role key')), found.join('\n'))
    assert.ok(found.some((f) => f.includes('a JWT with role service_role')), found.join('\n'))
    assert.ok(found.some((f) => f.includes('a Stripe secret or restricted key')), found.join('\n'))
    assert.ok(found.some((f) => f.includes('STRIPE_SECRET_KEY')), found.join('\n'))
    await Deno.writeTextFile(
      `${dir}/a.js`,
      'const a="sb_secret_abcdefghijklmnopqrstu";const b="postgres://postgres:pw@db.example.com:5432/postgres"',
    )
    const shapes = await secretsInBundle(dir, () => undefined)
    assert.ok(shapes.some((f) => f.includes('a Supabase secret key')), shapes.join('\n'))
    assert.ok(shapes.some((f) => f.includes('a database URL with a password')), shapes.join('\n'))
    await Deno.writeTextFile(`${dir}/a.js`, `const anon=${JSON.stringify(ANON_KEY)}`)
    assert.deepEqual(await secretsInBundle(dir, () => undefined), [], 'the anon key is public')
  } finally {
    await Deno.remove(dir, { recursive: true })
  }
  // Vite itself refuses a build given the service-role key as its "anon" key, however started.
  const outDir = await Deno.makeTempDir({ prefix: 'console-build-' })
  try {
    const build = await new Deno.Command(`${ROOT}/node_modules/.bin/vite`, {
      args: ['build', `${ROOT}/admin`, '--outDir', outDir, '--logLevel', 'error'],
      env: { VITE_SUPABASE_ANON_KEY: SERVICE_ROLE_KEY },
      stdout: 'piped',
      stderr: 'piped',
    }).output()
    assert.equal(build.success, false)
    assert.match(new TextDecoder().decode(build.stderr), /not the project's anon or publishable key/)
    assert.equal([...Deno.readDirSync(outDir)].length, 0, 'nothing was written')
  } finally {
    await Deno.remove(outDir, { recursive: true })
  }
})

test('admin console: a malformed id in the page URL never sends the admin’s token elsewhere', async () => {
  const admin = await consoleUser()
  await withConsole(async (c) => {
    await c.signIn(admin)
    const requests: URL[] = []
    c.page.on('request', (r) => requests.push(new URL(r.url())))
    await c.open('/dashboard/admin/users/..%2F..%2F..%2F..%2Frest%2Fv1%2Fprofiles%3F')
    await c.page.waitForTimeout(500)
    // What the page may call: its own files, Auth, the gate's read of the admin's role, and /api.
    const stray = requests.filter((u) =>
      !u.pathname.startsWith('/dashboard/admin') && !u.pathname.startsWith('/auth/v1/') &&
      !(u.pathname === '/rest/v1/profiles' && u.searchParams.get('select') === 'role,full_name') &&
      !u.pathname.startsWith('/functions/v1/api/')
    )
    assert.deepEqual(stray.map(String), [])
  })
})
