// Labs submissions (routes/labs/submissions.ts) as a user, a classroom user, a super admin and
// anonymous: sponsors, opportunities and dream videos, their review, and who is named where.
import { strict as assert } from 'node:assert'
import { api, assertError, clientAs, createUser, sql, test } from './_helpers.ts'
import { admin, approvedSponsor, classroom, rest, submitSponsor } from './_labs.ts'

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

test('required texts of the labs RPCs speak the one validation vocabulary (check_length): 400 naming the field', async () => {
  const u = await createUser({ prefix: 'labs-words' })
  const db = clientAs(u.token)
  const ask = (b: Record<string, unknown>) =>
    db.rpc('labs_submit_sponsor', { name: 'Acme', tier: 'gold', contact_email: 'a@example.com', contact_name: 'Ann', ...b })
  for (const [change, message] of [
    [{ contact_name: '   ' }, 'contact_name: must not be empty'],
    [{ name: null }, 'name: must not be empty'],
    [{ name: 'n'.repeat(201) }, 'name: must be at most 200 characters'],
  ] as const) {
    const { error, status } = await ask(change)
    assert.equal(status, 400, JSON.stringify(change))
    assert.equal(error?.code, '23514')
    assert.equal(error?.message, message)
  }
  const [{ n }] = await sql`select count(*)::int as n from private.labs_sponsor_private where applicant_id = ${u.id}`
  assert.equal(n, 0, 'nothing written')
})
