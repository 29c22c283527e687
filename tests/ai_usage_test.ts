// Token usage and cost: SQL-computed costs exact to the cent for every type, effective-dated
// prices, the monthly aggregate across a month boundary, GET /api/ai/usage permissions.
import { strict as assert } from 'node:assert'
import { api, assertError, clientAs, createUser, SERVICE_ROLE_KEY, sql, test } from './_helpers.ts'
import { createClient } from '@supabase/supabase-js'
import { API_URL } from './_helpers.ts'

const service = () =>
  createClient(API_URL, SERVICE_ROLE_KEY, { auth: { persistSession: false, autoRefreshToken: false } })

/** Records a call as the edge functions do (service role, public.record_ai_usage). */
async function record(args: Record<string, unknown>) {
  const { data, error } = await service().rpc('record_ai_usage', args).select('id, cost_usd::text').single()
  if (error) throw new Error(`record_ai_usage: ${error.message}`)
  return data as { id: number; cost_usd: string }
}

test('record_ai_usage: the cost of each type, computed in SQL from the price table, exact', async () => {
  const user = await createUser()
  // Tone: $0.15 / $0.60 per million input / output tokens.
  assert.equal(
    (await record({
      user_id: user.id,
      usage_type: 'tone_analysis',
      model: 'gpt-4o-mini',
      input_tokens: 1_000_000,
      output_tokens: 1_000_000,
    })).cost_usd,
    '0.7500000000',
  )
  assert.equal(
    (await record({
      user_id: user.id,
      usage_type: 'tone_analysis',
      model: 'gpt-4o-mini',
      input_tokens: 350,
      output_tokens: 120,
    })).cost_usd,
    '0.0001245000',
  )
  // Images per image (DALL·E 3): $0.040 standard, $0.080 HD.
  assert.equal(
    (await record({
      user_id: user.id,
      usage_type: 'entry_background',
      model: 'dall-e-3',
      image_count: 1,
      image_quality: 'standard',
    })).cost_usd,
    '0.0400000000',
  )
  assert.equal(
    (await record({
      user_id: user.id,
      usage_type: 'entry_background',
      model: 'dall-e-3',
      image_count: 1,
      image_quality: 'hd',
    })).cost_usd,
    '0.0800000000',
  )
  assert.equal(
    (await record({ user_id: user.id, usage_type: 'entry_background', model: 'dall-e-3', image_count: 1 }))
      .cost_usd,
    '0.0400000000',
    'quality defaults to standard',
  )
  // GPT-image per token: $5 / $40 per million input / output tokens (HD: 4160 output tokens).
  assert.equal(
    (await record({
      user_id: user.id,
      usage_type: 'tone_pack_image',
      model: 'gpt-image-1',
      input_tokens: 50,
      output_tokens: 4160,
      image_count: 1,
      image_quality: 'hd',
    })).cost_usd,
    '0.1666500000',
  )
  assert.equal(
    (await record({
      user_id: user.id,
      usage_type: 'tone_pack_image',
      model: 'gpt-image-1',
      input_tokens: 50,
      output_tokens: 1056,
      image_count: 1,
    })).cost_usd,
    '0.0424900000',
  )
  // A model without prices (a self-hosted one) costs nothing.
  assert.equal(
    (await record({
      user_id: user.id,
      usage_type: 'tone_analysis',
      model: 'llama3.1:8b',
      input_tokens: 5000,
      output_tokens: 50,
    })).cost_usd,
    '0.0000000000',
  )

  const summary = await api('/api/ai/usage', { token: user.token })
  assert.equal(summary.status, 200)
  assert.equal(summary.body.calls, 8)
  assert.equal(summary.body.total_tokens, 1_000_000 * 2 + 350 + 120 + 50 + 4160 + 50 + 1056 + 5050)
  assert.equal(summary.body.total_cost.toFixed(2), '1.12') // 0.75 + 0.0001245 + 0.16 + 0.16665 + 0.04249
  assert.equal(Math.round(summary.body.total_cost * 1e7), 11192645)
  assert.deepEqual(summary.body.breakdown, {
    Tone: { calls: 3, tokens: 2_005_520, images: 0, cost: 0.7501245 },
    Images: { calls: 3, tokens: 0, images: 3, cost: 0.16 },
    Packs: { calls: 2, tokens: 5316, images: 2, cost: 0.20914 },
  })
})

test('record_ai_usage: unknown type or user, negative tokens, bad quality are refused; nothing is written', async () => {
  const user = await createUser()
  for (
    const [args, code] of [
      [{ user_id: user.id, usage_type: 'mining', model: 'gpt-4o-mini' }, '22023'],
      [{ user_id: crypto.randomUUID(), usage_type: 'tone_analysis', model: 'gpt-4o-mini' }, 'PT404'],
      [{ user_id: user.id, usage_type: 'tone_analysis', model: '' }, '22023'],
      [{ user_id: user.id, usage_type: 'tone_analysis', model: 'gpt-4o-mini', input_tokens: -1 }, '23514'],
      [{
        user_id: user.id,
        usage_type: 'entry_background',
        model: 'dall-e-3',
        image_count: 1,
        image_quality: 'ultra',
      }, '23514'],
    ] as const
  ) {
    const { error } = await service().rpc('record_ai_usage', args)
    assert.equal(error?.code, code, JSON.stringify(args))
  }
  const [{ n }] = await sql`select count(*)::int as n from public.ai_usage where user_id = ${user.id}`
  assert.equal(n, 0)
})

test('a price change applies from its moment on and never rewrites past costs', async () => {
  const user = await createUser()
  const admin = await createUser({ superAdmin: true })
  const model = `test-model-${crypto.randomUUID().slice(0, 8)}`
  const asAdmin = clientAs(admin.token)
  const price = (unit: string, usd: number) =>
    asAdmin.from('ai_prices').insert({ model, unit, usd_per_unit: usd }).select().single()
  assert.equal((await price('input_1m_tokens', 1)).error, null)
  const before = await record({
    user_id: user.id,
    usage_type: 'tone_analysis',
    model,
    input_tokens: 2_000_000,
  })
  assert.equal(before.cost_usd, '2.0000000000')
  assert.equal((await price('input_1m_tokens', 3)).error, null)
  const after = await record({
    user_id: user.id,
    usage_type: 'tone_analysis',
    model,
    input_tokens: 2_000_000,
  })
  assert.equal(after.cost_usd, '6.0000000000')
  const [{ cost }] = await sql`select cost_usd::text as cost from public.ai_usage where id = ${before.id}`
  assert.equal(cost, '2.0000000000', 'the earlier row keeps its cost')

  // Prices are append-only, never backdated, and only super admins add them.
  const past = await asAdmin.from('ai_prices').insert({
    model,
    unit: 'output_1m_tokens',
    usd_per_unit: 1,
    effective_at: '2020-01-01T00:00:00Z',
  })
  assert.equal(past.error?.code, '22023')
  const edit = await asAdmin.from('ai_prices').update({ usd_per_unit: 0 }).eq('model', model).select()
  assert.ok(edit.error || edit.data?.length === 0, 'prices cannot be changed')
  const [{ n }] =
    await sql`select count(*)::int as n from public.ai_prices where model = ${model} and usd_per_unit = 0`
  assert.equal(n, 0)
  const byUser = await clientAs(user.token).from('ai_prices').insert({
    model,
    unit: 'image_hd',
    usd_per_unit: 0,
  })
  assert.ok(byUser.error, 'users cannot add prices')
})

test('monthly_token_usage: calendar months in UTC, across a month boundary, from the aggregate', async () => {
  const user = await createUser()
  // Rows written directly (as the SQL dashboard could): the trigger still prices and aggregates them.
  await sql.begin(async (tx) => {
    await tx`set local timezone = 'America/Los_Angeles'`
    await tx`insert into public.ai_usage (user_id, usage_type, model, input_tokens, output_tokens, created_at) values
      (${user.id}, 'tone_analysis', 'gpt-4o-mini', 1000000, 0, '2026-01-31T23:59:59.999999Z'),
      (${user.id}, 'tone_analysis', 'gpt-4o-mini', 0, 1000000, '2026-02-01T00:00:00Z'),
      (${user.id}, 'entry_background', 'dall-e-3', 0, 0, '2026-01-31T20:00:00-08:00')`
  })
  await sql`insert into public.ai_usage (user_id, usage_type, model, image_count, image_quality, created_at)
            values (${user.id}, 'entry_background', 'dall-e-3', 1, 'hd', '2026-01-15T12:00:00Z')`
  const month = async (year: number, m: number) =>
    (await api(`/api/ai/usage?year=${year}&month=${m}`, { token: user.token })).body
  const jan = await month(2026, 1)
  assert.equal(jan.total_tokens, 1_000_000)
  assert.equal(jan.total_cost, 0.23) // 0.15 + 0.08
  assert.equal(jan.calls, 2)
  assert.deepEqual(jan.breakdown.Images, { calls: 1, tokens: 0, images: 1, cost: 0.08 })
  const feb = await month(2026, 2)
  assert.equal(feb.total_tokens, 1_000_000)
  assert.equal(feb.total_cost, 0.6)
  assert.equal(feb.calls, 2, '2026-01-31 20:00 in Los Angeles is February in UTC')
  const empty = await month(2025, 12)
  assert.deepEqual(empty, {
    user_id: user.id,
    year: 2025,
    month: 12,
    total_tokens: 0,
    total_cost: 0,
    calls: 0,
    breakdown: {
      Tone: { calls: 0, tokens: 0, images: 0, cost: 0 },
      Images: { calls: 0, tokens: 0, images: 0, cost: 0 },
      Packs: { calls: 0, tokens: 0, images: 0, cost: 0 },
    },
  })
  // The same through PostgREST, as SPEC names it.
  const { data } = await clientAs(user.token).rpc('monthly_token_usage', {
    user_id: user.id,
    year: 2026,
    month: 1,
  })
  assert.equal(data.total_cost, 0.23)
})

test("GET /api/ai/usage: own usage; another user's only for super admins; bad parameters are 400", async () => {
  const user = await createUser()
  const other = await createUser()
  const admin = await createUser({ superAdmin: true })
  await record({
    user_id: other.id,
    usage_type: 'tone_analysis',
    model: 'gpt-4o-mini',
    input_tokens: 1_000_000,
  })
  const now = new Date()
  const mine = await api('/api/ai/usage', { token: user.token })
  assert.equal(mine.status, 200)
  assert.deepEqual([mine.body.user_id, mine.body.year, mine.body.month, mine.body.total_cost], [
    user.id,
    now.getUTCFullYear(),
    now.getUTCMonth() + 1,
    0,
  ])
  assertError(await api(`/api/ai/usage?user_id=${other.id}`, { token: user.token }), 403)
  const { error } = await clientAs(user.token).rpc('monthly_token_usage', {
    user_id: other.id,
    year: 2026,
    month: 1,
  })
  assert.equal(error?.code, '42501')
  const theirs = await api(`/api/ai/usage?user_id=${other.id}`, { token: admin.token })
  assert.equal(theirs.status, 200)
  assert.equal(theirs.body.total_cost, 0.15)
  assert.equal(theirs.body.breakdown.Tone.tokens, 1_000_000)
  for (
    const [q, field] of [
      ['month=13', 'month'],
      ['month=0', 'month'],
      ['year=1999', 'year'],
      ['year=x', 'year'],
      ['user_id=me', 'user_id'],
      ['week=1', 'week'],
    ]
  ) {
    assertError(await api(`/api/ai/usage?${q}`, { token: user.token }), 400, field)
  }
  assertError(await api('/api/ai/usage'), 401)
})

test('usage rows and the aggregate: read-only for everyone, own rows only; the aggregate matches the rows', async () => {
  const user = await createUser()
  const other = await createUser()
  await record({
    user_id: user.id,
    usage_type: 'tone_analysis',
    model: 'gpt-4o-mini',
    input_tokens: 10,
    output_tokens: 5,
  })
  await record({
    user_id: user.id,
    usage_type: 'tone_analysis',
    model: 'gpt-4o-mini',
    input_tokens: 20,
    output_tokens: 5,
  })
  const asUser = clientAs(user.token)
  assert.equal((await asUser.from('ai_usage_monthly').select('calls').single()).data?.calls, 2)
  assert.deepEqual((await clientAs(other.token).from('ai_usage_monthly').select('*')).data, [])
  assert.ok(
    (await asUser.from('ai_usage_monthly').update({ calls: 0 }).eq('user_id', user.id).select()).error,
  )
  assert.ok((await asUser.from('ai_usage').delete().eq('user_id', user.id).select()).error)
  const anon = clientAs()
  assert.deepEqual((await anon.from('ai_usage').select('id')).data ?? [], [])
  // Not even the service role edits history.
  const svc = await service().from('ai_usage').update({ cost_usd: 0 }).eq('user_id', user.id).select()
  assert.ok(svc.error)
  const [{ rows, agg }] = await sql`
    select (select sum(cost_usd) from public.ai_usage where user_id = ${user.id})::text as rows,
           (select sum(cost_usd) from public.ai_usage_monthly where user_id = ${user.id})::text as agg`
  assert.equal(rows, agg)
})

test('concurrent recording keeps the monthly aggregate equal to the rows', async () => {
  const user = await createUser()
  await Promise.all(
    Array.from({ length: 20 }, (_, i) =>
      record({
        user_id: user.id,
        usage_type: i % 2 ? 'tone_analysis' : 'entry_background',
        model: i % 2 ? 'gpt-4o-mini' : 'dall-e-3',
        input_tokens: i % 2 ? 1000 : 0,
        image_count: i % 2 ? 0 : 1,
      })),
  )
  const [r] = await sql`
    select (select count(*) from public.ai_usage where user_id = ${user.id})::int as rows,
           (select sum(calls) from public.ai_usage_monthly where user_id = ${user.id})::int as calls,
           (select sum(cost_usd) from public.ai_usage_monthly where user_id = ${user.id})::text as cost`
  assert.deepEqual({ ...r }, { rows: 20, calls: 20, cost: '0.4015000000' })
})
