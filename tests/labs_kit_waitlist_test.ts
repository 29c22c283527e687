// The labs kit waitlist (routes/labs/kit_waitlist.ts), on /api and through PostgREST.
import { strict as assert } from 'node:assert'
import { api, assertError, clientAs, createUser, sql, test } from './_helpers.ts'
import { admin, rest } from './_labs.ts'

test('kit waitlist: anyone joins once per address; super admins see the signups and the gate', async () => {
  const address = `kit-${crypto.randomUUID().slice(0, 8)}@example.org`
  const first = await api('/api/labs/kit-waitlist', { body: { email: address.toUpperCase() } })
  assert.equal(first.status, 202)
  const again = await api('/api/labs/kit-waitlist', { body: { email: address } })
  assert.equal(again.status, 202)
  assert.deepEqual(again.body, first.body, 'the reply does not tell whether the address was there')
  assert.equal(
    (await sql`select count(*)::int as n from public.labs_kit_waitlist where email = ${address}`)[0].n,
    1,
  )
  assertError(await api('/api/labs/kit-waitlist', { body: { email: 'not-an-address' } }), 400, 'email')

  const u = await createUser()
  assertError(await api('/api/labs/admin/kit-waitlist', { token: u.token }), 403)
  assertError(await api('/api/labs/admin/kit-waitlist'), 401)
  const { data } = await clientAs().from('labs_kit_waitlist').select('email')
  assert.deepEqual(data ?? [], [], 'anonymous PostgREST reads nothing')
  const { data: own } = await clientAs(u.token).from('labs_kit_waitlist').select('email')
  assert.deepEqual(own, [])

  const view = await api('/api/labs/admin/kit-waitlist?limit=100', { token: admin.token })
  assert.equal(view.status, 200)
  assert.ok(view.body.signups.some((s: { email: string }) => s.email === address))
  // The gate: more than 200 signups within 30 days of launch.
  const launch = '2031-03-01'
  await sql`insert into public.labs_kit_waitlist (email, created_at)
            select 'gate-' || g || '-' || ${address}, '2031-03-02'::timestamptz + g * interval '1 hour' from generate_series(1, 200) g`
  const at200 = await api(`/api/labs/admin/kit-waitlist?launch_date=${launch}`, { token: admin.token })
  assert.equal(at200.body.signups_within_30_days_of_launch, 200)
  assert.equal(at200.body.gate_met, false)
  await sql`insert into public.labs_kit_waitlist (email, created_at) values (${
    'late-' + address
  }, '2031-04-15')`
  assert.equal(
    (await api(`/api/labs/admin/kit-waitlist?launch_date=${launch}`, { token: admin.token })).body.gate_met,
    false,
    'outside the 30 days',
  )
  await sql`insert into public.labs_kit_waitlist (email, created_at) values (${
    'in-' + address
  }, '2031-03-30')`
  const met = await api(`/api/labs/admin/kit-waitlist?launch_date=${launch}`, { token: admin.token })
  assert.equal(met.body.signups_within_30_days_of_launch, 201)
  assert.equal(met.body.gate_met, true)
  assertError(
    await api('/api/labs/admin/kit-waitlist?launch_date=2031-02-30', { token: admin.token }),
    400,
    'launch_date',
  )
  await sql`delete from public.labs_kit_waitlist where created_at >= '2031-01-01'`
})

test('kit waitlist through PostgREST: a listed address gets the same answer as a new one, anonymous or signed in', async () => {
  const user = await createUser()
  const someoneElse = await createUser()
  const listed = `kit-listed-${crypto.randomUUID().slice(0, 8)}@example.org`
  assert.equal((await api('/api/labs/kit-waitlist', { body: { email: listed } })).status, 202)
  const fresh = () => `kit-new-${crypto.randomUUID().slice(0, 8)}@example.org`
  const shape = (r: Awaited<ReturnType<typeof rest>>) =>
    JSON.stringify([
      r.status,
      r.body?.code ?? null,
      r.headers.get('content-range'),
      r.headers.get('location') !== null,
      typeof r.body?.message === 'string'
        ? r.body.message.replace(/kit-(new|listed)-[0-9a-f]+/g, '<address>')
        : r.text,
    ])
  const variants: Array<
    [string, (email: string) => unknown, string | undefined, Record<string, string>, string?]
  > = [
    ['anonymous', (email) => ({ email }), undefined, {}],
    ['anonymous, upper case', (email) => ({ email: email.toUpperCase() }), undefined, {}],
    ['anonymous, counted', (email) => ({ email }), undefined, { prefer: 'count=exact' }],
    ['anonymous, headers only', (email) => ({ email }), undefined, { prefer: 'return=headers-only' }],
    ['anonymous, a list', (email) => [{ email }], undefined, {}],
    ['anonymous, upsert ignoring duplicates', (email) => ({ email }), undefined, {
      prefer: 'resolution=ignore-duplicates',
    }, '?on_conflict=email'],
    ['anonymous, upsert merging duplicates', (email) => ({ email }), undefined, {
      prefer: 'resolution=merge-duplicates',
    }, '?on_conflict=email'],
    ['anonymous naming a user', (email) => ({ email, user_id: user.id }), undefined, {}],
    ['signed in as themselves', (email) => ({ email, user_id: user.id }), user.token, {}],
    ['signed in naming another user', (email) => ({ email, user_id: someoneElse.id }), user.token, {}],
  ]
  for (const [label, body, token, headers, query = ''] of variants) {
    const forNew = await rest(`labs_kit_waitlist${query}`, { body: body(fresh()), token, headers })
    const forListed = await rest(`labs_kit_waitlist${query}`, { body: body(listed), token, headers })
    assert.equal(
      shape(forListed),
      shape(forNew),
      `${label}: ${forListed.status} ${forListed.text} vs ${forNew.status} ${forNew.text}`,
    )
  }
  assert.equal(
    (await sql`select count(*)::int as n from public.labs_kit_waitlist where email = ${listed}`)[0].n,
    1,
  )
  const bad = await rest('labs_kit_waitlist', { body: { email: 'not-an-address' } })
  assert.equal(bad.status, 400, bad.text)
  assert.match(bad.body.message, /email/)
  // Two sign-ups of one new address at once: one row, the same answer for both.
  const racing = fresh()
  const both = await Promise.all([
    rest('labs_kit_waitlist', { body: { email: racing } }),
    rest('labs_kit_waitlist', { body: { email: racing } }),
  ])
  assert.equal(shape(both[0]), shape(both[1]))
  assert.equal(
    (await sql`select count(*)::int as n from public.labs_kit_waitlist where email = ${racing}`)[0].n,
    1,
  )
})
