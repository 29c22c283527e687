// Every /api {error} carries a stable machine-readable `code` (issue 39, part 6). The contract
// check (tests/_contract.ts) already fails any test whose error reply lacks a code or carries one
// the document does not list (the Error schema requires it); here: the document lists the codes,
// each of them is produced by a real path, and the product's named refusals reach PostgREST
// clients as the same code in `error.hint`.
import { strict as assert } from 'node:assert'
import { codeFor, fromDb, HttpError, NAMED_CODES } from '../functions/_shared/errors.ts'
import { ROUTE_CODES } from '../functions/api/openapi.ts'
import { app } from '../functions/api/app.ts'
import {
  api,
  clientAs,
  createUser,
  JWT_SECRET,
  orgWith,
  signClaims,
  sql,
  test,
  type TestUser,
} from './_helpers.ts'
import { createPack } from './_tone_packs.ts'
import { hhmm, middayZone, plainJpeg } from './_workout_photos.ts'

type Reply = { status: number; body: any }

/** What /api answers for an HttpError made in process (paths a test cannot reach on demand). */
const answered = (e: HttpError): Reply => ({ status: e.status, body: { error: e.message, code: e.code } })

async function tokenIssuedAgo(u: TestUser, minutesAgo: number) {
  const iat = Math.floor(Date.now() / 1000) - minutesAgo * 60
  return await signClaims({
    sub: u.id,
    aud: 'authenticated',
    role: 'authenticated',
    email: u.email,
    iat,
    exp: iat + 3600,
    session_id: crypto.randomUUID(),
  }, JWT_SECRET)
}

async function template() {
  const [row] = await sql`insert into public.encouragement_templates (type, title, content, is_approved)
    values ('encouragement', ${'T ' + crypto.randomUUID().slice(0, 6)}, 'Go!', true) returning id`
  return row.id as string
}

/** Sends drops until one is refused; the refusal. */
async function sendUntilRefused(body: (i: number) => Record<string, unknown>): Promise<Reply> {
  const [sender, recipient] = await Promise.all([createUser(), createUser()])
  for (let i = 0; i < 20; i++) {
    const res = await api('/api/encouragement-drops/send', {
      token: sender.token,
      body: { recipient_id: recipient.id, drop_type: 'encouragement', ...body(i) },
    })
    if (res.status !== 201) return res
  }
  throw new Error('20 drops were all sent')
}

async function impersonationEnded(): Promise<{ token: string }> {
  const [admin, target] = await Promise.all([createUser({ superAdmin: true }), createUser()])
  const started = await api('/api/admin/impersonation', {
    token: admin.token,
    body: { user_id: target.id, reason: 'Ticket 39: error codes' },
  })
  assert.equal(started.status, 201, JSON.stringify(started.body))
  const token = started.body.access_token as string
  const stop = await api('/api/admin/impersonation/stop', { token, body: {} })
  assert.equal(stop.status, 200, JSON.stringify(stop.body))
  return { token }
}

async function checkedInTwice(): Promise<Reply> {
  const user = await createUser()
  const zone = middayZone()
  const start = new Date(zone.local.getTime() - 10 * 60_000)
  const setup = await api('/api/workout-window/setup', {
    token: user.token,
    body: {
      activityType: 'cardio',
      windowStartTime: hhmm(start),
      windowEndTime: hhmm(new Date(start.getTime() + 2 * 3600_000)),
      timezone: zone.tz,
    },
  })
  assert.equal(setup.status, 200, JSON.stringify(setup.body))
  let last: Reply | undefined
  for (let i = 0; i < 2; i++) {
    const form = new FormData()
    form.append('photo', new File([plainJpeg() as Uint8Array<ArrayBuffer>], 'p.jpg', { type: 'image/jpeg' }))
    form.append('activityType', 'Cardio')
    const res = await fetch(`${Deno.env.get('SUPABASE_URL')}/functions/v1/api/workout-window/checkin`, {
      method: 'POST',
      headers: { authorization: `Bearer ${user.token}` },
      body: form,
    })
    last = { status: res.status, body: await res.json() }
    if (i === 0) assert.equal(res.status, 201, JSON.stringify(last.body))
  }
  return last!
}

const entryWithout = (level: 'team' | 'org') => async () =>
  api('/api/journal', {
    token: (await createUser()).token,
    body: { title: 't', content: 'c', metadata_visibility: level, content_visibility: level },
  })

/** A path that produces each documented code: through the stack where a test can reach it. */
const PRODUCERS: Record<string, () => Promise<Reply>> = {
  // Named refusals, through the stack.
  daily_allowance_exhausted: async () => {
    const tpl = await template()
    return await sendUntilRefused(() => ({ template_id: tpl }))
  },
  custom_drop_limit_reached: () => sendUntilRefused((i) => ({ content: `note ${i}` })),
  already_checked_in: checkedInTwice,
  sync_conflict: async () => {
    const u = await createUser()
    const entry = (await api('/api/journal', { token: u.token, body: { title: 'one', mood: 'calm' } })).body.entry
    const pulled = (await api('/api/sync?last_pulled_at=null', { token: u.token })).body
    await api(`/api/journal/${entry.id}`, { method: 'PUT', token: u.token, body: { title: 'changed since the pull' } })
    return await api(`/api/sync?last_pulled_at=${pulled.timestamp}`, {
      token: u.token,
      body: { journal_entries: { updated: [{ id: entry.id, title: 'from a device' }] } },
    })
  },
  reauthentication_needed: async () => {
    const u = await createUser()
    return await api('/api/user/account', {
      method: 'DELETE',
      token: await tokenIssuedAgo(u, 20),
      body: { confirm: 'DELETE' },
    })
  },
  ownership_transfer_needed: async () => {
    const [owner, member] = await Promise.all([createUser(), createUser()])
    await orgWith(owner, [member])
    return await api('/api/user/account', { method: 'DELETE', token: owner.token, body: { confirm: 'DELETE' } })
  },
  account_deleted: async () => {
    const u = await createUser()
    const gone = await api('/api/user/account', { method: 'DELETE', token: u.token, body: { confirm: 'DELETE' } })
    assert.equal(gone.status, 200, JSON.stringify(gone.body))
    return await api('/api/journal', { token: u.token, body: { title: 't', content: 'c' } })
  },
  impersonation_session_ended: async () =>
    await api('/api/user/profile', { token: (await impersonationEnded()).token }),
  insufficient_drops: async () => {
    const [seller, buyer] = await Promise.all([createUser(), createUser()])
    const pack = await createPack(seller, { is_public: true, price_drops: 9999 })
    return await api(`/api/tone-packs/${pack.id}/purchase`, { token: buyer.token, body: {} })
  },
  id_conflict: async () => {
    const u = await createUser()
    const id = crypto.randomUUID()
    const made = await api('/api/goals', { token: u.token, body: { id, title: 'First' } })
    assert.equal(made.status, 201, JSON.stringify(made.body))
    return await api('/api/goals', { token: u.token, body: { id, title: 'Second' } })
  },
  precondition_failed: async () => {
    const u = await createUser()
    const goal = await api('/api/goals', { token: u.token, body: { title: 'g' } })
    const stale = goal.headers.get('etag')!
    await api(`/api/goals/${goal.body.id}`, { method: 'PUT', token: u.token, body: { title: 'h' } })
    return await api(`/api/goals/${goal.body.id}`, {
      method: 'PUT',
      token: u.token,
      body: { title: 'i' },
      headers: { 'if-match': stale },
    })
  },
  team_id_required: entryWithout('team'),
  org_id_required: entryWithout('org'),
  no_route: async () => {
    const res = await fetch(`${Deno.env.get('SUPABASE_URL')}/functions/v1/api/no-such-route`)
    return { status: res.status, body: await res.json() }
  },
  // Generic codes a test reaches on demand.
  unauthorized: () => api('/api/user/profile'),
  forbidden: async () => await api('/api/admin/health', { token: (await createUser()).token }),
  not_found: async () => await api(`/api/journal/${crypto.randomUUID()}`, { token: (await createUser()).token }),
  payload_too_large: async () =>
    await api('/api/journal', {
      token: (await createUser()).token,
      body: { title: 't', content: 'x'.repeat(1024 * 1024 + 10) },
    }),
  // The database's answers, mapped in process (an outage or a lost race cannot be asked for).
  bad_request: async () => answered(fromDb({ code: '22P02', message: 'invalid input syntax for type uuid: "x"' })),
  conflict: async () => answered(fromDb({ code: '23505', message: 'duplicate key value violates unique constraint' })),
  concurrent_change: async () => answered(fromDb({ code: '40001', message: 'could not serialize access' })),
  unavailable: async () => answered(fromDb({ code: '', message: 'TypeError: fetch failed' }, 0)),
  internal_error: async () => answered(fromDb({ code: '42P01', message: 'relation does not exist' })),
  // Statuses only a provider or a route's own check answers: the status's code.
  ...Object.fromEntries(
    [[402, 'payment_required'], [405, 'method_not_allowed'], [410, 'gone'], [415, 'unsupported_media_type'], [
      422,
      'unprocessable',
    ], [429, 'rate_limited'], [501, 'not_implemented'], [502, 'upstream_failed'], [504, 'upstream_timeout']].map((
      [status, code],
    ) => [code, async () => answered(new HttpError(status as number, 'Refused'))]),
  ),
}

test('error codes: the OpenAPI document lists every code, and each is produced by some path', async () => {
  const doc = (await api('/api/openapi.json')).body
  const schema = doc.components.schemas.ErrorCode
  const listed: string[] = schema.anyOf.find((s: any) => s.enum).enum
  assert.deepEqual([...listed].sort(), Object.keys(PRODUCERS).sort(), 'one producer per documented code')
  assert.ok(doc.components.schemas.Error.required.includes('code'), 'every {error} has its code')
  for (const code of Object.keys(NAMED_CODES)) assert.match(schema.description, new RegExp(`\`${code}\``))
  const failures: string[] = []
  for (const [code, produce] of Object.entries(PRODUCERS)) {
    const reply = await produce()
    if (reply.body?.code !== code || typeof reply.body?.error !== 'string') {
      failures.push(`${code}: ${reply.status} ${JSON.stringify(reply.body).slice(0, 300)}`)
    } else if (code in NAMED_CODES) {
      assert.equal(reply.status, NAMED_CODES[code as keyof typeof NAMED_CODES].status, code)
    }
  }
  assert.deepEqual(failures, [])
})

test('error codes: a 400 naming its field is <field>_required or <field>_invalid, from zod and from SQL alike', async () => {
  const u = await createUser()
  const missing = await api('/api/journal', { token: u.token, body: { content: 'c' } })
  assert.deepEqual([missing.status, missing.body.code], [400, 'title_required'])
  const tooLong = await api('/api/journal', { token: u.token, body: { title: 'x'.repeat(500), content: 'c' } })
  assert.deepEqual([tooLong.status, tooLong.body.code], [400, 'title_invalid'])
  const unknown = await api('/api/journal', { token: u.token, body: { title: 't', content: 'c', colour: 'red' } })
  assert.deepEqual([unknown.status, unknown.body.code], [400, 'colour_invalid'])
  const notJson = await api('/api/journal', { token: u.token, rawBody: '{', headers: { 'content-type': 'text/plain' } })
  assert.deepEqual([notJson.status, notJson.body.code], [400, 'body_invalid'])
  // The message text stays what it was.
  assert.match(missing.body.error, /^title: /)
  // SQL's "field: ..." messages (and dotted paths, list indexes left out) map the same way.
  assert.equal(codeFor(400, 'preferences.theme: must be a string'), 'preferences_theme_invalid')
  assert.equal(codeFor(400, 'tags.3: must be at most 50 characters'), 'tags_invalid')
  assert.equal(codeFor(400, 'Idempotency-Key: at most 200 characters'), 'idempotency_key_invalid')
  assert.equal(codeFor(400, 'session_id: required (or call with the impersonation token)'), 'session_id_required')
  assert.equal(codeFor(400, 'a, b: not an accepted field'), 'a_invalid')
  assert.equal(codeFor(400, 'invalid input syntax for type uuid: "x"'), 'bad_request')
  assert.equal(codeFor(404, 'recipient_id: no active user'), 'not_found', 'only a 400 is a field code')
  // A hint that is not a named code leaves the derived one.
  assert.equal(fromDb({ code: 'PT409', message: 'x', hint: 'try later' } as any).code, 'conflict')
})

test('error codes: PostgREST clients read the named code in error.hint', async () => {
  const u = await createUser()
  const db = clientAs(u.token)
  const entry = await db.from('journal_entries')
    .insert({ title: 't', metadata_visibility: 'team', content_visibility: 'team' })
  assert.equal(entry.error?.hint, 'team_id_required', JSON.stringify(entry.error))
  assert.match(entry.error!.message, /^team_id: required/)

  const [seller, buyer] = await Promise.all([createUser(), createUser()])
  const pack = await createPack(seller, { is_public: true, price_drops: 9999 })
  const poor = await clientAs(buyer.token).rpc('purchase_tone_pack', { pack_id: pack.id })
  assert.deepEqual([poor.error?.code, poor.error?.hint], ['PT402', 'insufficient_drops'])

  const old = await tokenIssuedAgo(u, 20)
  const stale = await clientAs(old).rpc('delete_my_account', { confirm: 'DELETE' })
  assert.deepEqual([stale.error?.code, stale.error?.hint], ['PT401', 'reauthentication_needed'])

  const { token } = await impersonationEnded()
  const res = await fetch(`${Deno.env.get('SUPABASE_URL')}/rest/v1/profiles?select=id`, {
    headers: { apikey: Deno.env.get('SUPABASE_ANON_KEY')!, authorization: `Bearer ${token}` },
  })
  const body = await res.json()
  assert.equal(res.status, 401)
  assert.equal(body.hint, 'impersonation_session_ended', JSON.stringify(body))
  assert.match(body.details, /stopped or it expired/, 'the advice for people moved to details')
})

test('error codes: the routes ROUTE_CODES names exist and document those codes on the right status', async () => {
  const doc = (await api('/api/openapi.json')).body
  const served = new Set(app.routes.map((r) => `${r.method} ${r.path.replace(/^\/api/, '').replace(/:([^/]+)/g, '{$1}')}`))
  for (const [route, codes] of Object.entries(ROUTE_CODES)) {
    assert.ok(served.has(route), `${route} is a route`)
    const [method, path] = route.split(' ')
    const op = doc.paths[`/api${path}`][method.toLowerCase()]
    for (const code of codes) {
      const reply = op.responses[String(NAMED_CODES[code].status)]
      assert.ok(reply, `${route}: ${NAMED_CODES[code].status} documented`)
      assert.match(reply.description, new RegExp(`\`${code}\``), `${route} documents ${code}`)
    }
  }
})
