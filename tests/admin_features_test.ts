// The admin console's Features endpoints (routes/admin_features.ts): providers and limits without
// a secret value, the audited change of a write budget, the audit's history.
import { strict as assert } from 'node:assert'
import { api, assertError, createUser, sql, test } from './_helpers.ts'

const admin = await createUser({ superAdmin: true, prefix: 'features-admin' })

test('features: providers, caps and limits for super admins only, and no secret value in the reply', async () => {
  const plain = await createUser()
  assertError(await api('/api/admin/features', { token: plain.token }), 403)
  assertError(await api('/api/admin/features'), 401)

  const res = await api('/api/admin/features', { token: admin.token })
  assert.equal(res.status, 200)
  const ids = res.body.providers.map((p: { id: string }) => p.id).sort()
  assert.deepEqual(ids, ['ai', 'expo', 'music', 'resend', 'stripe', 'web_push'])
  for (const p of res.body.providers) {
    assert.equal(typeof p.configured, 'boolean')
    for (const v of p.variables) assert.deepEqual(Object.keys(v).sort(), ['name', 'required', 'set'])
  }
  // The test stack configures Stripe (its fake): reported configured, and its key nowhere.
  const stripe = res.body.providers.find((p: { id: string }) => p.id === 'stripe')
  assert.equal(stripe.configured, !!Deno.env.get('STRIPE_SECRET_KEY'))
  const text = JSON.stringify(res.body)
  for (
    const name of [
      'STRIPE_SECRET_KEY',
      'STRIPE_WEBHOOK_SECRET',
      'RESEND_API_KEY',
      'RESEND_WEBHOOK_SECRET',
      'AI_API_KEY',
      'EXPO_ACCESS_TOKEN',
      'WEB_PUSH_VAPID_PRIVATE_KEY',
      'MUSIC_CLIENT_SECRET',
      'SUPABASE_SERVICE_ROLE_KEY',
      'JWT_SECRET',
      'CRON_SECRET',
    ]
  ) {
    const value = Deno.env.get(name)
    if (value && value.length >= 6) assert.ok(!text.includes(value), `${name}'s value is in the reply`)
  }

  const limits = new Map(res.body.limits.map((l: { id: string }) => [l.id, l]))
  const tone: any = limits.get('ai_daily_cap:tone_analysis')
  assert.ok(tone, 'the AI daily cap of tone analysis')
  assert.ok(tone.source === 'database' || tone.where === 'AI_DAILY_CAP_TONE_ANALYSIS')
  const userDefault: any = limits.get('write_rate_limits:user:*')
  assert.equal(userDefault.source, 'database')
  assert.equal(userDefault.editable, true)
  const [row] = await sql`select max_writes from private.write_rate_limits where subject_kind = 'user' and subject = '*'`
  assert.equal(userDefault.value, row.max_writes)
  assert.equal((limits.get('labs_outreach') as any).value, 5)
  assert.equal((limits.get('email_daily_cap') as any).source, 'database')
  assert.ok(res.body.write_rate_limits.some((l: any) => l.subject_kind === 'address' && l.subject === '*'))
})

test('features: a write budget change is validated by field, applied, audited with old and new value, and listed', async () => {
  const target = await createUser({ prefix: 'features-target' })
  const plain = await createUser()
  const body = { subject_kind: 'user', subject: target.id, max_writes: 40, window_seconds: 60 }
  assertError(await api('/api/admin/features/write-rate-limits', { method: 'PUT', token: plain.token, body }), 403)
  assertError(
    await api('/api/admin/features/write-rate-limits', { method: 'PUT', token: admin.token, body: { ...body, max_writes: -1 } }),
    400,
    'max_writes',
  )
  assertError(
    await api('/api/admin/features/write-rate-limits', {
      method: 'PUT',
      token: admin.token,
      body: { ...body, window_seconds: 90000 },
    }),
    400,
    'window_seconds',
  )
  assertError(
    await api('/api/admin/features/write-rate-limits', { method: 'PUT', token: admin.token, body: { ...body, subject: 'nobody' } }),
    400,
    'subject',
  )
  assertError(
    await api('/api/admin/features/write-rate-limits', {
      method: 'PUT',
      token: admin.token,
      body: { ...body, subject_kind: 'address', subject: 'not-an-ip' },
    }),
    400,
    'subject',
  )
  assert.equal((await sql`select count(*)::int as n from private.setting_changes where setting like ${'%' + target.id}`)[0].n, 0)

  const first = await api('/api/admin/features/write-rate-limits', { method: 'PUT', token: admin.token, body })
  assert.equal(first.status, 200, JSON.stringify(first.body))
  assert.equal(first.body.change.setting, `write_rate_limits:user:${target.id}`)
  assert.equal(first.body.change.old_value, null, 'no row before')
  assert.deepEqual(first.body.change.new_value, { max_writes: 40, window_seconds: 60 })
  assert.equal(first.body.change.changed_by, admin.id)

  const second = await api('/api/admin/features/write-rate-limits', {
    method: 'PUT',
    token: admin.token,
    body: { ...body, max_writes: 45 },
  })
  assert.deepEqual(second.body.change.old_value, { max_writes: 40, window_seconds: 60 })
  assert.deepEqual(second.body.change.new_value, { max_writes: 45, window_seconds: 60 })
  const [limit] = await sql`select max_writes, window_seconds from private.write_rate_limits
                             where subject_kind = 'user' and subject = ${target.id}`
  assert.deepEqual({ ...limit }, { max_writes: 45, window_seconds: 60 })
  const audit = await sql`select changed_by, old_value, new_value from private.setting_changes
                           where setting = ${`write_rate_limits:user:${target.id}`} order by id`
  assert.equal(audit.length, 2)
  assert.equal(audit[1].changed_by, admin.id)
  assert.deepEqual(audit[1].old_value, { max_writes: 40, window_seconds: 60 })

  // An IPv6 address is stored as the /64 the limit counts by.
  const v6 = await api('/api/admin/features/write-rate-limits', {
    method: 'PUT',
    token: admin.token,
    body: { subject_kind: 'address', subject: '2001:db8:1:2::7', max_writes: 10, window_seconds: 300 },
  })
  assert.equal(v6.body.change.setting, 'write_rate_limits:address:2001:db8:1:2::/64')
  await sql`delete from private.write_rate_limits where subject_kind = 'address' and subject = '2001:db8:1:2::/64'`

  // The history: newest first, with who; paged.
  assertError(await api('/api/admin/features/changes', { token: plain.token }), 403)
  assertError(await api('/api/admin/features/changes?before=zzz', { token: admin.token }), 400, 'before')
  const page1 = await api('/api/admin/features/changes?limit=1', { token: admin.token })
  assert.equal(page1.status, 200)
  assert.equal(page1.body.changes.length, 1)
  assert.equal(page1.body.changes[0].setting, 'write_rate_limits:address:2001:db8:1:2::/64')
  assert.equal(page1.body.changes[0].changed_by_email, admin.email)
  const page2 = await api(`/api/admin/features/changes?limit=1&before=${encodeURIComponent(page1.body.next_cursor)}`, {
    token: admin.token,
  })
  assert.equal(page2.body.changes[0].id, second.body.change.id)
  await sql`delete from private.write_rate_limits where subject_kind = 'user' and subject = ${target.id}`
})

test('features: a default below 10 and an address range are refused by field; a super admin is never refused a write', async () => {
  const put = (token: string, body: Record<string, unknown>) =>
    api('/api/admin/features/write-rate-limits', { method: 'PUT', token, body })
  const before = await sql`select subject, max_writes from private.write_rate_limits where subject = '*' order by subject_kind`
  assertError(await put(admin.token, { subject_kind: 'user', subject: '*', max_writes: 0, window_seconds: 60 }), 400, 'max_writes')
  assertError(await put(admin.token, { subject_kind: 'address', subject: '*', max_writes: 9, window_seconds: 60 }), 400, 'max_writes')
  assertError(await put(admin.token, { subject_kind: 'address', subject: '10.0.0.0/8', max_writes: 5, window_seconds: 60 }), 400, 'subject')
  assertError(await put(admin.token, { subject_kind: 'address', subject: '::ffff:1.2.3.4', max_writes: 5, window_seconds: 60 }), 400, 'subject')
  assert.deepEqual(
    await sql`select subject, max_writes from private.write_rate_limits where subject = '*' order by subject_kind`,
    before,
    'no default changed',
  )

  // A budget of 0 for one admin (as a console slip would set it) stops an ordinary user, never an admin.
  const otherAdmin = await createUser({ superAdmin: true, prefix: 'features-admin2' })
  const plain = await createUser({ prefix: 'features-zero' })
  for (const who of [otherAdmin, plain]) {
    const set = await put(admin.token, { subject_kind: 'user', subject: who.id, max_writes: 0, window_seconds: 3600 })
    assert.equal(set.status, 200, JSON.stringify(set.body))
  }
  try {
    const tooMany = await api('/api/journal', { token: plain.token, body: { title: 't', content: 'c' } })
    assertError(tooMany, 429)
    const undo = await put(otherAdmin.token, { subject_kind: 'user', subject: otherAdmin.id, max_writes: 300, window_seconds: 300 })
    assert.equal(undo.status, 200, 'the admin set to 0 still sets it back')
  } finally {
    await sql`delete from private.write_rate_limits where subject in (${otherAdmin.id}, ${plain.id})`
  }
})
