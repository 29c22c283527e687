// Labs endpoints as a user, a classroom user, a super admin and anonymous: submissions and their
// review, templates/clones/replications, the optimizer against hand-worked values, competitions,
// step prompts, sponsor outreach and its digest, the kit waitlist, and the cron credentials.
import { strict as assert } from 'node:assert'
import {
  ANON_KEY,
  api,
  API_URL,
  assertError,
  clientAs,
  createUser,
  env,
  sql,
  test,
  type TestUser,
} from './_helpers.ts'

const admin = await createUser({ superAdmin: true, prefix: 'labs-admin' })
const classroom = await createUser({ prefix: 'labs-classroom' })
assert.equal(
  (await api(`/api/labs/admin/users/${classroom.id}/account-type`, {
    method: 'PUT',
    token: admin.token,
    body: { account_type: 'classroom' },
  })).status,
  200,
)

const frontendCron = () => ({ authorization: `Bearer ${env('CRON_SECRET')}` })

/** A raw PostgREST call (anonymous unless a token is given): status, text, parsed body, headers. */
async function rest(
  path: string,
  o: { token?: string; method?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> } =
    {},
) {
  const body = o.rawBody ?? (o.body === undefined ? undefined : JSON.stringify(o.body))
  const res = await fetch(`${API_URL}/rest/v1/${path}`, {
    method: o.method ?? (body === undefined ? 'GET' : 'POST'),
    headers: {
      apikey: ANON_KEY,
      authorization: `Bearer ${o.token ?? ANON_KEY}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...o.headers,
    },
    body,
  })
  const text = await res.text()
  let parsed: any = null
  try {
    parsed = text ? JSON.parse(text) : null
  } catch { /* not JSON */ }
  return { status: res.status, text, body: parsed, headers: res.headers }
}
const labsCron = () => ({ 'x-cron-secret': env('LABS_CRON_SECRET') })

async function submitSponsor(
  user: TestUser,
  name = `Sponsor ${crypto.randomUUID().slice(0, 6)}`,
  contactEmail = 'Ada@Example.org',
) {
  const res = await api('/api/labs/sponsors', {
    token: user.token,
    body: { name, tier: 'gold', contact_email: contactEmail, contact_name: 'Ada Lovelace' },
  })
  assert.equal(res.status, 201, JSON.stringify(res.body))
  return res.body.sponsor
}

async function approvedSponsor(owner: TestUser, contactEmail?: string) {
  const s = await submitSponsor(owner, undefined, contactEmail)
  assert.equal(
    (await api(`/api/labs/admin/sponsors/${s.id}/approve`, { method: 'POST', token: admin.token })).status,
    200,
  )
  return s
}

// ---- Submissions and review ---------------------------------------------------------------

test('sponsor: pending → approved appears on the public listing without contact fields', async () => {
  const applicant = await createUser()
  const s = await submitSponsor(applicant)
  assert.equal(s.status, 'pending')
  assert.equal('contact_email' in s, false)
  const listed = () =>
    api('/api/labs/sponsors?limit=100').then((r) => r.body.sponsors.map((x: { id: string }) => x.id))
  assert.ok(!(await listed()).includes(s.id), 'pending sponsors are not public')

  const pending = await api('/api/labs/admin/sponsors/pending?limit=100', { token: admin.token })
  const mine = pending.body.sponsors.find((x: { id: string }) => x.id === s.id)
  assert.equal(mine.contact_email, 'ada@example.org')
  assert.equal(mine.contact_name, 'Ada Lovelace')

  const approved = await api(`/api/labs/admin/sponsors/${s.id}/approve`, {
    method: 'POST',
    token: admin.token,
  })
  assert.equal(approved.body.status, 'approved')
  const pub = await api('/api/labs/sponsors?limit=100')
  const row = pub.body.sponsors.find((x: { id: string }) => x.id === s.id)
  assert.deepEqual(Object.keys(row).sort(), ['applied_at', 'id', 'name', 'tier'])
  assertError(
    await api(`/api/labs/admin/sponsors/${s.id}/approve`, { method: 'POST', token: admin.token }),
    409,
    'already approved',
  )
  assertError(
    await api(`/api/labs/admin/sponsors/${s.id}/decline`, { token: admin.token, body: { reason: 'late' } }),
    409,
  )
})

test('decline: reason required (400, nothing moves); stored privately; the applicant sees the status only', async () => {
  const applicant = await createUser()
  const s = await submitSponsor(applicant)
  assertError(
    await api(`/api/labs/admin/sponsors/${s.id}/decline`, { token: admin.token, body: {} }),
    400,
    'reason',
  )
  assertError(
    await api(`/api/labs/admin/sponsors/${s.id}/decline`, { token: admin.token, body: { reason: '   ' } }),
    400,
    'reason',
  )
  assert.equal((await sql`select status from public.labs_sponsors where id = ${s.id}`)[0].status, 'pending')
  const declined = await api(`/api/labs/admin/sponsors/${s.id}/decline`, {
    token: admin.token,
    body: { reason: 'Not a fit this year' },
  })
  assert.equal(declined.body.status, 'declined')
  assert.equal(
    (await sql`select decline_reason from private.labs_sponsor_private where sponsor_id = ${s.id}`)[0]
      .decline_reason,
    'Not a fit this year',
  )
  const own = await api('/api/labs/submissions', { token: applicant.token })
  const mine = own.body.sponsors.find((x: { id: string }) => x.id === s.id)
  assert.equal(mine.status, 'declined')
  assert.ok(!JSON.stringify(own.body).includes('Not a fit'), 'no reason shown to the applicant')
  // Not through PostgREST either, not even for a super admin (the private schema is not exposed).
  const rest = await clientAs(admin.token).schema('private' as 'public').from('labs_sponsor_private').select(
    '*',
  )
  assert.ok(rest.error, 'the private schema is not served')
  assert.ok(
    !(await api('/api/labs/sponsors?limit=100')).body.sponsors.some((x: { id: string }) => x.id === s.id),
  )
})

test('review endpoints: 403 for users and classroom users, 401 anonymous, 404 unknown id, nothing written', async () => {
  const applicant = await createUser()
  const s = await submitSponsor(applicant)
  for (const who of [applicant, classroom]) {
    assertError(await api('/api/labs/admin/sponsors/pending', { token: who.token }), 403)
    assertError(
      await api(`/api/labs/admin/sponsors/${s.id}/approve`, { method: 'POST', token: who.token }),
      403,
    )
    assertError(
      await api(`/api/labs/admin/sponsors/${s.id}/decline`, { token: who.token, body: { reason: 'x' } }),
      403,
    )
  }
  assertError(await api(`/api/labs/admin/sponsors/${s.id}/approve`, { method: 'POST' }), 401)
  assertError(
    await api(`/api/labs/admin/sponsors/${crypto.randomUUID()}/approve`, {
      method: 'POST',
      token: admin.token,
    }),
    404,
  )
  assertError(
    await api(`/api/labs/admin/sponsors/not-a-uuid/approve`, { method: 'POST', token: admin.token }),
    400,
    'id',
  )
  assert.equal((await sql`select status from public.labs_sponsors where id = ${s.id}`)[0].status, 'pending')
  // PostgREST: a user cannot approve their own record by a direct update.
  const { error } = await clientAs(applicant.token).from('labs_sponsors').update({ status: 'approved' }).eq(
    'id',
    s.id,
  )
  assert.ok(error)
  assert.equal((await sql`select status from public.labs_sponsors where id = ${s.id}`)[0].status, 'pending')
})

test('opportunities and dream videos: same review flow; classroom accounts cannot submit videos', async () => {
  const user = await createUser()
  const opp = await api('/api/labs/opportunities', {
    token: user.token,
    body: {
      kind: 'fellowship',
      title: 'Summer fellowship',
      url: 'https://example.org/f',
      contact_email: 'hr@example.org',
      contact_name: 'HR',
    },
  })
  assert.equal(opp.status, 201)
  assertError(
    await api('/api/labs/opportunities', {
      token: user.token,
      body: { kind: 'job', title: 'x', contact_email: 'a@b.co', contact_name: 'x' },
    }),
    400,
    'kind',
  )
  const pendingOpp = await api('/api/labs/admin/opportunities/pending?limit=100', { token: admin.token })
  assert.equal(
    pendingOpp.body.opportunities.find((o: { id: string }) => o.id === opp.body.opportunity.id).contact_email,
    'hr@example.org',
  )
  await api(`/api/labs/admin/opportunities/${opp.body.opportunity.id}/approve`, {
    method: 'POST',
    token: admin.token,
  })
  const listed = await api('/api/labs/opportunities?kind=fellowship&limit=100')
  const row = listed.body.opportunities.find((o: { id: string }) => o.id === opp.body.opportunity.id)
  assert.ok(row && !('contact_email' in row))

  const video = await api('/api/labs/videos', {
    token: user.token,
    body: { title: 'My dream', video_url: 'https://videos.example/1' },
  })
  assert.equal(video.status, 201)
  assertError(
    await api('/api/labs/videos', { token: user.token, body: { title: 'x', video_url: 'http://insecure' } }),
    400,
    'video_url',
  )
  assertError(
    await api('/api/labs/videos', {
      token: classroom.token,
      body: { title: 'x', video_url: 'https://videos.example/2' },
    }),
    403,
    'classroom',
  )
  assert.equal(
    (await sql`select count(*)::int as n from private.labs_dream_video_private where submitter_id = ${classroom.id}`)[
      0
    ].n,
    0,
  )
  const pendingVideos = await api('/api/labs/admin/videos/pending?limit=100', { token: admin.token })
  assert.equal(pendingVideos.status, 200)
  assert.ok(
    pendingVideos.body.videos.some((v: { id: string }) => v.id === video.body.video.id),
    'the submitted video is pending',
  )
  const declinedOpp = await api('/api/labs/opportunities', {
    token: user.token,
    body: {
      kind: 'fellowship',
      title: 'Declined fellowship',
      url: 'https://example.org/d',
      contact_email: 'hr@example.org',
      contact_name: 'HR',
    },
  })
  const declined = await api(`/api/labs/admin/opportunities/${declinedOpp.body.opportunity.id}/decline`, {
    token: admin.token,
    body: { reason: 'not a fellowship' },
  })
  assert.equal(declined.status, 200)
  assert.equal(declined.body.status, 'declined')
  assertError(
    await api(`/api/labs/admin/videos/${video.body.video.id}/decline`, { token: admin.token, body: {} }),
    400,
    'reason',
  )
  assert.equal(
    (await api(`/api/labs/admin/videos/${video.body.video.id}/decline`, {
      token: admin.token,
      body: { reason: 'off topic' },
    })).body.status,
    'declined',
  )
  assertError(await api('/api/labs/videos', { body: { title: 'x', video_url: 'https://v.example/3' } }), 401)
  // Featuring: approved videos only, super admins only; featured ones lead the listing.
  const v2 = (await api('/api/labs/videos', {
    token: user.token,
    body: { title: 'Second', video_url: 'https://videos.example/4' },
  })).body.video
  assertError(
    await api(`/api/labs/admin/videos/${v2.id}/feature`, { token: admin.token, body: { is_featured: true } }),
    409,
  )
  await api(`/api/labs/admin/videos/${v2.id}/approve`, { method: 'POST', token: admin.token })
  assertError(
    await api(`/api/labs/admin/videos/${v2.id}/feature`, { token: user.token, body: { is_featured: true } }),
    403,
  )
  assertError(
    await api(`/api/labs/admin/videos/${v2.id}/feature`, { token: admin.token, body: {} }),
    400,
    'is_featured',
  )
  assert.equal(
    (await api(`/api/labs/admin/videos/${v2.id}/feature`, {
      token: admin.token,
      body: { is_featured: true },
    })).body.video.is_featured,
    true,
  )
  const later = (await api('/api/labs/videos', {
    token: user.token,
    body: { title: 'Third', video_url: 'https://videos.example/5' },
  })).body.video
  await api(`/api/labs/admin/videos/${later.id}/approve`, { method: 'POST', token: admin.token })
  const listing = (await api('/api/labs/videos?limit=100')).body.videos
  const at = (id: string) => listing.findIndex((x: { id: string }) => x.id === id)
  assert.ok(at(v2.id) >= 0 && at(later.id) > at(v2.id), 'featured first, though older')
  const flags = listing.map((x: { is_featured: boolean }) => x.is_featured)
  assert.deepEqual(flags, [...flags].sort((a, b) => Number(b) - Number(a)))
})

test('account type: super admins only; bad value 400', async () => {
  const u = await createUser()
  assertError(
    await api(`/api/labs/admin/users/${u.id}/account-type`, {
      method: 'PUT',
      token: u.token,
      body: { account_type: 'classroom' },
    }),
    403,
  )
  assertError(
    await api(`/api/labs/admin/users/${u.id}/account-type`, {
      method: 'PUT',
      token: admin.token,
      body: { account_type: 'teacher' },
    }),
    400,
    'account_type',
  )
  assertError(
    await api(`/api/labs/admin/users/${crypto.randomUUID()}/account-type`, {
      method: 'PUT',
      token: admin.token,
      body: { account_type: 'classroom' },
    }),
    404,
  )
  assert.equal(
    (await sql`select count(*)::int as n from public.labs_classroom_accounts where user_id = ${u.id}`)[0].n,
    0,
  )
})

test('approved sponsors, opportunities and videos never name who submitted them, on any path; the submitter still sees their own', async () => {
  const [applicant, stranger, sender] = await Promise.all([createUser(), createUser(), createUser()])
  const sponsor = await approvedSponsor(applicant)
  const pendingSponsor = await submitSponsor(applicant)
  const opp = (await api('/api/labs/opportunities', {
    token: applicant.token,
    body: { kind: 'mentorship', title: 'Mentor me', contact_email: 'm@example.org', contact_name: 'M' },
  })).body.opportunity
  await api(`/api/labs/admin/opportunities/${opp.id}/approve`, { method: 'POST', token: admin.token })
  const video = (await api('/api/labs/videos', {
    token: applicant.token,
    body: { title: 'Dream', video_url: 'https://videos.example/d' },
  })).body.video
  await api(`/api/labs/admin/videos/${video.id}/approve`, { method: 'POST', token: admin.token })

  for (
    const [table, id, column] of [['labs_sponsors', sponsor.id, 'applicant_id'], [
      'labs_opportunities',
      opp.id,
      'submitter_id',
    ], ['labs_dream_videos', video.id, 'submitter_id']]
  ) {
    for (const [who, token] of [['anonymous', undefined], ['another user', stranger.token]] as const) {
      const row = await rest(`${table}?id=eq.${id}`, { token })
      assert.equal(row.status, 200, row.text)
      assert.equal(row.body.length, 1, `${who} lists the approved ${table} row`)
      assert.ok(!row.text.includes(applicant.id), `${table} names its submitter to ${who}: ${row.text}`)
      // Nor can a filter on the submitter find their records.
      const probe = await rest(`${table}?select=id&${column}=eq.${applicant.id}`, { token })
      assert.ok(
        probe.status >= 400 || probe.body.length === 0,
        `${who} finds ${table} rows by ${column}: ${probe.text}`,
      )
    }
  }
  const listing = await api('/api/labs/sponsors?limit=100')
  assert.ok(!JSON.stringify(listing.body).includes(applicant.id))

  // The submitter sees their own records, whatever their status, through /api and PostgREST.
  const own = await api('/api/labs/submissions', { token: applicant.token })
  assert.equal(own.status, 200, JSON.stringify(own.body))
  assert.deepEqual(
    own.body.sponsors.map((x: { id: string }) => x.id).sort(),
    [sponsor.id, pendingSponsor.id].sort(),
  )
  assert.deepEqual(own.body.opportunities.map((x: { id: string }) => x.id), [opp.id])
  assert.deepEqual(own.body.videos.map((x: { id: string }) => x.id), [video.id])
  const viaRpc = await clientAs(applicant.token).rpc('labs_my_submissions')
  assert.equal(viaRpc.error, null, JSON.stringify(viaRpc.error))
  assert.deepEqual(
    (viaRpc.data as any).sponsors.map((x: { id: string }) => x.id).sort(),
    [sponsor.id, pendingSponsor.id].sort(),
  )
  const theirs = await api('/api/labs/submissions', { token: stranger.token })
  assert.deepEqual(
    [theirs.body.sponsors, theirs.body.opportunities, theirs.body.videos],
    [[], [], []],
    'approved records of others are not "mine"',
  )
  const pendingSeen = await rest(`labs_sponsors?id=eq.${pendingSponsor.id}`, { token: applicant.token })
  assert.equal(pendingSeen.body.length, 1, 'the applicant reads their pending record through PostgREST')
  assert.equal(
    (await rest(`labs_sponsors?id=eq.${pendingSponsor.id}`, { token: stranger.token })).body.length,
    0,
  )

  // Outreach: the sender never learns the sponsor applicant's id; the applicant still reads the message.
  assert.equal(
    (await api(`/api/labs/sponsors/${sponsor.id}/messages`, {
      token: sender.token,
      body: { body: 'Hello sponsor' },
    })).status,
    201,
  )
  const sent = await api('/api/labs/messages', { token: sender.token })
  assert.equal(sent.body.messages.length, 1)
  assert.ok(!JSON.stringify(sent.body).includes(applicant.id), JSON.stringify(sent.body))
  const sentRest = await rest('labs_sponsor_messages', { token: sender.token })
  assert.equal(sentRest.body.length, 1)
  assert.ok(!sentRest.text.includes(applicant.id), sentRest.text)
  const inbox = await api('/api/labs/messages', { token: applicant.token })
  assert.deepEqual(inbox.body.messages.map((m: { body: string }) => m.body), ['Hello sponsor'])
  assert.equal((await rest('labs_sponsor_messages', { token: applicant.token })).body.length, 1)
  assert.equal((await rest('labs_sponsor_messages', { token: stranger.token })).body.length, 0)

  // A deleted account takes its submissions along, as before the ids moved.
  await sql`delete from auth.users where id = ${applicant.id}`
  const left =
    await sql`select (select count(*) from public.labs_sponsors where id in (${sponsor.id}, ${pendingSponsor.id}))::int as sponsors,
                                (select count(*) from public.labs_opportunities where id = ${opp.id})::int as opportunities,
                                (select count(*) from public.labs_dream_videos where id = ${video.id})::int as videos,
                                (select count(*) from public.labs_sponsor_messages where sponsor_id = ${sponsor.id})::int as messages`
  assert.deepEqual(left[0], { sponsors: 0, opportunities: 0, videos: 0, messages: 0 })
})

// ---- Templates, clones, replications ------------------------------------------------------

async function publicTemplate(owner: TestUser, title = 'Tesla coil') {
  const res = await api('/api/labs/templates', {
    token: owner.token,
    body: { title, calculator: 'resonance', inputs: { inductance_h: 0.001 }, is_public: true },
  })
  assert.equal(res.status, 201, JSON.stringify(res.body))
  assert.equal(res.body.template.safety_level, 'adult_only')
  return res.body.template
}

test('templates: classroom accounts list and clone classroom-safe ones only; reset blocks new classroom clones, keeps reports', async () => {
  const author = await createUser()
  const t = await publicTemplate(author)
  const ids = async (u: TestUser) =>
    (await api('/api/labs/templates?limit=100', { token: u.token })).body.templates.map((x: { id: string }) =>
      x.id
    )
  const user = await createUser()
  assert.ok((await ids(user)).includes(t.id))
  assert.ok(!(await ids(classroom)).includes(t.id), 'adult_only is hidden from classroom accounts')
  assertError(
    await api(`/api/labs/templates/${t.id}/clone`, { method: 'POST', token: classroom.token }),
    403,
    'classroom-safe',
  )

  assertError(
    await api(`/api/labs/admin/templates/${t.id}/promote-to-classroom`, { token: admin.token, body: {} }),
    400,
    'min_grade_band',
  )
  assertError(
    await api(`/api/labs/admin/templates/${t.id}/promote-to-classroom`, {
      token: admin.token,
      body: { min_grade_band: '1-2' },
    }),
    400,
    'min_grade_band',
  )
  assertError(
    await api(`/api/labs/admin/templates/${t.id}/promote-to-classroom`, {
      token: author.token,
      body: { min_grade_band: '6-8' },
    }),
    403,
  )
  const promoted = await api(`/api/labs/admin/templates/${t.id}/promote-to-classroom`, {
    token: admin.token,
    body: { min_grade_band: '6-8' },
  })
  assert.equal(promoted.body.template.safety_level, 'classroom_safe')
  assert.equal(promoted.body.template.min_grade_band, '6-8')
  assert.ok((await ids(classroom)).includes(t.id))
  const clone = await api(`/api/labs/templates/${t.id}/clone`, { method: 'POST', token: classroom.token })
  assert.equal(clone.status, 201)
  assert.equal(clone.body.clone.cloned_from, t.id)
  const report = await api(`/api/labs/clones/${clone.body.clone.id}/replications`, {
    token: classroom.token,
    body: { measured_value: 3.5 },
  })
  assert.equal(report.status, 201)

  const reset = await api(`/api/labs/admin/templates/${t.id}/reset-safety`, {
    method: 'POST',
    token: admin.token,
  })
  assert.equal(reset.body.template.safety_level, 'adult_only')
  assertError(
    await api(`/api/labs/templates/${t.id}/clone`, { method: 'POST', token: classroom.token }),
    403,
    'classroom-safe',
  )
  assert.equal(
    (await sql`select count(*)::int as n from public.labs_replications where clone_id = ${clone.body.clone.id}`)[
      0
    ].n,
    1,
    'earlier reports stay',
  )
  // A classroom account that can see a non-safe template (its own) still cannot clone it.
  const own = await api('/api/labs/templates', {
    token: classroom.token,
    body: { title: 'Mine', calculator: 'coil' },
  })
  assertError(
    await api(`/api/labs/templates/${own.body.template.id}/clone`, {
      method: 'POST',
      token: classroom.token,
    }),
    403,
    'classroom-safe',
  )
  // Clones cannot be promoted.
  assertError(
    await api(`/api/labs/admin/templates/${clone.body.clone.id}/promote-to-classroom`, {
      token: admin.token,
      body: { min_grade_band: 'K-5' },
    }),
    409,
  )
})

test('golden spec: super admin, validated, stored as predicted_values; replications confirm within 5 %', async () => {
  const author = await createUser()
  const t = await publicTemplate(author, 'Q factor demo')
  const spec = {
    calculator: 'resonance',
    optimal_inputs: { inductance_h: 0.001, capacitance_f: 1e-9, resistance_ohm: 10 },
    calculator_outputs: {
      outputs: [{ label: 'Q factor', value: 100, unit: '' }, { label: 'f0', value: 159154.9, unit: 'Hz' }],
    },
  }
  assertError(await api(`/api/labs/templates/${t.id}/golden-spec`, { token: author.token, body: spec }), 403)
  assertError(
    await api(`/api/labs/templates/${t.id}/golden-spec`, {
      token: admin.token,
      body: { ...spec, calculator_outputs: { outputs: [] } },
    }),
    400,
    'outputs',
  )
  assertError(
    await api(`/api/labs/templates/${t.id}/golden-spec`, {
      token: admin.token,
      body: { ...spec, optimal_inputs: { l: 'x' } },
    }),
    400,
    'optimal_inputs',
  )
  assertError(
    await api(`/api/labs/templates/${t.id}/golden-spec`, {
      token: admin.token,
      body: { ...spec, calculator: 'plasma' },
    }),
    400,
    'calculator',
  )
  assert.equal(
    (await sql`select predicted_values from public.labs_experiments where id = ${t.id}`)[0].predicted_values,
    null,
  )
  const stored = await api(`/api/labs/templates/${t.id}/golden-spec`, { token: admin.token, body: spec })
  assert.equal(stored.status, 200)
  assert.deepEqual(stored.body.template.predicted_values, spec)

  const user = await createUser()
  const clone =
    (await api(`/api/labs/templates/${t.id}/clone`, { method: 'POST', token: user.token })).body.clone
  const near = await api(`/api/labs/clones/${clone.id}/replications`, {
    token: user.token,
    body: { measured_value: 104.9 },
  })
  assert.equal(near.body.replication.confirmed, true)
  const far = await api(`/api/labs/clones/${clone.id}/replications`, {
    token: user.token,
    body: { measured_value: 105.1 },
  })
  assert.equal(far.body.replication.confirmed, false)
  assertError(
    await api(`/api/labs/clones/${clone.id}/replications`, {
      token: author.token,
      body: { measured_value: 1 },
    }),
    404,
  )
  assertError(
    await api(`/api/labs/clones/${clone.id}/replications`, {
      token: user.token,
      body: { measured_value: 'x' },
    }),
    400,
    'measured_value',
  )
  const details = await api(`/api/labs/templates/${t.id}`, { token: user.token })
  assert.equal(details.body.template.convergence.replications, 2)
  assert.equal(details.body.template.convergence.independent_confirmations, 1)
  assert.equal(details.body.template.convergence.robust, false)
  // Only the first replication on a template scores (both reports count in the statistics).
  const events =
    await sql`select kind from public.labs_activity_events where user_id = ${user.id} order by id`
  assert.deepEqual(events.map((e) => e.kind), ['clone', 'replication_confirmed'])
})

test("templates: anonymous 401; another user's private template is 404; bad calculator 400", async () => {
  const author = await createUser()
  const priv = await api('/api/labs/templates', {
    token: author.token,
    body: { title: 'Private', calculator: 'plasma' },
  })
  const other = await createUser()
  assertError(await api(`/api/labs/templates/${priv.body.template.id}`, { token: other.token }), 404)
  assertError(
    await api(`/api/labs/templates/${priv.body.template.id}/clone`, { method: 'POST', token: other.token }),
    404,
  )
  assertError(await api('/api/labs/templates'), 401)
  assertError(
    await api('/api/labs/templates', { token: author.token, body: { title: 'x', calculator: 'warp' } }),
    400,
    'calculator',
  )
  assertError(
    await api('/api/labs/templates', {
      token: author.token,
      body: { title: 'x', calculator: 'coil', safety_level: 'classroom_safe' },
    }),
    400,
    'safety_level',
  )
  // PostgREST: the owner cannot promote their own template by a direct update.
  const { error } = await clientAs(author.token).from('labs_experiments').update({
    safety_level: 'classroom_safe',
    min_grade_band: 'K-5',
  }).eq('id', priv.body.template.id)
  assert.ok(error)
})

async function withGoldenSpec(t: { id: string }, value: number) {
  const res = await api(`/api/labs/templates/${t.id}/golden-spec`, {
    token: admin.token,
    body: {
      calculator: 'resonance',
      optimal_inputs: {},
      calculator_outputs: { outputs: [{ label: 'Q', value, unit: '' }] },
    },
  })
  assert.equal(res.status, 200, JSON.stringify(res.body))
}

test('replications: measured_value must be finite and at most 1e15 in size (400 naming it on /api and PostgREST), nothing stored', async () => {
  const t = await publicTemplate(await createUser(), 'Bounded')
  await withGoldenSpec(t, 100)
  const user = await createUser()
  const clone =
    (await api(`/api/labs/templates/${t.id}/clone`, { method: 'POST', token: user.token })).body.clone
  for (const v of [1e308, -1e308, 1.5e15, -1e16]) {
    assertError(
      await api(`/api/labs/clones/${clone.id}/replications`, {
        token: user.token,
        body: { measured_value: v },
      }),
      400,
      'measured_value',
    )
    const { error, status } = await clientAs(user.token).rpc('labs_report_replication', {
      clone_id: clone.id,
      measured_value: v,
    })
    assert.equal(status, 400, `rpc ${v}: ${JSON.stringify(error)}`)
    assert.match(error!.message, /measured_value/)
  }
  for (const raw of ['1e400', '-1e400']) {
    const r = await rest('rpc/labs_report_replication', {
      token: user.token,
      rawBody: `{"clone_id": "${clone.id}", "measured_value": ${raw}}`,
    })
    assert.equal(r.status, 400, r.text)
    assert.match(r.body.message, /measured_value/)
    assertError(
      await api(`/api/labs/clones/${clone.id}/replications`, {
        token: user.token,
        rawBody: `{"measured_value": ${raw}}`,
      }),
      400,
      'measured_value',
    )
  }
  assert.equal(
    (await sql`select count(*)::int as n from public.labs_replications where template_id = ${t.id}`)[0].n,
    0,
    'nothing stored',
  )
  for (const v of [1e15, -2.5e-12, 0]) {
    assert.equal(
      (await api(`/api/labs/clones/${clone.id}/replications`, {
        token: user.token,
        body: { measured_value: v },
      })).status,
      201,
      `${v} is accepted`,
    )
  }
})

test('template statistics answer whatever is stored: values at the ends of double precision do not break the catalogue', async () => {
  const t = await publicTemplate(await createUser(), 'Extremes')
  await withGoldenSpec(t, 100)
  const [a, b] = await Promise.all([createUser(), createUser()])
  const clone =
    (await api(`/api/labs/templates/${t.id}/clone`, { method: 'POST', token: a.token })).body.clone
  // Rows stored before the bound existed (written directly; no client path accepts them now).
  await sql`insert into public.labs_replications (clone_id, template_id, user_id, measured_value, predicted_value, confirmed)
            select ${clone.id}, ${t.id}, ${a.id}, v, 100, false
              from unnest(array[1e308, -1e308, 1.7976931348623157e308, -1.7976931348623157e308, 5e-324, 101]::float8[]) v`
  const list = await api('/api/labs/templates?limit=100', { token: b.token })
  assert.equal(list.status, 200, JSON.stringify(list.body))
  const mine = list.body.templates.find((x: { id: string }) => x.id === t.id)
  assert.equal(mine.convergence.replications, 6)
  const details = await api(`/api/labs/templates/${t.id}`, { token: b.token })
  assert.equal(details.status, 200, JSON.stringify(details.body))
  assert.equal(details.body.template.replications.length, 6)
  const rpc = await rest('rpc/labs_template_list', { token: b.token, body: { page_size: 100 } })
  assert.equal(rpc.status, 200, rpc.text)
  const rpcDetails = await rest('rpc/labs_template_details', { token: b.token, body: { template_id: t.id } })
  assert.equal(rpcDetails.status, 200, rpcDetails.text)
  // Ordinary numbers still give the exact statistics: mean 2, sample sd 1.
  const t2 = await publicTemplate(await createUser(), 'Plain numbers')
  const c2 = (await api(`/api/labs/templates/${t2.id}/clone`, { method: 'POST', token: a.token })).body.clone
  for (const v of [1, 2, 3]) {
    await api(`/api/labs/clones/${c2.id}/replications`, { token: a.token, body: { measured_value: v } })
  }
  const conv = (await api(`/api/labs/templates/${t2.id}`, { token: b.token })).body.template.convergence
  assert.deepEqual([conv.replications, conv.mean, conv.stddev, conv.anomalies], [3, 2, 1, 0])
})

test('super admins remove a replication (reason required, audited) through /api and PostgREST; nobody else can', async () => {
  const t = await publicTemplate(await createUser(), 'Removal')
  await withGoldenSpec(t, 100)
  const user = await createUser()
  const clone =
    (await api(`/api/labs/templates/${t.id}/clone`, { method: 'POST', token: user.token })).body.clone
  const first = (await api(`/api/labs/clones/${clone.id}/replications`, {
    token: user.token,
    body: { measured_value: 100 },
  })).body.replication
  const second = (await api(`/api/labs/clones/${clone.id}/replications`, {
    token: user.token,
    body: { measured_value: 300 },
  })).body.replication
  const count = async () =>
    (await sql`select count(*)::int as n from public.labs_replications where template_id = ${t.id}`)[0].n

  for (const who of [user, classroom]) {
    assertError(
      await api(`/api/labs/admin/replications/${first.id}`, {
        method: 'DELETE',
        token: who.token,
        body: { reason: 'mine' },
      }),
      403,
    )
    const { status } = await clientAs(who.token).rpc('labs_remove_replication', {
      replication_id: first.id,
      reason: 'mine',
    })
    assert.equal(status, 403)
  }
  const direct = await rest(`labs_replications?id=eq.${first.id}`, { method: 'DELETE', token: user.token })
  assert.ok(direct.status >= 400, `a direct delete is refused: ${direct.status} ${direct.text}`)
  const directAdmin = await rest(`labs_replications?id=eq.${first.id}`, {
    method: 'DELETE',
    token: admin.token,
  })
  assert.ok(
    directAdmin.status >= 400,
    `even for super admins, removal goes through the audited function: ${directAdmin.status}`,
  )
  assertError(await api(`/api/labs/admin/replications/${first.id}`, { method: 'DELETE' }), 401)
  assertError(
    await api(`/api/labs/admin/replications/${first.id}`, { method: 'DELETE', token: admin.token, body: {} }),
    400,
    'reason',
  )
  assertError(
    await api(`/api/labs/admin/replications/${first.id}`, {
      method: 'DELETE',
      token: admin.token,
      body: { reason: '  ' },
    }),
    400,
    'reason',
  )
  assert.equal(await count(), 2, 'nothing removed yet')

  const removed = await api(`/api/labs/admin/replications/${first.id}`, {
    method: 'DELETE',
    token: admin.token,
    body: { reason: 'bogus value' },
  })
  assert.equal(removed.status, 200, JSON.stringify(removed.body))
  assert.equal(removed.body.removal.replication_id, first.id)
  assertError(
    await api(`/api/labs/admin/replications/${first.id}`, {
      method: 'DELETE',
      token: admin.token,
      body: { reason: 'again' },
    }),
    404,
  )
  const viaRpc = await clientAs(admin.token).rpc('labs_remove_replication', {
    replication_id: second.id,
    reason: 'outlier',
  })
  assert.equal(viaRpc.error, null, JSON.stringify(viaRpc.error))
  assert.equal(await count(), 0)

  const audit = await sql`select replication_id, template_id, user_id, measured_value, removed_by, reason
                            from public.labs_replication_removals where template_id = ${t.id} order by removed_at, id`
  assert.deepEqual(
    audit.map((r) => [r.replication_id, r.user_id, r.measured_value, r.removed_by, r.reason]),
    [
      [first.id, user.id, 100, admin.id, 'bogus value'],
      [second.id, user.id, 300, admin.id, 'outlier'],
    ],
  )
  // Super admins read the audit through PostgREST; users do not; nobody rewrites it.
  assert.equal(
    (await rest(`labs_replication_removals?template_id=eq.${t.id}`, { token: admin.token })).body.length,
    2,
  )
  assert.deepEqual(
    (await rest(`labs_replication_removals?template_id=eq.${t.id}`, { token: user.token })).body ?? [],
    [],
  )
  const rewrite = await rest(`labs_replication_removals?template_id=eq.${t.id}`, {
    method: 'PATCH',
    token: admin.token,
    body: { reason: 'x' },
  })
  assert.ok(rewrite.status >= 400, rewrite.text)
  // The removed replication no longer counts in the statistics or the score.
  assert.equal(
    (await api(`/api/labs/templates/${t.id}`, { token: user.token })).body.template.convergence.replications,
    0,
  )
  assert.equal(
    (await sql`select count(*)::int as n from public.labs_activity_events where user_id = ${user.id} and kind like 'replication%'`)[
      0
    ].n,
    0,
  )
})

test('replications: measured_value is a JSON number on every path; numeric strings and values too small for double precision are 400 naming it', async () => {
  const t = await publicTemplate(await createUser(), 'Numbers only')
  await withGoldenSpec(t, 100)
  const user = await createUser()
  const clone =
    (await api(`/api/labs/templates/${t.id}/clone`, { method: 'POST', token: user.token })).body.clone
  for (const raw of ['"12"', '" 12 "', '"1e15"', '"0x10"', 'true', 'null', '[1]', '{"a": 1}']) {
    const r = await rest('rpc/labs_report_replication', {
      token: user.token,
      rawBody: `{"clone_id": "${clone.id}", "measured_value": ${raw}}`,
    })
    assert.equal(r.status, 400, `rpc ${raw}: ${r.text}`)
    assert.match(r.body.message, /measured_value/)
    assertError(
      await api(`/api/labs/clones/${clone.id}/replications`, {
        token: user.token,
        rawBody: `{"measured_value": ${raw}}`,
      }),
      400,
      'measured_value',
    )
  }
  // Too small for double precision (it would round to 0 or lose its precision): refused like too large.
  for (const raw of ['1e-400', '-1e-400', '1e-310']) {
    const r = await rest('rpc/labs_report_replication', {
      token: user.token,
      rawBody: `{"clone_id": "${clone.id}", "measured_value": ${raw}}`,
    })
    assert.equal(r.status, 400, `rpc ${raw}: ${r.text}`)
    assert.equal(r.body.code, '22023', r.text)
    assert.match(r.body.message, /measured_value/)
  }
  assertError(
    await api(`/api/labs/clones/${clone.id}/replications`, {
      token: user.token,
      rawBody: '{"measured_value": 1e-310}',
    }),
    400,
    'measured_value',
  )
  assert.equal(
    (await sql`select count(*)::int as n from public.labs_replications where template_id = ${t.id}`)[0].n,
    0,
    'nothing stored',
  )
  // The same bound for template inputs and golden specs (a stored 1e-400 prediction broke every report on the template).
  const tiny = await rest('labs_experiments', {
    token: user.token,
    rawBody: '{"title": "x", "calculator": "coil", "inputs": {"turns": 1e-400}}',
  })
  assert.equal(tiny.status, 400, tiny.text)
  assert.match(tiny.body.message, /inputs\.turns/)
  const spec = await rest('rpc/labs_set_golden_spec', {
    token: admin.token,
    rawBody:
      `{"template_id": "${t.id}", "spec": {"calculator": "resonance", "optimal_inputs": {}, "calculator_outputs": {"outputs": [{"label": "Q", "value": 1e-400, "unit": ""}]}}}`,
  })
  assert.equal(spec.status, 400, spec.text)
  assert.match(spec.body.message, /value/)
  for (const v of [12, 1e-300, -2.5e-12, 0]) {
    const r = await rest('rpc/labs_report_replication', {
      token: user.token,
      body: { clone_id: clone.id, measured_value: v },
    })
    assert.equal(r.status, 200, `rpc ${v}: ${r.text}`)
  }
})

test('template inputs are numbers, finite and at most 1e15 in size, on /api and PostgREST (400 naming the input)', async () => {
  const author = await createUser()
  for (const raw of ['1e400', '1e16', '"ten"']) {
    assertError(
      await api('/api/labs/templates', {
        token: author.token,
        rawBody: `{"title": "x", "calculator": "coil", "inputs": {"turns": ${raw}}}`,
      }),
      400,
      'inputs',
    )
    const r = await rest('labs_experiments', {
      token: author.token,
      rawBody: `{"title": "x", "calculator": "coil", "is_template": true, "inputs": {"turns": ${raw}}}`,
    })
    assert.equal(r.status, 400, r.text)
    assert.match(r.body.message, /inputs\.turns/)
  }
  const ok = await rest('labs_experiments', {
    token: author.token,
    body: { title: 'fine', calculator: 'coil', is_template: true, inputs: { turns: 12, gap_m: 1e-3 } },
  })
  assert.equal(ok.status, 201, ok.text)
  const t = await publicTemplate(author, 'Edit me')
  const edit = await rest(`labs_experiments?id=eq.${t.id}`, {
    method: 'PATCH',
    token: author.token,
    rawBody: '{"inputs": {"turns": 1e300}}',
  })
  assert.equal(edit.status, 400, edit.text)
  // Golden specs too (super admins): every number finite and at most 1e15 in size.
  const spec = (value: number) => ({
    calculator: 'resonance',
    optimal_inputs: { inductance_h: 1e-3 },
    calculator_outputs: { outputs: [{ label: 'Q', value, unit: '' }] },
  })
  assertError(
    await api(`/api/labs/templates/${t.id}/golden-spec`, { token: admin.token, body: spec(1e300) }),
    400,
    'value',
  )
  const { status } = await clientAs(admin.token).rpc('labs_set_golden_spec', {
    template_id: t.id,
    spec: spec(1e300),
  })
  assert.equal(status, 400)
})

// ---- Optimizer ---------------------------------------------------------------------------

const point = (values: Record<string, number>) =>
  Object.fromEntries(Object.entries(values).map(([k, v]) => [k, { min: v, max: v, steps: 1 }]))
async function single(calculator: string, values: Record<string, number>) {
  const res = await api('/api/labs/optimize', { body: { calculator, top_n: 1, ranges: point(values) } })
  assert.equal(res.status, 200, JSON.stringify(res.body))
  assert.equal(res.body.combinations, 1)
  return res.body.results[0]
}
const close = (actual: number, expected: number, rel = 1e-6) =>
  assert.ok(Math.abs(actual - expected) <= rel * Math.abs(expected), `${actual} is not ${expected}`)

test('optimizer: each calculator matches values worked out by hand', async () => {
  // Series RLC: Q = (1/10)·√(1e-3/1e-9) = 100; f0 = 1/(2π·1e-6).
  const r = await single('resonance', { inductance_h: 1e-3, capacitance_f: 1e-9, resistance_ohm: 10 })
  close(r.q_factor, 100)
  close(r.resonant_frequency_hz, 159154.943)
  // Parallel RLC: Q = 10000·√(1e-9/1e-3) = 10.
  close(
    (await single('impedance', { resistance_ohm: 10000, inductance_h: 1e-3, capacitance_f: 1e-9 })).q_factor,
    10,
  )
  // Coil 2 in long, 2 in across, 10 turns: Wheeler 1·100/(9+20) µH; Medhurst 5.08·(0.1126+0.08+0.27) pF.
  const coil = await single('coil', { diameter_m: 0.0508, length_m: 0.0508, turns: 10 })
  close(coil.inductance_h, 100 / 29 * 1e-6)
  close(coil.self_capacitance_f, 5.08 * 0.4626e-12)
  close(coil.self_resonant_frequency_hz, 55909352.19, 1e-6)
  // Electrolysis: V = 1.23 + 0.12·log10(0.1/1e-6) + 0.1·0.5/0.5 = 1.93; η = 1.481/1.93.
  close(
    (await single('electrolysis', {
      current_density_a_cm2: 0.1,
      electrode_gap_cm: 0.5,
      electrolyte_conductivity_s_cm: 0.5,
    })).energy_efficiency,
    1.481 / 1.93,
  )
  // Pulsed DC: I0 = 12 A, a = 24.7 A, τ = 1 ms: 24·1e-3·(12 − 24.7·ln(1 + 12/24.7)) / (0.5·1e-3·144).
  const p = await single('pulsed_dc', {
    inductance_h: 1e-3,
    resistance_ohm: 1,
    pulse_width_s: 1,
    clamp_voltage_v: 24,
  })
  close(p.peak_current_a, 12)
  close(p.recovery_efficiency, 0.7398180892543831)
  // Paschen (air, γ = 0.01) at 1 Torr·cm: 365 / (ln 15 − ln ln 101) ≈ 309.66 V.
  close(
    (await single('plasma', { pressure_torr: 1, gap_cm: 1, secondary_emission_coefficient: 0.01 }))
      .breakdown_voltage_v,
    309.65997807972155,
  )
})

test('optimizer: default sweeps are ranked by the objective, within 50,000 combinations, no bearer needed', async () => {
  for (
    const [calculator, objective, goal] of [
      ['resonance', 'q_factor', 'maximize'],
      ['coil', 'self_resonant_frequency_hz', 'maximize'],
      ['impedance', 'q_factor', 'maximize'],
      ['electrolysis', 'energy_efficiency', 'maximize'],
      ['pulsed_dc', 'recovery_efficiency', 'maximize'],
      ['plasma', 'breakdown_voltage_v', 'minimize'],
    ]
  ) {
    const res = await api('/api/labs/optimize', { body: { calculator, top_n: 5 } })
    assert.equal(res.status, 200, calculator)
    assert.equal(res.body.objective, objective)
    assert.equal(res.body.goal, goal)
    assert.ok(
      res.body.combinations <= 50000 && res.body.combinations > 10000,
      `${calculator}: ${res.body.combinations}`,
    )
    const values = res.body.results.map((x: Record<string, number>) => x[objective])
    assert.equal(values.length, 5)
    const sorted = [...values].sort((a, b) => (goal === 'maximize' ? b - a : a - b))
    assert.deepEqual(values, sorted, `${calculator} ranked`)
    assert.deepEqual(res.body.results.map((x: { rank: number }) => x.rank), [1, 2, 3, 4, 5])
  }
  // Paschen's minimum sits at p·d = e·ln(1 + 1/γ)/A: the best result is near it.
  const plasma = await api('/api/labs/optimize', {
    body: {
      calculator: 'plasma',
      top_n: 1,
      ranges: { secondary_emission_coefficient: { min: 0.01, max: 0.01, steps: 1 } },
    },
  })
  const best = plasma.body.results[0]
  close(best.pd_torr_cm, Math.E * Math.log(101) / 15, 0.15)
})

test('optimizer: unknown calculator, bad top_n, too many combinations and bad ranges are 400', async () => {
  assertError(await api('/api/labs/optimize', { body: { calculator: 'warp', top_n: 1 } }), 400, 'calculator')
  assertError(await api('/api/labs/optimize', { body: { calculator: 'coil', top_n: 0 } }), 400, 'top_n')
  assertError(await api('/api/labs/optimize', { body: { calculator: 'coil', top_n: 101 } }), 400, 'top_n')
  assertError(await api('/api/labs/optimize', { body: { calculator: 'coil', top_n: 2.5 } }), 400, 'top_n')
  assertError(await api('/api/labs/optimize', { body: { calculator: 'coil' } }), 400, 'top_n')
  const big = {
    diameter_m: { min: 0.01, max: 0.1, steps: 100 },
    length_m: { min: 0.01, max: 0.1, steps: 100 },
    turns: { min: 5, max: 50, steps: 6 },
  }
  assertError(
    await api('/api/labs/optimize', { body: { calculator: 'coil', top_n: 1, ranges: big } }),
    400,
    '50000',
  )
  assertError(
    await api('/api/labs/optimize', {
      body: { calculator: 'coil', top_n: 1, ranges: { warp_factor: { min: 1, max: 2, steps: 2 } } },
    }),
    400,
    'warp_factor',
  )
  assertError(
    await api('/api/labs/optimize', {
      body: { calculator: 'coil', top_n: 1, ranges: { turns: { min: 5, max: 1, steps: 2 } } },
    }),
    400,
    'turns',
  )
  assertError(
    await api('/api/labs/optimize', {
      body: { calculator: 'coil', top_n: 1, ranges: { turns: { min: 5, max: 1e300, steps: 2 } } },
    }),
    400,
    'ranges.turns.max',
  )
})

// ---- Competitions -------------------------------------------------------------------------

test('competitions: scores from recorded events with the SPEC weights; recompute needs the cron bearer', async () => {
  const slug = `comp-${crypto.randomUUID().slice(0, 8)}`
  assertError(
    await api('/api/labs/admin/competitions', { token: classroom.token, body: { slug, title: 'x' } }),
    403,
  )
  const created = await api('/api/labs/admin/competitions', {
    token: admin.token,
    body: { slug, title: 'Autumn build-off' },
  })
  assert.equal(created.status, 201)
  assert.deepEqual(created.body.competition.scoring_config, {
    clone: 1,
    completion: 5,
    replication_confirmed: 25,
    replication_refuted: 5,
    build: 10,
  })
  assertError(
    await api('/api/labs/admin/competitions', { token: admin.token, body: { slug, title: 'again' } }),
    409,
  )

  const [a, b, late] = await Promise.all([createUser(), createUser(), createUser()])
  for (const u of [a, b]) {
    assert.equal(
      (await api(`/api/labs/competitions/${slug}/join`, { method: 'POST', token: u.token })).status,
      200,
    )
  }
  const t = await publicTemplate(await createUser())
  await api(`/api/labs/templates/${t.id}/golden-spec`, {
    token: admin.token,
    body: {
      calculator: 'resonance',
      optimal_inputs: {},
      calculator_outputs: { outputs: [{ label: 'Q', value: 50, unit: '' }] },
    },
  })
  // a: clone 1 + completion 5 + build 10 + confirmed 25 = 41; b: clone 1 + refuted 5 = 6.
  const ca = (await api(`/api/labs/templates/${t.id}/clone`, { method: 'POST', token: a.token })).body.clone
  await api(`/api/labs/clones/${ca.id}/replications`, { token: a.token, body: { measured_value: 51 } })
  await api(`/api/labs/clones/${ca.id}/complete`, { token: a.token, body: { built: true } })
  assertError(await api(`/api/labs/clones/${ca.id}/complete`, { token: a.token, body: {} }), 409)
  const cb = (await api(`/api/labs/templates/${t.id}/clone`, { method: 'POST', token: b.token })).body.clone
  await api(`/api/labs/clones/${cb.id}/replications`, { token: b.token, body: { measured_value: 80 } })

  assertError(await api('/api/cron/labs/recompute-competitions', { method: 'POST' }), 401)
  assertError(
    await api('/api/cron/labs/recompute-competitions', {
      method: 'POST',
      headers: { authorization: 'Bearer wrong' },
    }),
    401,
  )
  assertError(await api('/api/cron/labs/recompute-competitions', { method: 'POST', token: admin.token }), 401)
  assert.equal(
    (await sql`select last_scored_at from public.labs_competitions where slug = ${slug}`)[0].last_scored_at,
    null,
  )
  const run = await api('/api/cron/labs/recompute-competitions', { method: 'POST', headers: frontendCron() })
  assert.equal(run.status, 200, JSON.stringify(run.body))
  assert.equal(run.body.competitions.find((c: { slug: string }) => c.slug === slug).participants, 2)
  assert.notEqual(
    (await sql`select last_scored_at from public.labs_competitions where slug = ${slug}`)[0].last_scored_at,
    null,
  )

  const board = await api(`/api/labs/competitions/${slug}/leaderboard`, { token: late.token })
  assert.deepEqual(
    board.body.leaderboard.map((
      r: { user_id: string; score: number; rank: number },
    ) => [r.user_id, r.score, r.rank]),
    [[a.id, 41, 1], [b.id, 6, 2]],
  )
  assertError(await api(`/api/labs/competitions/${slug}/leaderboard`), 401)
  assertError(await api('/api/labs/competitions/no-such-thing/leaderboard', { token: a.token }), 404)

  // Closed entries: no joins, and the recompute leaves its scores alone.
  assert.equal(
    (await api(`/api/labs/admin/competitions/${slug}`, {
      method: 'PATCH',
      token: admin.token,
      body: { entry_open: false },
    })).body.competition.entry_open,
    false,
  )
  assertError(await api(`/api/labs/competitions/${slug}/join`, { method: 'POST', token: late.token }), 409)
  await api(`/api/labs/clones/${cb.id}/complete`, { token: b.token, body: {} })
  await api('/api/cron/labs/recompute-competitions', { method: 'POST', headers: frontendCron() })
  assert.equal(
    (await sql`select score from public.labs_competition_participants p join public.labs_competitions c on c.id = p.competition_id where c.slug = ${slug} and p.user_id = ${b.id}`)[
      0
    ].score,
    6,
  )
})

test('competitions: farming adds nothing — own or private templates score 0; clone, completion, build and replication count once per public template', async () => {
  const slug = `farm-${crypto.randomUUID().slice(0, 8)}`
  assert.equal(
    (await api('/api/labs/admin/competitions', { token: admin.token, body: { slug, title: 'Farm check' } }))
      .status,
    201,
  )
  const [farmer, honest, author] = await Promise.all([createUser(), createUser(), createUser()])
  for (const u of [farmer, honest]) {
    assert.equal(
      (await api(`/api/labs/competitions/${slug}/join`, { method: 'POST', token: u.token })).status,
      200,
    )
  }
  const cloneOf = async (u: TestUser, id: string) => {
    const res = await api(`/api/labs/templates/${id}/clone`, { method: 'POST', token: u.token })
    assert.equal(res.status, 201, JSON.stringify(res.body))
    return res.body.clone
  }
  const complete = async (u: TestUser, cloneId: string) =>
    assert.equal(
      (await api(`/api/labs/clones/${cloneId}/complete`, { token: u.token, body: { built: true } })).status,
      200,
    )

  // Her own private template, cloned and completed (built) 10 times: nothing.
  const own =
    (await api('/api/labs/templates', { token: farmer.token, body: { title: 'Mine', calculator: 'coil' } }))
      .body.template
  for (let i = 0; i < 10; i++) await complete(farmer, (await cloneOf(farmer, own.id)).id)
  // Her own public template: nothing either.
  const ownPublic = await publicTemplate(farmer, 'Mine, public')
  await complete(farmer, (await cloneOf(farmer, ownPublic.id)).id)
  // Someone else's public template with a prediction of 100: three clones (one through PostgREST),
  // each completed with a build, and ten confirming replications on one clone.
  const t = await publicTemplate(author, 'Farmed')
  await withGoldenSpec(t, 100)
  const clones = [await cloneOf(farmer, t.id), await cloneOf(farmer, t.id)]
  const viaRest = await clientAs(farmer.token).rpc('labs_clone_template', { template_id: t.id }).single()
  assert.equal(viaRest.error, null, JSON.stringify(viaRest.error))
  clones.push(viaRest.data)
  for (const c of clones) await complete(farmer, (c as { id: string }).id)
  for (let i = 0; i < 10; i++) {
    assert.equal(
      (await api(`/api/labs/clones/${clones[0].id}/replications`, {
        token: farmer.token,
        body: { measured_value: 100 },
      })).status,
      201,
    )
  }
  await clientAs(farmer.token).rpc('labs_report_replication', {
    clone_id: (clones[1] as { id: string }).id,
    measured_value: 100,
  })
  // The first replication a user reports on a template is the one that counts: refuted, then confirmed = refuted.
  const hc = await cloneOf(honest, t.id)
  await api(`/api/labs/clones/${hc.id}/replications`, { token: honest.token, body: { measured_value: 80 } })
  await api(`/api/labs/clones/${hc.id}/replications`, { token: honest.token, body: { measured_value: 100 } })

  assert.equal(
    (await api('/api/cron/labs/recompute-competitions', { method: 'POST', headers: frontendCron() })).status,
    200,
  )
  const board =
    (await api(`/api/labs/competitions/${slug}/leaderboard`, { token: honest.token })).body.leaderboard
  // farmer: clone 1 + completion 5 + build 10 + replication_confirmed 25; honest: clone 1 + replication_refuted 5.
  assert.deepEqual(board.map((r: { user_id: string; score: number }) => [r.user_id, r.score]), [[
    farmer.id,
    41,
  ], [honest.id, 6]])
  const kinds =
    await sql`select kind from public.labs_activity_events where user_id = ${farmer.id} order by id`
  assert.deepEqual(kinds.map((e) => e.kind), ['clone', 'completion', 'build', 'replication_confirmed'])
  // The statistics keep every report; only the score counts once.
  assert.equal(
    (await api(`/api/labs/templates/${t.id}`, { token: honest.token })).body.template.convergence
      .replications,
    13,
  )
})

test("competitions: only curated templates (a super admin's golden spec) score; a second account's bulk public templates earn nothing", async () => {
  const slug = `curated-${crypto.randomUUID().slice(0, 8)}`
  assert.equal(
    (await api('/api/labs/admin/competitions', { token: admin.token, body: { slug, title: 'Curated only' } }))
      .status,
    201,
  )
  const [minter, player] = await Promise.all([createUser(), createUser()])
  assert.equal(
    (await api(`/api/labs/competitions/${slug}/join`, { method: 'POST', token: player.token })).status,
    200,
  )
  const score = async () => {
    assert.equal(
      (await api('/api/cron/labs/recompute-competitions', { method: 'POST', headers: frontendCron() }))
        .status,
      200,
    )
    return (await api(`/api/labs/competitions/${slug}/leaderboard`, { token: player.token })).body
      .leaderboard[0].score
  }
  // 25 public templates in one PostgREST request (allowed: anyone may publish a template).
  const rows = Array.from(
    { length: 25 },
    (_, i) => ({
      title: `Mint ${i}`,
      calculator: 'resonance',
      inputs: { inductance_h: 1e-3 },
      is_template: true,
      is_public: true,
    }),
  )
  const minted = await rest('labs_experiments?select=id,predicted_values', {
    token: minter.token,
    body: rows,
    headers: { prefer: 'return=representation' },
  })
  assert.equal(minted.status, 201, minted.text)
  assert.equal(minted.body.length, 25)
  // The second account clones, completes with a build and reports on each: all of it works, none of it scores.
  for (const { id } of minted.body) {
    const clone = await api(`/api/labs/templates/${id}/clone`, { method: 'POST', token: player.token })
    assert.equal(clone.status, 201, JSON.stringify(clone.body))
    assert.equal(
      (await api(`/api/labs/clones/${clone.body.clone.id}/complete`, {
        token: player.token,
        body: { built: true },
      })).status,
      200,
    )
    assert.equal(
      (await api(`/api/labs/clones/${clone.body.clone.id}/replications`, {
        token: player.token,
        body: { measured_value: 7 },
      })).status,
      201,
    )
  }
  assert.equal(await score(), 0, 'uncurated templates score nothing')
  assert.equal(
    (await sql`select count(*)::int as n from public.labs_activity_events where user_id = ${player.id}`)[0].n,
    0,
  )

  // No client path gives a template a golden spec: not on insert, not on update, not through an
  // upsert, not through /api; not even a super admin's direct write (only the golden-spec path).
  const spec = {
    calculator: 'resonance',
    optimal_inputs: {},
    calculator_outputs: { outputs: [{ label: 'Q', value: 100, unit: '' }] },
  }
  const target = minted.body[1].id
  for (const who of [minter, admin]) {
    const insert = await rest('labs_experiments', {
      token: who.token,
      body: {
        title: 'Pre-curated',
        calculator: 'resonance',
        is_template: true,
        is_public: true,
        predicted_values: spec,
      },
    })
    assert.ok(
      insert.status === 401 || insert.status === 403,
      `insert with predicted_values: ${insert.status} ${insert.text}`,
    )
    const upsert = await rest('labs_experiments?on_conflict=id', {
      token: who.token,
      body: {
        id: target,
        title: 'Mint 1',
        calculator: 'resonance',
        is_template: true,
        is_public: true,
        predicted_values: spec,
      },
      headers: { prefer: 'resolution=merge-duplicates' },
    })
    assert.ok(
      upsert.status === 401 || upsert.status === 403,
      `upsert with predicted_values: ${upsert.status} ${upsert.text}`,
    )
  }
  const patch = await rest(`labs_experiments?id=eq.${target}`, {
    method: 'PATCH',
    token: minter.token,
    body: { predicted_values: spec },
  })
  assert.ok(
    patch.status === 401 || patch.status === 403,
    `update of predicted_values: ${patch.status} ${patch.text}`,
  )
  assertError(
    await api('/api/labs/templates', {
      token: minter.token,
      body: { title: 'x', calculator: 'resonance', is_public: true, predicted_values: spec },
    }),
    400,
    'predicted_values',
  )
  assert.equal(
    (await sql`select count(*)::int as n from public.labs_experiments where owner_id = ${minter.id} and predicted_values is not null`)[
      0
    ].n,
    0,
  )

  // Once a super admin curates one, a new clone of it scores, once: clone 1 + completion 5 + build 10 + confirmed 25.
  const curated = minted.body[0].id
  await withGoldenSpec({ id: curated }, 100)
  assert.equal(await score(), 0, 'activity from before the curation does not score')
  for (let i = 0; i < 2; i++) {
    const clone =
      (await api(`/api/labs/templates/${curated}/clone`, { method: 'POST', token: player.token })).body.clone
    assert.equal(
      (await api(`/api/labs/clones/${clone.id}/complete`, { token: player.token, body: { built: true } }))
        .status,
      200,
    )
    assert.equal(
      (await api(`/api/labs/clones/${clone.id}/replications`, {
        token: player.token,
        body: { measured_value: 100 },
      })).status,
      201,
    )
  }
  assert.equal(await score(), 41)
})

test("a replication outlives its clone: deleting one's clone neither re-rolls the scored first report nor drops it from the statistics", async () => {
  const slug = `reroll-${crypto.randomUUID().slice(0, 8)}`
  assert.equal(
    (await api('/api/labs/admin/competitions', { token: admin.token, body: { slug, title: 'No re-rolls' } }))
      .status,
    201,
  )
  const player = await createUser()
  assert.equal(
    (await api(`/api/labs/competitions/${slug}/join`, { method: 'POST', token: player.token })).status,
    200,
  )
  const score = async () => {
    assert.equal(
      (await api('/api/cron/labs/recompute-competitions', { method: 'POST', headers: frontendCron() }))
        .status,
      200,
    )
    return (await api(`/api/labs/competitions/${slug}/leaderboard`, { token: player.token })).body
      .leaderboard[0].score
  }
  const t = await publicTemplate(await createUser(), 'Predicts 100')
  await withGoldenSpec(t, 100)
  const first =
    (await api(`/api/labs/templates/${t.id}/clone`, { method: 'POST', token: player.token })).body.clone
  const refuted = (await api(`/api/labs/clones/${first.id}/replications`, {
    token: player.token,
    body: { measured_value: 50 },
  })).body.replication
  assert.equal(refuted.confirmed, false)
  assert.equal(await score(), 6)

  // The clone goes (the owner may tidy their experiments); the report stays, theirs, without it.
  const del = await rest(`labs_experiments?id=eq.${first.id}`, { method: 'DELETE', token: player.token })
  assert.equal(del.status, 204, del.text)
  assert.equal(
    (await sql`select count(*)::int as n from public.labs_experiments where id = ${first.id}`)[0].n,
    0,
  )
  const kept = await rest(`labs_replications?template_id=eq.${t.id}&select=id,clone_id,measured_value`, {
    token: player.token,
  })
  assert.deepEqual(kept.body, [{ id: refuted.id, clone_id: null, measured_value: 50 }])

  // A new clone and a confirming report: stored and in the statistics, but the first report still decides the score.
  const second =
    (await api(`/api/labs/templates/${t.id}/clone`, { method: 'POST', token: player.token })).body.clone
  const confirmed = (await api(`/api/labs/clones/${second.id}/replications`, {
    token: player.token,
    body: { measured_value: 100 },
  })).body.replication
  assert.equal(confirmed.confirmed, true)
  assert.equal(await score(), 6, 'clone 1 + replication_refuted 5, as before the deletion')
  const kinds = async () =>
    (await sql`select kind from public.labs_activity_events where user_id = ${player.id} order by id`).map((
      e,
    ) => e.kind)
  assert.deepEqual(await kinds(), ['clone', 'replication_refuted'])
  const conv = (await api(`/api/labs/templates/${t.id}`, { token: player.token })).body.template.convergence
  assert.deepEqual([conv.replications, conv.mean], [2, 75], 'the refuted value stays in the statistics')

  // Only a super admin's removal takes a report out: the user's next report then counts as their first.
  const removed = await api(`/api/labs/admin/replications/${refuted.id}`, {
    method: 'DELETE',
    token: admin.token,
    body: { reason: 'mis-wired meter' },
  })
  assert.equal(removed.status, 200, JSON.stringify(removed.body))
  assert.equal(removed.body.removal.clone_id, null)
  assert.deepEqual(await kinds(), ['clone', 'replication_confirmed'])
  assert.equal(await score(), 26)
})

test('competitions: scoring weights are integers from 0 to 1000 (400 naming the weight)', async () => {
  for (const weight of [1e10, -1, 1001]) {
    assertError(
      await api('/api/labs/admin/competitions', {
        token: admin.token,
        body: { slug: `w-${crypto.randomUUID().slice(0, 8)}`, title: 'x', scoring_config: { build: weight } },
      }),
      400,
      'build',
    )
    const { status } = await clientAs(admin.token).rpc('labs_create_competition', {
      slug: `w-${crypto.randomUUID().slice(0, 8)}`,
      title: 'x',
      scoring_config: { build: weight },
    })
    assert.equal(status, 400, `rpc weight ${weight}`)
  }
})

// ---- Step prompts -------------------------------------------------------------------------

test('step prompts: x-cron-secret; users with an unfinished clone get one prompt, not again within 3 days', async () => {
  const u = await createUser()
  const t = await publicTemplate(await createUser())
  const clone =
    (await api(`/api/labs/templates/${t.id}/clone`, { method: 'POST', token: u.token })).body.clone
  assertError(await api('/api/labs/cron/process-step-prompts', { method: 'POST' }), 401)
  assertError(
    await api('/api/labs/cron/process-step-prompts', {
      method: 'POST',
      headers: { 'x-cron-secret': 'nope' },
    }),
    401,
  )
  const first = await api('/api/labs/cron/process-step-prompts', { method: 'POST', headers: labsCron() })
  assert.equal(first.status, 200, JSON.stringify(first.body))
  assert.deepEqual(first.body.results.errors, [])
  const prompts = () =>
    sql`select payload from public.notifications where user_id = ${u.id} and type = 'labs.step_prompt'`
  assert.equal((await prompts()).length, 1)
  assert.equal((await prompts())[0].payload.clone_id, clone.id)
  await api('/api/labs/cron/process-step-prompts', { method: 'POST', headers: labsCron() })
  assert.equal((await prompts()).length, 1, 'not again the same day')
  // Four days later (the last prompt moved back): prompted again.
  await sql`update private.labs_step_prompts set prompted_at = now() - interval '4 days', prompted_on = current_date - 4 where user_id = ${u.id}`
  await sql`update public.notifications set created_at = created_at - interval '4 days' where user_id = ${u.id}`
  await api('/api/labs/cron/process-step-prompts', { method: 'POST', headers: labsCron() })
  assert.equal((await prompts()).length, 2)
  // Finished clones are not prompted.
  await api(`/api/labs/clones/${clone.id}/complete`, { token: u.token, body: {} })
  await sql`update private.labs_step_prompts set prompted_at = now() - interval '5 days', prompted_on = prompted_on - 5 where user_id = ${u.id}`
  await api('/api/labs/cron/process-step-prompts', { method: 'POST', headers: labsCron() })
  assert.equal((await prompts()).length, 2)
})

test("step prompts: one user's failure is reported in results.errors and does not stop the others", async () => {
  const [broken, fine] = await Promise.all([createUser(), createUser()])
  const t = await publicTemplate(await createUser())
  for (const u of [broken, fine]) {
    await api(`/api/labs/templates/${t.id}/clone`, { method: 'POST', token: u.token })
  }
  // A notification trigger that fails for one recipient only (removed below).
  await sql.unsafe(
    `create function public.zz_test_fail_prompt() returns trigger language plpgsql set search_path = '' as $$
    begin if new.user_id = '${broken.id}' then raise exception 'inbox unavailable'; end if; return new; end $$`,
  )
  await sql`create trigger zz_test_fail_prompt before insert on public.notifications for each row execute function public.zz_test_fail_prompt()`
  try {
    const run = await api('/api/labs/cron/process-step-prompts', { method: 'POST', headers: labsCron() })
    assert.equal(run.status, 200, JSON.stringify(run.body))
    assert.ok(run.body.results.failed >= 1)
    assert.ok(
      run.body.results.errors.some((e: string) => e.startsWith(broken.id) && e.includes('inbox unavailable')),
      JSON.stringify(run.body.results),
    )
    assert.equal(
      (await sql`select count(*)::int as n from public.notifications where user_id = ${fine.id} and type = 'labs.step_prompt'`)[
        0
      ].n,
      1,
    )
    assert.equal(
      (await sql`select count(*)::int as n from private.labs_step_prompts where user_id = ${broken.id}`)[0].n,
      0,
      'the failed user is tried again next run',
    )
  } finally {
    await sql`drop trigger zz_test_fail_prompt on public.notifications`
    await sql`drop function public.zz_test_fail_prompt()`
  }
})

// ---- Outreach -----------------------------------------------------------------------------

test('outreach: 5 messages per 24 hours per sponsor, even sent at once; bodies for sender and recipient only', async () => {
  const owner = await createUser()
  const sponsor = await approvedSponsor(owner)
  const other = await approvedSponsor(await createUser())
  const sender = await createUser()
  const replies = await Promise.all(
    Array.from({ length: 8 }, (_, i) =>
      api(`/api/labs/sponsors/${sponsor.id}/messages`, {
        token: sender.token,
        body: { body: `hello ${i}` },
      })),
  )
  assert.equal(replies.filter((r) => r.status === 201).length, 5)
  for (const r of replies.filter((r) => r.status !== 201)) assertError(r, 429)
  assert.equal(
    (await sql`select count(*)::int as n from public.labs_sponsor_messages where sponsor_id = ${sponsor.id}`)[
      0
    ].n,
    5,
  )
  assert.equal(
    (await api(`/api/labs/sponsors/${other.id}/messages`, {
      token: sender.token,
      body: { body: 'hi other' },
    })).status,
    201,
    'per recipient',
  )

  const inbox = await api('/api/labs/messages', { token: owner.token })
  assert.equal(inbox.body.messages.length, 5)
  assert.equal((await api('/api/labs/messages', { token: sender.token })).body.messages.length, 6)
  assert.equal(
    (await api('/api/labs/messages', { token: admin.token })).body.messages.filter((
      m: { sponsor_id: string },
    ) => m.sponsor_id === sponsor.id).length,
    0,
    'super admins do not read them',
  )
  const rest = await clientAs(admin.token).from('labs_sponsor_messages').select('body').eq(
    'sponsor_id',
    sponsor.id,
  )
  assert.deepEqual(rest.data, [])

  const pending = await submitSponsor(owner)
  assertError(
    await api(`/api/labs/sponsors/${pending.id}/messages`, { token: sender.token, body: { body: 'x' } }),
    404,
  )
  assertError(
    await api(`/api/labs/sponsors/${sponsor.id}/messages`, { token: sender.token, body: { body: '' } }),
    400,
    'body',
  )
  assertError(await api(`/api/labs/sponsors/${sponsor.id}/messages`, { body: { body: 'x' } }), 401)
})

const resendControl = async (path: string, body?: unknown) =>
  await (await fetch(
    `${env('RESEND_BASE_URL')}/__control/${path}`,
    body === undefined ? {} : {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    },
  )).json()

test('outreach digest: Bearer CRON_SECRET; one e-mail per sponsor per week however often it runs; a failed send is retried', async () => {
  const contact = `sponsor-${crypto.randomUUID().slice(0, 8)}@example.org`
  const sponsor = await approvedSponsor(await createUser(), contact)
  const sender = await createUser()
  await api(`/api/labs/sponsors/${sponsor.id}/messages`, {
    token: sender.token,
    body: { body: 'Could you sponsor our <robotics> club?' },
  })
  await api(`/api/labs/sponsors/${sponsor.id}/messages`, {
    token: sender.token,
    body: { body: "This week, not in last week's digest" },
  })
  // The first message moves into last week (the digest covers the 7 days before this week's Monday).
  await sql`update public.labs_sponsor_messages set created_at = date_trunc('week', now() at time zone 'utc') at time zone 'utc' - interval '2 days'
             where sponsor_id = ${sponsor.id} and body like 'Could you%'`
  assertError(await api('/api/cron/labs/sponsor-outreach-digest', { method: 'POST' }), 401)
  assertError(
    await api('/api/cron/labs/sponsor-outreach-digest', {
      method: 'POST',
      headers: { authorization: `Bearer ${env('LABS_CRON_SECRET')}` },
    }),
    401,
  )
  const digests = () =>
    sql`select status, messages, email_id from private.labs_outreach_digests where sponsor_id = ${sponsor.id}`

  // The provider fails once: nothing is recorded as sent, and the next run sends it.
  await resendControl('fail', { to: contact, status: 500, name: 'internal_server_error', times: 1 })
  const failed = await api('/api/cron/labs/sponsor-outreach-digest', {
    method: 'POST',
    headers: frontendCron(),
  })
  assert.equal(failed.status, 200, JSON.stringify(failed.body))
  assert.ok(
    failed.body.results.errors.some((e: string) => e.startsWith(sponsor.id)),
    JSON.stringify(failed.body.results),
  )
  assert.equal((await digests()).length, 0)

  const first = await api('/api/cron/labs/sponsor-outreach-digest', {
    method: 'POST',
    headers: frontendCron(),
  })
  assert.equal(first.status, 200, JSON.stringify(first.body))
  assert.equal((await digests()).length, 1)
  assert.equal((await digests())[0].status, 'sent')
  assert.equal((await digests())[0].messages, 1)
  const [second, third] = await Promise.all([
    api('/api/cron/labs/sponsor-outreach-digest', { method: 'POST', headers: frontendCron() }),
    api('/api/cron/labs/sponsor-outreach-digest', { method: 'POST', headers: frontendCron() }),
  ])
  assert.equal(second.status, 200)
  assert.equal(third.status, 200)
  const mails = await resendControl(`sent?to=${encodeURIComponent(contact)}`)
  assert.equal(mails.length, 1, 'one digest however often the job runs')
  assert.match(mails[0].html, /&#60;robotics&#62;/, 'message bodies are escaped in the HTML')
  assert.ok(!mails[0].text.includes('not in last week'), "only last week's messages")
  assert.equal((await digests()).length, 1)
})

// ---- Kit waitlist -------------------------------------------------------------------------

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

// ---- Admin health: pg_cron jobs ------------------------------------------------------------

test('admin health lists each pg_cron job with its last run', async () => {
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
  assertError(await api('/api/admin/health', { token: classroom.token }), 403)
})

// ---- Credentials across every labs and impersonation route ---------------------------------

test('every labs and impersonation route with a credential refuses anonymous callers (401), and admin ones refuse users (403)', async () => {
  const doc = (await api('/api/openapi.json')).body
  const user = await createUser()
  let checked = 0
  for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
    if (!/^\/api\/(labs|cron\/labs|admin\/impersonation)/.test(path)) continue
    const concrete = path.replace(/\{slug\}/g, 'some-slug').replace(/\{\w+\}/g, crypto.randomUUID())
    for (const [method, op] of Object.entries(ops)) {
      if (!op.security.length) continue
      const body = ['post', 'put', 'patch'].includes(method) ? {} : undefined
      assertError(await api(concrete, { method: method.toUpperCase(), body }), 401)
      if (String(op.description).includes("super admin's bearer token")) {
        for (const who of [user, classroom]) {
          const res = await api(concrete, { method: method.toUpperCase(), token: who.token, body })
          assert.ok(res.status === 403 || res.status === 400, `${method} ${path} as a user: ${res.status}`)
          if (res.status === 400) {
            assertError(
              await api(concrete, {
                method: method.toUpperCase(),
                token: who.token,
                body: validBodies[path] ?? {},
              }),
              403,
            )
          }
        }
      }
      checked++
    }
  }
  assert.ok(checked >= 30, `${checked} routes checked`)
})

/** A valid body per admin route, so a user's 403 is not hidden behind a 400. */
const validBodies: Record<string, unknown> = {
  '/api/labs/admin/sponsors/{id}/decline': { reason: 'x' },
  '/api/labs/admin/opportunities/{id}/decline': { reason: 'x' },
  '/api/labs/admin/videos/{id}/decline': { reason: 'x' },
  '/api/labs/admin/videos/{id}/feature': { is_featured: true },
  '/api/labs/admin/users/{id}/account-type': { account_type: 'classroom' },
  '/api/labs/admin/templates/{id}/promote-to-classroom': { min_grade_band: 'K-5' },
  '/api/labs/templates/{templateId}/golden-spec': {
    calculator: 'coil',
    optimal_inputs: {},
    calculator_outputs: { outputs: [{ label: 'f', value: 1, unit: 'Hz' }] },
  },
  '/api/labs/admin/competitions': { slug: 'x', title: 'x' },
  '/api/labs/admin/competitions/{slug}': { is_active: true },
  '/api/admin/impersonation': { user_id: crypto.randomUUID(), reason: 'x' },
}
