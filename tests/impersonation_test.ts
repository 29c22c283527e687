// Impersonation: who may start it, the token it returns (short-lived, act claim), a stopped or
// expired session refused on every path (PostgREST, /api, storage; reads and writes), every
// write of a session audited whatever the table or path, and the immutable audit trail.
import { strict as assert } from 'node:assert'
import { decodeJwt } from 'jose'
import { HttpError } from '../functions/_shared/errors.ts'
import { signingSecret } from '../functions/api/routes/impersonation.ts'
import { connected } from './_music.ts'
import { createPack } from './_tone_packs.ts'
import {
  ANON_KEY,
  api,
  API_URL,
  apiFetch,
  assertError,
  clientAs,
  createUser,
  JWT_SECRET,
  SERVICE_ROLE_KEY,
  signClaims,
  sql,
  test,
  type TestUser,
} from './_helpers.ts'
import { hhmm, middayZone, plainPng } from './_workout_photos.ts'

const admin = await createUser({ superAdmin: true, prefix: 'imp-admin' })

// No product bucket takes client uploads (only the api writes check-in photos and pack
// images), so the direct Storage path is probed on a bucket of this test's own: users upload
// into their own folder, as a client-writable bucket of an app would let them.
const PROBE = 'impersonation-probe'
await sql.begin(async (tx) => {
  await tx`insert into storage.buckets (id, name, public) values (${PROBE}, ${PROBE}, false) on conflict (id) do nothing`
  for (
    const [name, command, clause] of [
      ['probe: users upload into their own folder', 'insert', 'with check'],
      ['probe: users read their own folder', 'select', 'using'],
    ]
  ) {
    await tx.unsafe(`do $$ begin
      if not exists (select 1 from pg_policies where schemaname = 'storage' and tablename = 'objects' and policyname = '${name}') then
        create policy "${name}" on storage.objects for ${command} to authenticated
          ${clause} (bucket_id = '${PROBE}' and (storage.foldername(name))[1] = (select auth.uid())::text);
      end if; end $$`)
  }
})

/** Starts a session as the admin; returns its id and token. */
async function impersonate(target: TestUser, reason = 'Ticket 77: cannot see her journal') {
  const res = await api('/api/admin/impersonation', {
    token: admin.token,
    body: { user_id: target.id, reason },
  })
  assert.equal(res.status, 201, JSON.stringify(res.body))
  return { sessionId: res.body.session_id as string, token: res.body.access_token as string }
}

/** A raw PostgREST call through the gateway (status and JSON body). */
async function rest(token: string, path: string, init: { method?: string; body?: unknown } = {}) {
  const res = await fetch(`${API_URL}/rest/v1${path}`, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers: { apikey: ANON_KEY, authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  })
  const text = await res.text()
  return { status: res.status, body: text ? JSON.parse(text) : null }
}

/** A storage call through the gateway: an upload (bytes) or a listing (JSON). */
async function storage(token: string, path: string, body: Uint8Array | Record<string, unknown>) {
  const raw = body instanceof Uint8Array
  const res = await fetch(`${API_URL}/storage/v1${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': raw ? 'image/png' : 'application/json' },
    body: raw ? body as Uint8Array<ArrayBuffer> : JSON.stringify(body),
  })
  const text = await res.text()
  return { status: res.status, body: text ? JSON.parse(text) : null }
}

const ENDED = /impersonation session has ended/i

/** 401 saying the session has ended: {error} from /api, PostgREST's {message}, Storage's {error, message}. */
function assertEnded(res: { status: number; body: any }, what: string) {
  assert.equal(res.status, 401, `${what}: ${JSON.stringify(res.body)}`)
  assert.match(
    String(res.body?.error ?? '') + ' ' + String(res.body?.message ?? ''),
    ENDED,
    `${what}: ${JSON.stringify(res.body)}`,
  )
}

const auditOf = async (sessionId: string) =>
  (await sql`select to_jsonb(w) as r from public.impersonation_writes w where session_id = ${sessionId} order by id`)
    .map(({ r }) => ({ kind: 'write', actor_role: 'authenticated', ...r }))

/** A user with a journal entry, her ledger (the signup bonus), a connected music account. */
async function alice() {
  const user = await createUser({ prefix: 'alice' })
  const entry = await api('/api/journal', {
    token: user.token,
    body: { title: 'Private thoughts', content: 'only mine' },
  })
  assert.equal(entry.status, 201, JSON.stringify(entry.body))
  await connected(user)
  return user
}

/** An open competition and a free public pack of someone else, for the target to join and buy. */
async function thingsToJoinAndBuy() {
  const slug = `imp-${crypto.randomUUID().slice(0, 8)}`
  const created = await api('/api/labs/admin/competitions', {
    token: admin.token,
    body: { slug, title: 'Impersonation cup' },
  })
  assert.equal(created.status, 201, JSON.stringify(created.body))
  const seller = await createUser({ prefix: 'seller' })
  const pack = await createPack(seller, { is_public: true })
  return { slug, packId: pack.id as string }
}

/**
 * Every path an impersonation could take, as the given token: reads (/api journal, PostgREST ledger, a storage
 * listing) and writes (labs submissions, a free purchase, a competition join, a music purge, a
 * PostgREST write, a storage upload into the target's folder).
 */
function everyPath(token: string, target: TestUser, o: { slug: string; packId: string }) {
  return {
    'GET /api/journal': () => api('/api/journal', { token }),
    'POST /api/auth/verify': () => api('/api/auth/verify', { body: { token } }),
    'GET /rest/v1/drops_transactions': () => rest(token, '/drops_transactions?select=id,amount'),
    [`POST /storage/v1/object/list/${PROBE}`]: () =>
      storage(token, `/object/list/${PROBE}`, { prefix: target.id }),
    'POST /api/labs/sponsors': () =>
      api('/api/labs/sponsors', {
        token,
        body: { name: 'Acme', tier: 'gold', contact_email: 'a@acme.test', contact_name: 'A' },
      }),
    'POST /api/labs/videos': () =>
      api('/api/labs/videos', { token, body: { title: 'My dream', video_url: 'https://video.test/v' } }),
    'POST /api/tone-packs/:id/purchase (free)': () =>
      api(`/api/tone-packs/${o.packId}/purchase`, { method: 'POST', token }),
    'POST /api/labs/competitions/:slug/join': () =>
      api(`/api/labs/competitions/${o.slug}/join`, { method: 'POST', token }),
    'DELETE /api/music/connection?purge=true': () =>
      api('/api/music/connection?purge=true', { method: 'DELETE', token }),
    'POST /rest/v1/rpc/labs_submit_sponsor': () =>
      rest(token, '/rpc/labs_submit_sponsor', {
        body: { name: 'Direct', tier: 'gold', contact_email: 'd@x.test', contact_name: 'D' },
      }),
    [`POST /storage/v1/object/${PROBE}/<her folder>`]: () =>
      storage(token, `/object/${PROBE}/${target.id}/upload-${crypto.randomUUID()}.png`, plainPng()),
  }
}

/** What the target owns of everything the paths above could write. */
const footprint = async (userId: string) =>
  (await sql`select (select count(*) from private.labs_sponsor_private where applicant_id = ${userId})::int as sponsors,
                    (select count(*) from private.labs_dream_video_private where submitter_id = ${userId})::int as videos,
                    (select count(*) from public.tone_pack_purchases where user_id = ${userId})::int as purchases,
                    (select count(*) from public.labs_competition_participants where user_id = ${userId})::int as competitions,
                    (select count(*) from public.music_connections where user_id = ${userId})::int as music,
                    (select count(*) from storage.objects where bucket_id in ('tone-packs', ${PROBE}) and name like ${
    userId + '/%'
  })::int as objects`)[0]

test('start: super admin only, reason mandatory, never a super admin or an inactive user; nothing written when refused', async () => {
  const [user, target, other, inactive] = await Promise.all([
    createUser(),
    createUser(),
    createUser({ superAdmin: true }),
    createUser(),
  ])
  await sql`update public.profiles set is_active = false where id = ${inactive.id}`
  const count = async () =>
    (await sql`select count(*)::int as n from public.impersonation_audit where target_id in (${target.id}, ${other.id}, ${inactive.id})`)[
      0
    ].n
  assertError(
    await api('/api/admin/impersonation', {
      token: user.token,
      body: { user_id: target.id, reason: 'support' },
    }),
    403,
  )
  assertError(await api('/api/admin/impersonation', { body: { user_id: target.id, reason: 'support' } }), 401)
  assertError(
    await api('/api/admin/impersonation', { token: admin.token, body: { user_id: target.id } }),
    400,
    'reason',
  )
  assertError(
    await api('/api/admin/impersonation', { token: admin.token, body: { user_id: target.id, reason: '  ' } }),
    400,
    'reason',
  )
  assertError(
    await api('/api/admin/impersonation', { token: admin.token, body: { user_id: other.id, reason: 'x' } }),
    403,
    'super admins',
  )
  assertError(
    await api('/api/admin/impersonation', {
      token: admin.token,
      body: { user_id: inactive.id, reason: 'x' },
    }),
    409,
    'inactive',
  )
  assertError(
    await api('/api/admin/impersonation', {
      token: admin.token,
      body: { user_id: crypto.randomUUID(), reason: 'x' },
    }),
    404,
  )
  assert.equal(await count(), 0)
})

test('the token: at most 15 minutes, the target as subject, the admin in act; writes are attributed; stop ends it', async () => {
  const target = await createUser()
  const started = await api('/api/admin/impersonation', {
    token: admin.token,
    body: { user_id: target.id, reason: 'Ticket 4521: cannot save entries' },
  })
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
  const entry = await api('/api/journal', {
    token,
    body: { title: 'Written while impersonated', content: 'x' },
  })
  assert.equal(entry.status, 201, JSON.stringify(entry.body))
  const writes =
    await sql`select admin_id, target_id, table_name, operation, row_id from public.impersonation_writes where session_id = ${started.body.session_id}`
  assert.ok(
    writes.some((w) =>
      w.table_name === 'public.journal_entries' && w.row_id === entry.body.entry.id &&
      w.admin_id === admin.id && w.operation === 'INSERT'
    ),
    JSON.stringify(writes),
  )
  // The target's own writes (own token) are not recorded.
  await api('/api/journal', { token: target.token, body: { title: 'My own', content: 'y' } })
  assert.equal(
    (await sql`select count(*)::int as n from public.impersonation_writes where target_id = ${target.id}`)[0]
      .n,
    writes.length,
  )

  // An impersonation token cannot start another session.
  assertError(
    await api('/api/admin/impersonation', { token, body: { user_id: target.id, reason: 'x' } }),
    403,
  )

  const stopped = await api('/api/admin/impersonation/stop', { token, body: {} })
  assert.deepEqual(stopped.body, { session_id: started.body.session_id, stopped: true })
  assert.equal(
    (await api('/api/admin/impersonation/stop', {
      token: admin.token,
      body: { session_id: started.body.session_id },
    })).body.stopped,
    false,
  )
  // After stop, the token writes nothing (even before it expires), not even a second stop.
  assertError(
    await api('/api/journal', { token, body: { title: 'After stop', content: 'z' } }),
    401,
    'impersonation session has ended',
  )
  assertError(
    await api('/api/admin/impersonation/stop', { token, body: {} }),
    401,
    'impersonation session has ended',
  )
  const { error } = await clientAs(token).from('journal_entries').update({ title: 'nope' }).eq(
    'id',
    entry.body.entry.id,
  )
  assert.match(error?.message ?? '', ENDED)
  assert.equal(
    (await sql`select title from public.journal_entries where id = ${entry.body.entry.id}`)[0].title,
    'Written while impersonated',
  )

  const audit = await api('/api/admin/impersonation/audit', { token: admin.token })
  const rows = audit.body.audit.filter((r: { session_id: string }) =>
    r.session_id === started.body.session_id
  )
  assert.deepEqual(rows.map((r: { event: string }) => r.event).sort(), ['start', 'stop'])
  assert.equal(rows[0].reason, 'Ticket 4521: cannot save entries')
  assert.equal(rows[0].admin_id, admin.id)
  assert.ok(audit.body.writes.some((w: { row_id: string }) => w.row_id === entry.body.entry.id))
})

test("stop: someone else's session is 403 for a user; unknown session 404; audit is super admins only", async () => {
  const target = await createUser()
  const s = await api('/api/admin/impersonation', {
    token: admin.token,
    body: { user_id: target.id, reason: 'check' },
  })
  const stranger = await createUser()
  assertError(
    await api('/api/admin/impersonation/stop', {
      token: stranger.token,
      body: { session_id: s.body.session_id },
    }),
    403,
  )
  assertError(
    await api('/api/admin/impersonation/stop', {
      token: admin.token,
      body: { session_id: crypto.randomUUID() },
    }),
    404,
  )
  assertError(
    await api('/api/admin/impersonation/stop', { token: stranger.token, body: {} }),
    400,
    'session_id',
  )
  assertError(await api('/api/admin/impersonation/audit', { token: stranger.token }), 403)
  assertError(await api('/api/admin/impersonation/audit'), 401)
  const { data } = await clientAs(stranger.token).from('impersonation_audit').select('*')
  assert.deepEqual(data, [])
})

test('audit rows cannot be edited or deleted, by a super admin through PostgREST or by the database owner', async () => {
  const target = await createUser()
  const s = await api('/api/admin/impersonation', {
    token: admin.token,
    body: { user_id: target.id, reason: 'immutability' },
  })
  const db = clientAs(admin.token)
  assert.ok(
    (await db.from('impersonation_audit').update({ reason: 'edited' }).eq('session_id', s.body.session_id))
      .error,
  )
  assert.ok((await db.from('impersonation_audit').delete().eq('session_id', s.body.session_id)).error)
  await assert.rejects(
    sql`update public.impersonation_audit set reason = 'edited' where session_id = ${s.body.session_id}`,
    /never changed/,
  )
  await assert.rejects(
    sql`delete from public.impersonation_audit where session_id = ${s.body.session_id}`,
    /never changed/,
  )
  assert.equal(
    (await sql`select reason from public.impersonation_audit where session_id = ${s.body.session_id}`)[0]
      .reason,
    'immutability',
  )
})

test('a project without an HS256 secret (asymmetric signing keys only) answers 501 with the reason', () => {
  assert.throws(
    () => signingSecret(() => undefined),
    (e: unknown) => e instanceof HttpError && e.status === 501 && /asymmetric/.test(e.message),
  )
  assert.deepEqual(
    signingSecret((k) => (k === 'SUPABASE_JWT_SECRET' ? 'legacy' : undefined)),
    new TextEncoder().encode('legacy'),
  )
})

test('a stopped session is refused everywhere from the next request on, reads included; ordinary tokens and other sessions are not', async () => {
  const [target, things] = await Promise.all([alice(), thingsToJoinAndBuy()])
  const { sessionId, token } = await impersonate(target)
  // Live: the token reads her journal and ledger.
  assert.equal((await api('/api/journal', { token })).status, 200)
  const ledger = await rest(token, '/drops_transactions?select=id,amount')
  assert.equal(ledger.status, 200)
  assert.ok(ledger.body.length > 0, 'the signup bonus')

  assert.deepEqual(
    (await api('/api/admin/impersonation/stop', { token: admin.token, body: { session_id: sessionId } }))
      .body,
    { session_id: sessionId, stopped: true },
  )
  const before = await footprint(target.id)
  for (const [what, call] of Object.entries(everyPath(token, target, things))) assertEnded(await call(), what)
  assert.deepEqual(await footprint(target.id), before, 'nothing was written after the stop')

  // Her own token, and another (live) session of the same admin, are unaffected.
  const second = await impersonate(target, 'Ticket 78: second look')
  for (const t of [target.token, second.token]) {
    assert.equal((await api('/api/journal', { token: t })).status, 200)
    const own = await rest(t, '/drops_transactions?select=id,amount')
    assert.equal(own.status, 200)
    assert.deepEqual(own.body, ledger.body)
    assert.equal(
      (await storage(t, `/object/${PROBE}/${target.id}/ok-${crypto.randomUUID()}.png`, plainPng())).status,
      200,
    )
  }
  assert.equal((await api('/api/admin/impersonation/audit', { token: admin.token })).status, 200)
})

test('an expired session is refused everywhere even while its token is still valid', async () => {
  const [target, things] = await Promise.all([alice(), thingsToJoinAndBuy()])
  // The database decides: a session past its expiry, with a token that would still pass its exp.
  const sessionId = crypto.randomUUID()
  await sql`insert into public.impersonation_audit (session_id, event, admin_id, target_id, reason, expires_at)
            values (${sessionId}, 'start', ${admin.id}, ${target.id}, 'expired on purpose', now() - interval '1 second')`
  const token = await signClaims(
    {
      sub: target.id,
      email: target.email,
      role: 'authenticated',
      aud: 'authenticated',
      act: { sub: admin.id },
      impersonation_session: sessionId,
    },
    JWT_SECRET,
    600,
  )
  const before = await footprint(target.id)
  for (const [what, call] of Object.entries(everyPath(token, target, things))) assertEnded(await call(), what)
  assert.deepEqual(await footprint(target.id), before)
  assert.deepEqual(await auditOf(sessionId), [], 'an ended session records nothing either')
})

test('every write of a session is audited whatever the table or path: labs, purchase, competition, music, e-mail, check-in, storage', async () => {
  const [target, things] = await Promise.all([alice(), thingsToJoinAndBuy()])
  await sql`update auth.users set email_confirmed_at = now() where id = ${target.id}`
  const zone = middayZone()
  const start = new Date(zone.local.getTime() - 10 * 60_000)
  const windowSet = await api('/api/workout-window/setup', {
    token: target.token,
    body: {
      activityType: 'cardio',
      windowStartTime: hhmm(start),
      windowEndTime: hhmm(new Date(start.getTime() + 2 * 3600_000)),
      timezone: zone.tz,
    },
  })
  assert.equal(windowSet.status, 200, JSON.stringify(windowSet.body))
  const { sessionId, token } = await impersonate(target)

  const ok = (res: { status: number; body: any }, what: string) =>
    assert.ok(res.status >= 200 && res.status < 300, `${what}: ${res.status} ${JSON.stringify(res.body)}`)
  const paths = everyPath(token, target, things)
  const sponsor = await paths['POST /api/labs/sponsors']()
  ok(sponsor, 'sponsor')
  const purchase = await paths['POST /api/tone-packs/:id/purchase (free)']()
  ok(purchase, 'purchase')
  ok(await paths['POST /api/labs/competitions/:slug/join'](), 'join')
  ok(await paths['DELETE /api/music/connection?purge=true'](), 'music')
  const mail = await api('/api/email/send', {
    token,
    body: { to: target.email, subject: 'From support', text: 'Hello' },
  })
  ok(mail, 'e-mail')
  const form = new FormData()
  form.append('photo', new File([plainPng() as Uint8Array<ArrayBuffer>], 'p.png', { type: 'image/png' }))
  form.append('activityType', 'walk')
  const checkinRes = await apiFetch('/api/workout-window/checkin', {
    method: 'POST',
    headers: { authorization: `Bearer ${token}` },
    body: form,
  })
  const checkin = { status: checkinRes.status, body: await checkinRes.json() }
  ok(checkin, 'check-in')
  const objectName = `${target.id}/direct-${crypto.randomUUID()}.png`
  ok(await storage(token, `/object/${PROBE}/${objectName}`, plainPng()), 'storage upload')
  // What the api's service-role storage calls send inside an impersonated request: the store
  // passes the header on to the database, as hosted Storage does.
  const apiObject = `${target.id}/by-api-${crypto.randomUUID()}.png`
  const byApi = await fetch(`${API_URL}/storage/v1/object/tone-packs/${apiObject}`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${SERVICE_ROLE_KEY}`,
      apikey: SERVICE_ROLE_KEY,
      'content-type': 'image/png',
      'x-impersonation-session': sessionId,
    },
    body: plainPng() as Uint8Array<ArrayBuffer>,
  })
  assert.equal(byApi.status, 200, await byApi.text())

  const audit = await auditOf(sessionId)
  assert.ok(
    audit.every((r) => r.admin_id === admin.id && r.target_id === target.id),
    'every row names the impersonator and the target',
  )
  const wrote = (table: string, operation: string, actor = 'authenticated', rowId?: string) =>
    assert.ok(
      audit.some((r) =>
        r.kind === 'write' && r.table_name === table && r.operation === operation && r.actor_role === actor &&
        (rowId === undefined || r.row_id === rowId)
      ),
      `${operation} ${table} by ${actor}${rowId ? ` (${rowId})` : ''}: ${JSON.stringify(audit)}`,
    )
  // Labs: the public row and its private contact row (written by a security definer function).
  wrote('public.labs_sponsors', 'INSERT', 'authenticated', sponsor.body.sponsor.id)
  wrote('private.labs_sponsor_private', 'INSERT')
  wrote('public.tone_pack_purchases', 'INSERT', 'authenticated', purchase.body.purchase.id)
  wrote('public.labs_competition_participants', 'INSERT')
  wrote('public.music_connections', 'DELETE')
  wrote('private.music_tokens', 'DELETE')
  // E-mail: logged as the token, finished by the api with the service role for the session.
  wrote('public.email_messages', 'INSERT', 'authenticated', mail.body.email.id)
  wrote('public.email_messages', 'UPDATE', 'service_role', mail.body.email.id)
  // Check-in: the check-in as the token, its photo stored by the api (today with the service role).
  wrote('public.workout_checkins', 'INSERT', 'authenticated', checkin.body.checkin.id)
  const storedIds = audit.filter((r) => r.table_name === 'storage.objects' && r.operation === 'INSERT').map((
    r,
  ) => r.row_id)
  const photos =
    await sql`select id from storage.objects where bucket_id = 'workout-checkins' and id::text = any(${storedIds})`
  assert.equal(photos.length, 1, `the check-in photo's object row: ${JSON.stringify(audit)}`)
  const [direct] =
    await sql`select id::text from storage.objects where bucket_id = ${PROBE} and name = ${objectName}`
  wrote('storage.objects', 'INSERT', 'authenticated', direct.id)
  const [viaApi] =
    await sql`select id::text from storage.objects where bucket_id = 'tone-packs' and name = ${apiObject}`
  wrote('storage.objects', 'INSERT', 'service_role', viaApi.id)
  // Every mutating /api request is recorded before it ran (side effects outside the database too).
  const requests = audit.filter((r) => r.kind === 'request').map((r) => `${r.operation} ${r.detail.path}`)
  for (
    const expected of [
      'POST /api/labs/sponsors',
      `POST /api/tone-packs/${things.packId}/purchase`,
      `POST /api/labs/competitions/${things.slug}/join`,
      'DELETE /api/music/connection?purge=true',
      'POST /api/email/send',
      'POST /api/workout-window/checkin',
    ]
  ) {
    assert.ok(requests.some((r) => r.endsWith(expected)), `${expected} in ${JSON.stringify(requests)}`)
  }
  // Reads leave no rows; her own writes leave none either.
  const rows = audit.length
  assert.equal((await api('/api/journal', { token })).status, 200)
  await api('/api/labs/sponsors', {
    token: target.token,
    body: { name: 'Mine', tier: 'gold', contact_email: 'm@x.test', contact_name: 'M' },
  })
  // Her own token with the api's session header: her write is hers, not the session's (only the
  // service role may name a session).
  const res = await fetch(`${API_URL}/rest/v1/rpc/labs_submit_sponsor`, {
    method: 'POST',
    headers: {
      apikey: ANON_KEY,
      authorization: `Bearer ${target.token}`,
      'content-type': 'application/json',
      'x-impersonation-session': sessionId,
    },
    body: JSON.stringify({ name: 'Hers', tier: 'gold', contact_email: 'h@x.test', contact_name: 'H' }),
  })
  assert.equal(res.status, 200, await res.text())
  assert.equal((await auditOf(sessionId)).length, rows)
})

test('a session ends when its admin is demoted or deactivated, or its target deactivated or promoted', async () => {
  const [target, otherAdmin] = await Promise.all([
    alice(),
    createUser({ superAdmin: true, prefix: 'imp-admin2' }),
  ])
  const start = async (by: TestUser) => {
    const res = await api('/api/admin/impersonation', {
      token: by.token,
      body: { user_id: target.id, reason: 'Ticket 9: demotion' },
    })
    assert.equal(res.status, 201, JSON.stringify(res.body))
    return res.body.access_token as string
  }
  const live = async (token: string) =>
    (await api('/api/journal', { token })).status === 200 &&
    (await rest(token, '/drops_transactions?select=id')).status === 200

  const byOther = await start(otherAdmin)
  assert.ok(await live(byOther))
  await sql`update public.profiles set role = 'user' where id = ${otherAdmin.id}`
  assertEnded(await api('/api/journal', { token: byOther }), "a demoted admin's session, /api")
  assertEnded(await rest(byOther, '/drops_transactions?select=id'), "a demoted admin's session, PostgREST")
  assertEnded(
    await api('/api/labs/sponsors', {
      token: byOther,
      body: { name: 'Late', tier: 'gold', contact_email: 'l@x.test', contact_name: 'L' },
    }),
    "a demoted admin's session writes nothing",
  )

  const byAdmin = await start(admin)
  assert.ok(await live(byAdmin))
  await sql`update public.profiles set is_active = false where id = ${target.id}`
  try {
    assertEnded(await api('/api/journal', { token: byAdmin }), "a deactivated target's session")
  } finally {
    await sql`update public.profiles set is_active = true where id = ${target.id}`
  }

  // A target made a super admin mid-session: the token must not carry admin powers.
  const promoted = await start(admin)
  assert.ok(await live(promoted))
  await sql`update public.profiles set role = 'super_admin' where id = ${target.id}`
  try {
    assertEnded(await api('/api/admin/jobs', { token: promoted }), "a promoted target's session, /api")
    assertEnded(await rest(promoted, '/rpc/admin_cron_jobs'), "a promoted target's session, PostgREST")
  } finally {
    await sql`update public.profiles set role = 'user' where id = ${target.id}`
  }
})

test('inside a session, linking a music account and starting a checkout are refused (403), on every path; the user may', async () => {
  const target = await createUser({ prefix: 'imp-links' })
  const { sessionId, token } = await impersonate(target)
  assertError(await api('/api/music/connect', { method: 'POST', token }), 403, 'impersonating')
  assertError(
    await api('/api/payment/create-checkout-session', {
      token,
      body: {
        priceId: 'price_premium_monthly',
        successUrl: 'http://127.0.0.1:3000/billing/ok',
        cancelUrl: 'http://127.0.0.1:3000/billing',
      },
    }),
    403,
    'impersonating',
  )
  const direct = await rest(token, '/rpc/music_begin_connect', {
    body: { state_hash: 'a'.repeat(64), code_verifier: 'v'.repeat(43) },
  })
  assert.equal(direct.status, 403, JSON.stringify(direct.body))
  assert.equal(
    (await sql`select 1 from private.music_oauth_states where user_id = ${target.id}`).length,
    0,
    'no login was begun',
  )
  assert.equal(
    (await sql`select 1 from private.stripe_customers where user_id = ${target.id}`).length,
    0,
    'no customer was made',
  )
  // The refusals are recorded as requests of the session, like everything it tried.
  const requests = (await auditOf(sessionId)).filter((r) => r.kind === 'request').map((r) => r.detail.path)
  assert.ok(requests.some((p: string) => p.endsWith('/api/music/connect')), JSON.stringify(requests))
  // Her own token begins a login.
  const own = await rest(target.token, '/rpc/music_begin_connect', {
    body: { state_hash: 'b'.repeat(64), code_verifier: 'w'.repeat(43) },
  })
  assert.equal(own.status, 200, JSON.stringify(own.body))
})

test('inside a session, the data export is refused (403) through /api and its RPC; the user exports hers', async () => {
  const target = await createUser({ prefix: 'imp-export' })
  const { token } = await impersonate(target)
  assertError(await api('/api/user/export?format=json', { token }), 403, 'impersonating')
  const direct = await rest(token, '/rpc/export_own_hidden_rows', { body: {} })
  assert.equal(direct.status, 403, JSON.stringify(direct.body))
  const own = await api('/api/user/export?format=json', { token: target.token })
  assert.equal(own.status, 200, JSON.stringify(own.body).slice(0, 300))
  assert.equal(own.body.user.id, target.id)
  assert.equal(own.body.impersonation_sessions.length, 1, 'her export lists the session of her account')
})

test('claims that merely mention impersonation_session (user_metadata) are an ordinary token', async () => {
  const user = await createUser({ prefix: 'imp-meta' })
  const token = await signClaims(
    {
      sub: user.id,
      email: user.email,
      role: 'authenticated',
      aud: 'authenticated',
      user_metadata: { nickname: 'impersonation_session', note: '"impersonation_session"' },
    },
    JWT_SECRET,
    600,
  )
  assert.equal((await api('/api/journal', { token })).status, 200)
  const own = await rest(token, '/profiles?select=id')
  assert.equal(own.status, 200, JSON.stringify(own.body))
  assert.deepEqual(own.body, [{ id: user.id }])
})

test("the audit page says when a session did more than it shows; each session's writes page newest first", async () => {
  const target = await createUser({ prefix: 'imp-many' })
  const { sessionId, token } = await impersonate(target)
  const goals = Array.from({ length: 600 }, (_, i) => ({ title: `Goal ${i}` }))
  const bulk = await rest(token, '/goals', { body: goals })
  assert.equal(bulk.status, 201, JSON.stringify(bulk.body))
  const sponsor = await api('/api/labs/sponsors', {
    token,
    body: { name: 'Last', tier: 'gold', contact_email: 'z@x.test', contact_name: 'Z' },
  })
  assert.equal(sponsor.status, 201)

  const audit = await api('/api/admin/impersonation/audit?limit=1', { token: admin.token })
  assert.equal(audit.status, 200, JSON.stringify(audit.body))
  assert.equal(audit.body.audit[0].session_id, sessionId)
  assert.equal(audit.body.writes.length, 500)
  assert.equal(audit.body.writes_truncated, true)
  assert.equal(
    audit.body.writes[0].table_name,
    'private.labs_sponsor_private',
    'newest first: the last write leads',
  )

  const seen = new Set<number>()
  let before: string | undefined
  for (let pages = 0; pages < 30; pages++) {
    const res = await api(
      `/api/admin/impersonation/sessions/${sessionId}/writes?limit=100${before ? `&before=${before}` : ''}`,
      { token: admin.token },
    )
    assert.equal(res.status, 200, JSON.stringify(res.body))
    for (const w of res.body.writes) seen.add(w.id)
    before = res.body.next_cursor ?? undefined
    if (!before) break
  }
  const total =
    (await sql`select count(*)::int as n from public.impersonation_writes where session_id = ${sessionId}`)[0]
      .n
  assert.ok(total > 602, `goals, the sponsor's rows and the requests: ${total}`)
  assert.equal(seen.size, total, 'paging reaches every row once')
  assertError(
    await api(`/api/admin/impersonation/sessions/${sessionId}/writes`, { token: target.token }),
    403,
  )
})

test('audit: ?target= narrows to one user\'s sessions (the console\'s user page); a bad target is 400 naming it', async () => {
  const [one, other] = [await createUser(), await createUser()]
  const a = await impersonate(one, 'Ticket 1: target filter')
  await impersonate(other, 'Ticket 2: someone else')
  await api('/api/admin/impersonation/stop', { token: a.token, body: {} })
  const res = await api(`/api/admin/impersonation/audit?target=${one.id}`, { token: admin.token })
  assert.equal(res.status, 200, JSON.stringify(res.body))
  assert.deepEqual(
    res.body.audit.map((r: { event: string; target_id: string; session_id: string }) => [r.event, r.target_id, r.session_id]),
    [['stop', one.id, a.sessionId], ['start', one.id, a.sessionId]],
  )
  assert.ok(res.body.writes.every((w: { session_id: string }) => w.session_id === a.sessionId))
  assertError(await api('/api/admin/impersonation/audit?target=nope', { token: admin.token }), 400, 'target')
})
