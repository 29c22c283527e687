// Labs competitions (routes/labs/competitions.ts): scores from recorded events, what cannot be
// farmed, the recompute job's credential and the scoring weights.
import { strict as assert } from 'node:assert'
import { api, assertError, clientAs, createUser, sql, test, type TestUser } from './_helpers.ts'
import { admin, classroom, frontendCron, publicTemplate, rest, withGoldenSpec } from './_labs.ts'

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
