// The labs endpoints the admin console's pages use: every competition and "recompute now",
// flagged anomalies, and the kit waitlist's search and CSV download.
import { strict as assert } from 'node:assert'
import { api, apiFetch, assertError, createUser, sql, test } from './_helpers.ts'
import { admin, classroom, publicTemplate } from './_labs.ts'

test('competitions: super admins list every one (retired too) and recompute now without the cron secret', async () => {
  const slug = `adm-${crypto.randomUUID().slice(0, 8)}`
  const retired = `${slug}-old`
  for (const s of [slug, retired]) {
    assert.equal((await api('/api/labs/admin/competitions', { token: admin.token, body: { slug: s, title: s } })).status, 201)
  }
  await api(`/api/labs/admin/competitions/${retired}`, { method: 'PATCH', token: admin.token, body: { is_active: false } })
  const player = await createUser()
  assert.equal((await api(`/api/labs/competitions/${slug}/join`, { method: 'POST', token: player.token })).status, 200)

  assertError(await api('/api/labs/admin/competitions', { token: classroom.token }), 403)
  assertError(await api('/api/labs/admin/competitions?limit=0', { token: admin.token }), 400, 'limit')
  const list = await api('/api/labs/admin/competitions?limit=100', { token: admin.token })
  assert.equal(list.status, 200)
  const mine = list.body.competitions.filter((c: { slug: string }) => c.slug.startsWith(slug))
  assert.deepEqual(mine.map((c: any) => [c.slug, c.is_active, c.participants]).sort(), [[slug, true, 1], [retired, false, 0]])
  assert.equal(mine.find((c: any) => c.slug === slug).last_scored_at, null)

  assertError(await api('/api/labs/admin/competitions/recompute', { method: 'POST', token: classroom.token }), 403)
  const run = await api('/api/labs/admin/competitions/recompute', { method: 'POST', token: admin.token })
  assert.equal(run.status, 200, JSON.stringify(run.body))
  assert.ok(run.body.competitions.some((c: any) => c.slug === slug && c.participants === 1))
  assert.ok(!run.body.competitions.some((c: any) => c.slug === retired), 'retired ones are not scored')
  const [row] = await sql`select last_scored_at from public.labs_competitions where slug = ${slug}`
  assert.ok(row.last_scored_at, 'last_scored_at set')
})

test('anomalies: replications more than 2 SD from their template mean are listed for super admins', async () => {
  const owner = await createUser()
  const t = await publicTemplate(owner, `Anomaly ${crypto.randomUUID().slice(0, 6)}`)
  const values = [10, 10.1, 9.9, 10, 10.2, 9.8, 10, 10.1, 9.9, 100]
  for (const [i, v] of values.entries()) {
    await sql`insert into public.labs_replications (template_id, user_id, measured_value, created_at)
              values (${t.id}, ${owner.id}, ${v}, now() - ${`${values.length - i} seconds`}::interval)`
  }
  assertError(await api('/api/labs/admin/anomalies', { token: classroom.token }), 403)
  assertError(await api('/api/labs/admin/anomalies?before=nope', { token: admin.token }), 400, 'before')
  const res = await api('/api/labs/admin/anomalies?limit=100', { token: admin.token })
  assert.equal(res.status, 200)
  const flagged = res.body.anomalies.filter((a: any) => a.template_id === t.id)
  assert.deepEqual(flagged.map((a: any) => a.measured_value), [100])
  assert.equal(flagged[0].template_title, t.title)
  assert.equal(flagged[0].replications, 10)
  // The template's own view agrees.
  const details = await api(`/api/labs/templates/${t.id}`, { token: admin.token })
  assert.equal(details.body.template.convergence.anomalies, 1)
})

test('kit waitlist: search by address, cursor pages, and a CSV of every signup with formulas and quotes escaped', async () => {
  const tag = crypto.randomUUID().slice(0, 8)
  const plain = [`csv-${tag}-a@example.org`, `csv-${tag}-b@example.org`]
  // Addresses a spreadsheet would run as a formula or mis-split: a PostgREST signup (the table's
  // own check) takes them, so the CSV must not trust them.
  const tricky = [`=cmd-${tag}@example.org`, `+sum-${tag}@example.org`, `-x-${tag}@example.org`, `q"uote-${tag}@example.org`]
  for (const e of [...plain, ...tricky]) await sql`insert into public.labs_kit_waitlist (email) values (${e})`

  const u = await createUser()
  assertError(await api('/api/labs/admin/kit-waitlist', { token: u.token }), 403)
  assertError(await api(`/api/labs/admin/kit-waitlist?q=${'x'.repeat(400)}`, { token: admin.token }), 400, 'q')
  const found = await api(`/api/labs/admin/kit-waitlist?q=${tag.toUpperCase()}&limit=3`, { token: admin.token })
  assert.equal(found.status, 200)
  assert.equal(found.body.signups.length, 3)
  assert.ok(found.body.next_cursor)
  const rest = await api(`/api/labs/admin/kit-waitlist?q=${tag}&limit=10&before=${encodeURIComponent(found.body.next_cursor)}`, {
    token: admin.token,
  })
  assert.deepEqual(
    [...found.body.signups, ...rest.body.signups].map((s: any) => s.email).sort(),
    [...plain, ...tricky].sort(),
  )
  // A LIKE wildcard is searched for as itself.
  const none = await api(`/api/labs/admin/kit-waitlist?q=${encodeURIComponent(`csv-${tag}%`)}`, { token: admin.token })
  assert.deepEqual(none.body.signups, [])

  const refused = await apiFetch('/api/labs/admin/kit-waitlist.csv', { headers: { authorization: `Bearer ${u.token}` } })
  assert.equal(refused.status, 403)
  await refused.body?.cancel()
  const res = await apiFetch(`/api/labs/admin/kit-waitlist.csv?q=${tag}`, { headers: { authorization: `Bearer ${admin.token}` } })
  assert.equal(res.status, 200)
  assert.match(res.headers.get('content-type')!, /^text\/csv/)
  assert.match(res.headers.get('content-disposition')!, /^attachment; filename="kit-waitlist-\d{4}-\d{2}-\d{2}\.csv"$/)
  const lines = (await res.text()).trimEnd().split('\r\n')
  assert.equal(lines[0], '"email","signed_up_at"')
  assert.equal(lines.length, 1 + plain.length + tricky.length)
  const cells = new Map(lines.slice(1).map((l) => [l.slice(0, l.lastIndexOf('","') + 1), l]))
  assert.ok(cells.has(`"'=cmd-${tag}@example.org"`), [...cells.keys()].join('\n'))
  assert.ok(cells.has(`"'+sum-${tag}@example.org"`))
  assert.ok(cells.has(`"'-x-${tag}@example.org"`))
  assert.ok(cells.has(`"q""uote-${tag}@example.org"`))
  assert.ok(cells.has(`"csv-${tag}-a@example.org"`))

  const all = await apiFetch('/api/labs/admin/kit-waitlist.csv', { headers: { authorization: `Bearer ${admin.token}` } })
  const total = (await sql`select count(*)::int as n from public.labs_kit_waitlist`)[0].n
  assert.equal((await all.text()).trimEnd().split('\r\n').length, 1 + total, 'every signup, beyond one page')
})
