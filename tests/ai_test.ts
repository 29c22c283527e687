// Tone analysis (entry path and POST /api/ai/analyze-tone) and entry backgrounds, against the
// fake OpenAI-compatible provider (tests/fakes/ai.ts): the production client runs unchanged
// through AI_BASE_URL. Each test steers the fake with a marker in its own text.
//
// "No AI_API_KEY": the stack's functions have the fake's key, so those tests import the api
// app in this process and remove the variable for the call (the code reads it per call).
import { strict as assert } from 'node:assert'
import { api, assertError, clientAs, createUser, env, postEntry, sql, test, type TestUser } from './_helpers.ts'
import { aiMarker, aiRequests, type Reply, scriptAi } from './fakes/ai_control.ts'
import { TEST_TEXT_TIMEOUT_MS } from './fakes/ai.ts'
import { toneSettled } from './_tone.ts'

const tone = (
  primaryTone: string,
  confidence: number,
  tones = [{ tone: primaryTone, score: confidence }],
): Reply => ({
  json: { primaryTone, tones, confidence },
  usage: { prompt_tokens: 1200, completion_tokens: 40 },
})

/** One entry written with a marker in its text and the fake scripted as given; `entry` is the
 *  reply with the mood as stored once the queued analysis finished. ms: the write's; analysisMs:
 *  from the reply until the analysis finished. */
async function entryWith(user: TestUser, replies: Reply[], extra: Record<string, unknown> = {}) {
  const marker = aiMarker()
  await scriptAi(marker, replies)
  const started = Date.now()
  const res = await api('/api/journal', {
    token: user.token,
    body: { title: 'A day', content: `Today. ${marker}`, ...extra },
  })
  const ms = Date.now() - started
  assert.equal(res.status, 201, JSON.stringify(res.body))
  assert.equal(typeof res.body.entry.mood_pending, 'boolean')
  const settled = await toneSettled(res.body.entry.id)
  return { entry: { ...res.body.entry, mood: settled.mood }, marker, ms, analysisMs: settled.ms }
}

const usageRows = (userId: string) =>
  sql`select usage_type, model, input_tokens, output_tokens, cost_usd::text as cost, entry_id
        from public.ai_usage where user_id = ${userId} order by id`

const stored = async (id: string) =>
  (await sql`select mood, mood_detected from public.journal_entries where id = ${id}`)[0]

// ---------------------------------------------------------------------------------------
// The entry path

test('POST /api/journal without a mood: confidence above 0.5 sets the mood (stored once the analysis ran)', async () => {
  const user = await createUser()
  const { entry, marker } = await entryWith(user, [tone('grateful', 0.51)])
  assert.equal(entry.mood, 'grateful')
  assert.deepEqual({ ...(await stored(entry.id)) }, { mood: 'grateful', mood_detected: true })
  const [sent] = await aiRequests(marker)
  assert.equal(sent.path, '/v1/chat/completions')
  assert.equal(sent.body.model, 'gpt-4o-mini')
  assert.equal(sent.body.response_format.type, 'json_schema')
  assert.equal(sent.body.response_format.json_schema.strict, true)
  assert.equal(sent.body.response_format.json_schema.schema.properties.primaryTone.enum.length, 20)
  assert.match(sent.body.messages[1].content, /Title: A day/)
  // Billed: 1200 input and 40 output tokens at $0.15 / $0.60 per million.
  assert.deepEqual((await usageRows(user.id)).map((r) => ({ ...r })), [
    {
      usage_type: 'tone_analysis',
      model: 'gpt-4o-mini',
      input_tokens: 1200,
      output_tokens: 40,
      cost: '0.0002040000',
      entry_id: entry.id,
    },
  ])
  const read = await api(`/api/journal/${entry.id}`, { token: user.token })
  assert.equal(read.body.entry.mood, 'grateful')
})

test('POST /api/journal: confidence of exactly 0.5 or below leaves the mood null (the call is still recorded)', async () => {
  const user = await createUser()
  for (const confidence of [0.5, 0.2, 0]) {
    const { entry } = await entryWith(user, [tone('sad', confidence)])
    assert.equal(entry.mood, null, `confidence ${confidence}`)
    assert.deepEqual({ ...(await stored(entry.id)) }, { mood: null, mood_detected: false })
  }
  assert.equal((await usageRows(user.id)).length, 3)
})

test('POST /api/journal: an off-list tone, malformed JSON, a refusal or a schema mismatch is a silent failure; billed answers are recorded', async () => {
  const user = await createUser()
  const unusable: Reply[] = [
    tone('ecstatic', 0.9),
    { content: '{"primaryTone": "joyful", "tones": [', usage: { prompt_tokens: 100, completion_tokens: 7 } },
    { refusal: 'I cannot help with that', usage: { prompt_tokens: 100, completion_tokens: 5 } },
    {
      json: { primaryTone: 'joyful', tones: [{ tone: 'joyful', score: 1.7 }], confidence: 0.9 },
      usage: { prompt_tokens: 100, completion_tokens: 9 },
    },
    { json: { primaryTone: 'joyful', confidence: 0.9 }, usage: { prompt_tokens: 100, completion_tokens: 9 } },
  ]
  for (const reply of unusable) {
    const { entry } = await entryWith(user, [reply])
    assert.equal(entry.mood, null, JSON.stringify(reply))
    assert.equal((await stored(entry.id)).mood, null)
  }
  const rows = await usageRows(user.id)
  assert.equal(rows.length, unusable.length, 'every billed answer is a usage row, usable or not')
})

test('POST /api/journal: provider 500 (retried once), 401, timeout: entry saved with mood null, nothing billed', async () => {
  const user = await createUser()
  const failing = await entryWith(user, [{ status: 500, error: { message: 'boom' } }])
  assert.equal(failing.entry.mood, null)
  assert.equal((await aiRequests(failing.marker)).length, 2, 'a 5xx is retried once, not more')

  const refused = await entryWith(user, [{
    status: 401,
    error: { message: 'bad key', code: 'invalid_api_key' },
  }])
  assert.equal(refused.entry.mood, null)
  assert.equal((await aiRequests(refused.marker)).length, 1, 'a 4xx other than 408/409/429 is not retried')

  const slow = await entryWith(user, [{ ...tone('joyful', 0.9), delay_ms: TEST_TEXT_TIMEOUT_MS + 1500 }])
  assert.equal(slow.entry.mood, null)
  assert.ok(slow.ms < 1000, `the write waited ${slow.ms} ms for the model`)
  assert.ok(
    slow.analysisMs < TEST_TEXT_TIMEOUT_MS + 1200,
    `the analysis took ${slow.analysisMs} ms, beyond the ${TEST_TEXT_TIMEOUT_MS} ms deadline`,
  )
  assert.equal((await aiRequests(slow.marker)).length, 1, 'a timeout is not retried past the deadline')
  assert.equal((await usageRows(user.id)).length, 0)
})

test('POST /api/journal: a 429 with Retry-After is retried once within the deadline; a second 429 gives up', async () => {
  const user = await createUser()
  const recovered = await entryWith(user, [
    { status: 429, headers: { 'retry-after': '0.2' } },
    tone('hopeful', 0.8),
  ])
  assert.equal(recovered.entry.mood, 'hopeful')
  assert.equal((await aiRequests(recovered.marker)).length, 2)

  const limited = await entryWith(user, [{ status: 429, headers: { 'retry-after': '0.1' } }])
  assert.equal(limited.entry.mood, null)
  assert.equal((await aiRequests(limited.marker)).length, 2)

  const tooLong = await entryWith(user, [
    { status: 429, headers: { 'retry-after': '60' } },
    tone('hopeful', 0.8),
  ])
  assert.equal(tooLong.entry.mood, null, 'a Retry-After beyond the deadline is not waited for')
  assert.equal((await aiRequests(tooLong.marker)).length, 1)
  assert.ok(tooLong.analysisMs < 2000, `gave up at once, not after ${tooLong.analysisMs} ms`)
})

test('POST /api/journal with a mood, or without text: no analysis at all', async () => {
  const user = await createUser()
  const { entry, marker } = await entryWith(user, [tone('sad', 0.99)], { mood: 'Cheerful' })
  assert.equal(entry.mood, 'cheerful')
  assert.deepEqual(await aiRequests(marker), [])
  const marker2 = aiMarker()
  await scriptAi(marker2, [tone('sad', 0.99)])
  const titleOnly = await postEntry(user, { title: `only a title ${marker2}` })
  assert.equal(titleOnly.mood, null)
  assert.deepEqual(await aiRequests(marker2), [])
  assert.equal((await usageRows(user.id)).length, 0)
})

test('PUT /api/journal/:id: new text without a mood re-analyses; title-only, same text, or a chosen mood do not', async () => {
  const user = await createUser()
  const { entry, marker } = await entryWith(user, [
    tone('anxious', 0.9),
    tone('calm', 0.8),
    tone('angry', 0.95),
  ])
  assert.equal(entry.mood, 'anxious')
  const put = async (body: Record<string, unknown>) => {
    const res = await api(`/api/journal/${entry.id}`, { method: 'PUT', token: user.token, body })
    const settled = await toneSettled(entry.id)
    return { ...res, body: { entry: { ...res.body.entry, mood: settled.mood } } }
  }

  const changed = await put({ content: `Better now. ${marker}` })
  assert.equal(changed.status, 200)
  assert.equal(changed.body.entry.mood, 'calm', 'a detected mood follows the text')
  assert.equal((await aiRequests(marker)).length, 2)

  assert.equal((await put({ title: 'Renamed' })).body.entry.mood, 'calm', 'title-only: the mood stays')
  assert.equal(
    (await put({ content: `Better now. ${marker}` })).body.entry.mood,
    'calm',
    'the same text: no analysis',
  )
  assert.equal((await aiRequests(marker)).length, 2)

  // The user chooses a mood: later text changes never overwrite it (and cost nothing).
  assert.equal((await put({ mood: 'Proud' })).body.entry.mood, 'proud')
  assert.deepEqual({ ...(await stored(entry.id)) }, { mood: 'proud', mood_detected: false })
  assert.equal((await put({ content: `Furious. ${marker}` })).body.entry.mood, 'proud')
  assert.equal((await aiRequests(marker)).length, 2)

  // Content with an explicit mood: the mood as sent, no analysis.
  const both = await put({ content: `Quiet. ${marker} again`, mood: 'quiet' })
  assert.equal(both.body.entry.mood, 'quiet')
  assert.equal((await aiRequests(marker)).length, 2)
  const rows = await usageRows(user.id)
  assert.deepEqual(
    rows.map((r) => r.entry_id),
    [entry.id, entry.id],
    'one row per analysis: on create and on update',
  )
})

test("PUT /api/journal/:id: a stranger's update is refused and never reaches the provider", async () => {
  const owner = await createUser()
  const stranger = await createUser()
  const { entry, marker } = await entryWith(owner, [tone('joyful', 0.3)])
  const res = await api(`/api/journal/${entry.id}`, {
    method: 'PUT',
    token: stranger.token,
    body: { content: `mine now ${marker}` },
  })
  assertError(res, 404)
  assert.equal((await aiRequests(marker)).length, 1, "only the owner's create was analysed")
  assert.equal((await usageRows(stranger.id)).length, 0)
})

test('the daily cap: beyond it entries are saved without analysis and analyze-tone answers 429', async () => {
  const user = await createUser()
  const [{ cap }] =
    await sql`select daily_cap_per_user as cap from private.ai_usage_types where usage_type = 'tone_analysis'`
  await sql`insert into private.ai_daily_calls (user_id, day, usage_type, calls)
            values (${user.id}, (now() at time zone 'UTC')::date, 'tone_analysis', ${cap - 1})`
  const last = await entryWith(user, [tone('joyful', 0.9)])
  assert.equal(last.entry.mood, 'joyful', 'the last call under the cap runs')
  const over = await entryWith(user, [tone('joyful', 0.9)])
  assert.equal(over.entry.mood, null)
  assert.deepEqual(await aiRequests(over.marker), [], 'over the cap the provider is not called')
  assertError(
    await api('/api/ai/analyze-tone', { token: user.token, body: { content: 'hello' } }),
    429,
    'Daily limit',
  )
  const [{ calls }] =
    await sql`select calls from private.ai_daily_calls where user_id = ${user.id} and usage_type = 'tone_analysis'`
  assert.equal(calls, cap, 'the counter never passes the cap')
  // Another user is not affected.
  const other = await createUser()
  assert.equal(
    (await api('/api/ai/analyze-tone', { token: other.token, body: { content: 'hello' } })).status,
    200,
  )
})

// ---------------------------------------------------------------------------------------
// POST /api/ai/analyze-tone

test("POST /api/ai/analyze-tone: SPEC's shape, strongest tones first, sentiment from the primary tone's group", async () => {
  const user = await createUser()
  const marker = aiMarker()
  await scriptAi(marker, [
    tone('anxious', 0.82, [{ tone: 'worried', score: 0.4 }, { tone: 'anxious', score: 0.82 }, {
      tone: 'tired',
      score: 0.3,
    }]),
    tone('content', 0.7),
    tone('contemplative', 0.6),
  ])
  const res = await api('/api/ai/analyze-tone', {
    token: user.token,
    body: { content: `exam tomorrow ${marker}`, title: 'Exams' },
  })
  assert.equal(res.status, 200, JSON.stringify(res.body))
  assert.deepEqual(res.body, {
    primaryTone: 'anxious',
    tones: [{ tone: 'anxious', score: 0.82 }, { tone: 'worried', score: 0.4 }, { tone: 'tired', score: 0.3 }],
    sentiment: 'negative',
    confidence: 0.82,
  })
  const again = async () =>
    (await api('/api/ai/analyze-tone', { token: user.token, body: { content: `x ${marker}` } })).body
  assert.equal((await again()).sentiment, 'positive')
  assert.equal((await again()).sentiment, 'neutral')
  const rows = await usageRows(user.id)
  assert.deepEqual(rows.map((r) => [r.usage_type, r.entry_id, r.cost]), [
    ['tone_analysis', null, '0.0002040000'],
    ['tone_analysis', null, '0.0002040000'],
    ['tone_analysis', null, '0.0002040000'],
  ])
})

test('POST /api/ai/analyze-tone: bad input is 400 naming the field; no user is 401; nothing reaches the provider', async () => {
  const user = await createUser()
  const marker = aiMarker()
  for (
    const [body, field] of [
      [{}, 'content'],
      [{ content: '   ' }, 'content'],
      [{ content: 5 }, 'content'],
      [{ content: 'x'.repeat(100_001) + marker }, 'content'],
      [{ content: marker, title: 't'.repeat(201) }, 'title'],
      [{ content: marker, mood: 'x' }, 'mood'],
    ] as const
  ) {
    assertError(await api('/api/ai/analyze-tone', { token: user.token, body }), 400, field)
  }
  assertError(
    await api('/api/ai/analyze-tone', { rawBody: `{"content": "${marker}"`, token: user.token }),
    400,
  )
  assertError(await api('/api/ai/analyze-tone', { body: { content: marker } }), 401)
  assert.deepEqual(await aiRequests(marker), [])
  assert.equal((await usageRows(user.id)).length, 0)
  const [{ n }] = await sql`select count(*)::int as n from private.ai_daily_calls where user_id = ${user.id}`
  assert.equal(n, 0, 'refused requests do not count against the cap')
})

test('POST /api/ai/analyze-tone: provider failures are clear {error} statuses, never a 500', async () => {
  const user = await createUser()
  const cases: [Reply[], number, RegExp][] = [
    [[{ status: 500 }], 502, /failed/],
    [[{ status: 400, error: { message: 'context too long' } }], 502, /failed/],
    [[{ status: 429, headers: { 'retry-after': '0' } }], 503, /busy/],
    [[{ content: 'not json', usage: { prompt_tokens: 10, completion_tokens: 2 } }], 502, /unusable/],
    [[tone('furious', 0.9)], 502, /unusable/],
    [[{ ...tone('joyful', 0.9), delay_ms: TEST_TEXT_TIMEOUT_MS + 1000 }], 504, /in time/],
  ]
  for (const [replies, status, message] of cases) {
    const marker = aiMarker()
    await scriptAi(marker, replies)
    assertError(
      await api('/api/ai/analyze-tone', { token: user.token, body: { content: marker } }),
      status,
      message,
    )
  }
  // The two billed failures (not JSON, off-list) are recorded; the others were not billed.
  assert.deepEqual((await usageRows(user.id)).map((r) => [r.input_tokens, r.output_tokens]), [[10, 2], [
    1200,
    40,
  ]])
})

// ---------------------------------------------------------------------------------------
// Without AI_API_KEY (in-process app, variable removed for the call)

async function withoutAiKey<T>(fn: (call: typeof api) => Promise<T>): Promise<T> {
  const { app } = await import('../functions/api/app.ts')
  const saved = Deno.env.get('AI_API_KEY')
  Deno.env.delete('AI_API_KEY')
  const call: typeof api = async (path, o = {}) => {
    const headers: Record<string, string> = { ...o.headers }
    if (o.token) headers.authorization = `Bearer ${o.token}`
    const body = o.rawBody ?? (o.body === undefined ? undefined : JSON.stringify(o.body))
    if (body !== undefined) headers['content-type'] ??= 'application/json'
    const res = await app.fetch(
      new Request(`http://in-process${path}`, { method: o.method ?? (body ? 'POST' : 'GET'), headers, body }),
    )
    const text = await res.text()
    return { status: res.status, body: text ? JSON.parse(text) : null, headers: res.headers }
  }
  try {
    return await fn(call)
  } finally {
    if (saved !== undefined) Deno.env.set('AI_API_KEY', saved)
  }
}

test('without AI_API_KEY: the worker calls nothing and drops the queue, writes queue nothing, the AI endpoints answer 503', async () => {
  const user = await createUser()
  const marker = aiMarker()
  await scriptAi(marker, [tone('joyful', 0.99)])
  const cron = { 'x-cron-secret': env('CHAT_CRON_SECRET') }
  await withoutAiKey(async (call) => {
    const run = await call('/api/journal/cron/analyze-tone', { headers: cron, body: {} })
    assert.equal(run.status, 200, JSON.stringify(run.body))
    const created = await call('/api/journal', {
      token: user.token,
      body: { title: 't', content: `hello ${marker}` },
    })
    assert.equal(created.status, 201)
    assert.equal(created.body.entry.mood, null)
    assert.equal(created.body.entry.mood_pending, false, 'nothing is queued without a key')
    const updated = await call(`/api/journal/${created.body.entry.id}`, {
      method: 'PUT',
      token: user.token,
      body: { content: `new ${marker}` },
    })
    assert.equal(updated.status, 200)
    assert.equal(updated.body.entry.mood_pending, false)
    assert.equal((await toneSettled(created.body.entry.id)).mood, null)
    assertError(
      await call('/api/ai/analyze-tone', { token: user.token, body: { content: marker } }),
      503,
      'not configured',
    )
    assertError(await call('/api/ai/analyze-tone', { token: user.token, body: {} }), 400, 'content')
    assertError(
      await call('/api/ai/generate-background', {
        token: user.token,
        body: { entry_id: created.body.entry.id },
      }),
      503,
      'not configured',
    )
    assertError(
      await call('/api/ai/generate-background', { token: user.token, body: { entry_id: 'nope' } }),
      400,
      'entry_id',
    )
  })
  assert.deepEqual(await aiRequests(marker), [], 'skipped, not failed: the provider never heard of it')
  assert.equal((await usageRows(user.id)).length, 0)
  const [{ n }] = await sql`select count(*)::int as n from private.ai_daily_calls where user_id = ${user.id}`
  assert.equal(n, 0)
  // A run with the key (pg_cron's, each minute) turns analysis back on.
  assert.equal((await api('/api/journal/cron/analyze-tone', { headers: cron, body: {} })).status, 200)
  const [{ enabled }] = await sql`select analysis_enabled as enabled from private.tone_worker`
  assert.equal(enabled, true)
  const { entry } = await entryWith(user, [tone('joyful', 0.9)])
  assert.equal(entry.mood, 'joyful')
})

// ---------------------------------------------------------------------------------------
// Clients cannot write usage or steer the entry path through PostgREST

test('PostgREST: users cannot record usage or apply a detected mood; they read only their own usage', async () => {
  const user = await createUser()
  const other = await createUser()
  const { entry } = await entryWith(user, [tone('joyful', 0.9)])
  const asUser = clientAs(user.token)
  const record = await asUser.rpc('record_ai_usage', {
    user_id: other.id,
    usage_type: 'tone_analysis',
    model: 'gpt-4o-mini',
    input_tokens: 1,
  })
  assert.ok(record.error, 'record_ai_usage is not executable by users')
  const apply = await asUser.rpc('apply_tone_analysis', {
    entry_id: entry.id,
    user_id: user.id,
    detected_mood: 'sad',
    content_sha256: 'x',
  })
  assert.ok(apply.error)
  const insert = await asUser.from('ai_usage').insert({
    user_id: user.id,
    usage_type: 'tone_analysis',
    model: 'm',
  })
  assert.ok(insert.error)
  const patch = await asUser.from('journal_entries').update({ mood_detected: true }).eq('id', entry.id)
    .select()
  assert.ok(patch.error, 'mood_detected is not client-writable')
  assert.equal((await asUser.from('ai_usage').select('user_id')).data!.length, 1)
  assert.deepEqual((await clientAs(other.token).from('ai_usage').select('id')).data, [])
  // A client writing the mood directly (PATCH) makes it the user's own choice.
  await asUser.from('journal_entries').update({ mood: 'content' }).eq('id', entry.id)
  assert.deepEqual({ ...(await stored(entry.id)) }, { mood: 'content', mood_detected: false })
})
