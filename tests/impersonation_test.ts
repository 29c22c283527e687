// Impersonation: who may start it, the token it returns (short-lived, act claim), writes made
// with it attributed to the impersonator and refused after stop, and the immutable audit trail.
import { strict as assert } from 'node:assert'
import { decodeJwt } from 'jose'
import { HttpError } from '../functions/_shared/errors.ts'
import { signingSecret } from '../functions/api/routes/impersonation.ts'
import { api, assertError, clientAs, createUser, sql, test } from './_helpers.ts'

const admin = await createUser({ superAdmin: true, prefix: 'imp-admin' })

test('start: super admin only, reason mandatory, never a super admin or an inactive user; nothing written when refused', async () => {
  const [user, target, other, inactive] = await Promise.all([createUser(), createUser(), createUser({ superAdmin: true }), createUser()])
  await sql`update public.profiles set is_active = false where id = ${inactive.id}`
  const count = async () => (await sql`select count(*)::int as n from public.impersonation_audit where target_id in (${target.id}, ${other.id}, ${inactive.id})`)[0].n
  assertError(await api('/api/admin/impersonation', { token: user.token, body: { user_id: target.id, reason: 'support' } }), 403)
  assertError(await api('/api/admin/impersonation', { body: { user_id: target.id, reason: 'support' } }), 401)
  assertError(await api('/api/admin/impersonation', { token: admin.token, body: { user_id: target.id } }), 400, 'reason')
  assertError(await api('/api/admin/impersonation', { token: admin.token, body: { user_id: target.id, reason: '  ' } }), 400, 'reason')
  assertError(await api('/api/admin/impersonation', { token: admin.token, body: { user_id: other.id, reason: 'x' } }), 403, 'super admins')
  assertError(await api('/api/admin/impersonation', { token: admin.token, body: { user_id: inactive.id, reason: 'x' } }), 409, 'inactive')
  assertError(await api('/api/admin/impersonation', { token: admin.token, body: { user_id: crypto.randomUUID(), reason: 'x' } }), 404)
  assert.equal(await count(), 0)
})

test('the token: at most 15 minutes, the target as subject, the admin in act; writes are attributed; stop ends it', async () => {
  const target = await createUser()
  const started = await api('/api/admin/impersonation', { token: admin.token, body: { user_id: target.id, reason: 'Ticket 4521: cannot save entries' } })
  assert.equal(started.status, 201, JSON.stringify(started.body))
  const claims = decodeJwt(started.body.access_token)
  assert.equal(claims.sub, target.id)
  assert.deepEqual(claims.act, { sub: admin.id })
  assert.ok(claims.exp! - Math.floor(Date.now() / 1000) <= 15 * 60 + 5)
  assert.ok(claims.exp! - Math.floor(Date.now() / 1000) > 14 * 60)
  const token = started.body.access_token

  // Acting as the target through the API and through PostgREST.
  const profile = await api('/api/user/profile', { token })
  assert.equal(profile.status, 200)
  assert.equal(profile.body.id ?? profile.body.profile?.id, target.id)
  const entry = await api('/api/journal', { token, body: { title: 'Written while impersonated', content: 'x' } })
  assert.equal(entry.status, 201, JSON.stringify(entry.body))
  const writes = await sql`select admin_id, target_id, table_name, operation, row_id from public.impersonation_writes where session_id = ${started.body.session_id}`
  assert.ok(writes.some((w) => w.table_name === 'public.journal_entries' && w.row_id === entry.body.entry.id && w.admin_id === admin.id && w.operation === 'INSERT'),
    JSON.stringify(writes))
  // The target's own writes (own token) are not recorded.
  await api('/api/journal', { token: target.token, body: { title: 'My own', content: 'y' } })
  assert.equal((await sql`select count(*)::int as n from public.impersonation_writes where target_id = ${target.id}`)[0].n, writes.length)

  // An impersonation token cannot start another session.
  assertError(await api('/api/admin/impersonation', { token, body: { user_id: target.id, reason: 'x' } }), 403)

  const stopped = await api('/api/admin/impersonation/stop', { token, body: {} })
  assert.deepEqual(stopped.body, { session_id: started.body.session_id, stopped: true })
  assert.equal((await api('/api/admin/impersonation/stop', { token: admin.token, body: { session_id: started.body.session_id } })).body.stopped, false)
  // After stop, the token writes nothing (even before it expires).
  const after = await api('/api/journal', { token, body: { title: 'After stop', content: 'z' } })
  assertError(after, 403)
  const { error } = await clientAs(token).from('journal_entries').update({ title: 'nope' }).eq('id', entry.body.entry.id)
  assert.ok(error)
  assert.equal((await sql`select title from public.journal_entries where id = ${entry.body.entry.id}`)[0].title, 'Written while impersonated')

  const audit = await api('/api/admin/impersonation/audit', { token: admin.token })
  const rows = audit.body.audit.filter((r: { session_id: string }) => r.session_id === started.body.session_id)
  assert.deepEqual(rows.map((r: { event: string }) => r.event).sort(), ['start', 'stop'])
  assert.equal(rows[0].reason, 'Ticket 4521: cannot save entries')
  assert.equal(rows[0].admin_id, admin.id)
  assert.ok(audit.body.writes.some((w: { row_id: string }) => w.row_id === entry.body.entry.id))
})

test('stop: someone else\'s session is 403 for a user; unknown session 404; audit is super admins only', async () => {
  const target = await createUser()
  const s = await api('/api/admin/impersonation', { token: admin.token, body: { user_id: target.id, reason: 'check' } })
  const stranger = await createUser()
  assertError(await api('/api/admin/impersonation/stop', { token: stranger.token, body: { session_id: s.body.session_id } }), 403)
  assertError(await api('/api/admin/impersonation/stop', { token: admin.token, body: { session_id: crypto.randomUUID() } }), 404)
  assertError(await api('/api/admin/impersonation/stop', { token: stranger.token, body: {} }), 400, 'session_id')
  assertError(await api('/api/admin/impersonation/audit', { token: stranger.token }), 403)
  assertError(await api('/api/admin/impersonation/audit'), 401)
  const { data } = await clientAs(stranger.token).from('impersonation_audit').select('*')
  assert.deepEqual(data, [])
})

test('audit rows cannot be edited or deleted, by a super admin through PostgREST or by the database owner', async () => {
  const target = await createUser()
  const s = await api('/api/admin/impersonation', { token: admin.token, body: { user_id: target.id, reason: 'immutability' } })
  const db = clientAs(admin.token)
  assert.ok((await db.from('impersonation_audit').update({ reason: 'edited' }).eq('session_id', s.body.session_id)).error)
  assert.ok((await db.from('impersonation_audit').delete().eq('session_id', s.body.session_id)).error)
  await assert.rejects(sql`update public.impersonation_audit set reason = 'edited' where session_id = ${s.body.session_id}`, /never changed/)
  await assert.rejects(sql`delete from public.impersonation_audit where session_id = ${s.body.session_id}`, /never changed/)
  assert.equal((await sql`select reason from public.impersonation_audit where session_id = ${s.body.session_id}`)[0].reason, 'immutability')
})

test('a project without an HS256 secret (asymmetric signing keys only) answers 501 with the reason', () => {
  assert.throws(() => signingSecret(() => undefined), (e: unknown) => e instanceof HttpError && e.status === 501 && /asymmetric/.test(e.message))
  assert.deepEqual(signingSecret((k) => (k === 'SUPABASE_JWT_SECRET' ? 'legacy' : undefined)), new TextEncoder().encode('legacy'))
})
