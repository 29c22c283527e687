// Labs experiments (routes/labs/experiments.ts): account types, templates, clones, golden specs
// and replications, on /api and PostgREST.
import { strict as assert } from 'node:assert'
import { api, assertError, clientAs, createUser, sql, test, type TestUser } from './_helpers.ts'
import { admin, classroom, publicTemplate, rest, withGoldenSpec } from './_labs.ts'

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
