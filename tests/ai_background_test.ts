// POST /api/ai/generate-background end to end: the fake provider's image is stored in the
// public bucket, the entry carries its address (view, feed and /api alike), a replaced image
// is deleted, and anything that fails leaves the entry as it was with nothing stored.
import { strict as assert } from 'node:assert'
import { api, API_URL, assertError, clientAs, createUser, orgWith, postEntry, sql, test } from './_helpers.ts'
import { aiMarker, aiRequests, scriptAi } from './fakes/ai_control.ts'

const BUCKET = 'entry-backgrounds'
const objectsOf = async (entryId: string) =>
  (await sql`select name from storage.objects where bucket_id = ${BUCKET} and name like ${
    '%/' + entryId + '-%'
  } order by name`)
    .map((r) => r.name as string)

test('generate-background: the owner gets a stored image whose address the entry carries everywhere', async () => {
  const owner = await createUser()
  const marker = aiMarker()
  const entry = await postEntry(owner, {
    title: `Morning run ${marker}`,
    mood: 'joyful',
    content: 'private words',
    metadata_visibility: 'public',
  })
  const res = await api('/api/ai/generate-background', {
    token: owner.token,
    body: { entry_id: entry.id, quality: 'hd' },
  })
  assert.equal(res.status, 200, JSON.stringify(res.body))
  assert.equal(res.body.entry_id, entry.id)
  assert.match(
    res.body.background_url,
    new RegExp(`/storage/v1/object/public/${BUCKET}/${owner.id}/${entry.id}-\\d+-[0-9a-f]{16}\\.png$`),
  )
  assert.ok(res.body.cost_usd > 0, 'the image is billed')

  // The prompt is made of the title and mood, never the text.
  const [sent] = await aiRequests(marker)
  assert.equal(sent.path, '/v1/images/generations')
  assert.match(sent.body.prompt, /joyful/)
  assert.doesNotMatch(sent.body.prompt, /private words/)

  // The image is really there, publicly readable.
  const image = await fetch(res.body.background_url.replace(/^https?:\/\/[^/]+/, API_URL))
  assert.equal(image.status, 200)
  assert.deepEqual([...new Uint8Array(await image.arrayBuffer()).slice(1, 4)], [0x50, 0x4e, 0x47], 'a PNG')

  const viaApi = await api(`/api/journal/${entry.id}`, { token: owner.token })
  assert.equal(viaApi.body.entry.background_url, res.body.background_url)
  const anon = await clientAs().from('journal_entry_details').select('background_url').eq('id', entry.id)
    .single()
  assert.equal(
    anon.data!.background_url,
    res.body.background_url,
    'anonymous readers of a public entry see it too',
  )

  const usage = await sql`select usage_type, entry_id from public.ai_usage where user_id = ${owner.id}`
  assert.deepEqual(usage.map((u) => ({ ...u })), [{ usage_type: 'entry_background', entry_id: entry.id }])

  // A second background replaces the first, whose object is deleted.
  const first = await objectsOf(entry.id)
  assert.equal(first.length, 1)
  await new Promise((r) => setTimeout(r, 5))
  const again = await api('/api/ai/generate-background', { token: owner.token, body: { entry_id: entry.id } })
  assert.equal(again.status, 200)
  assert.notEqual(again.body.background_url, res.body.background_url)
  const after = await objectsOf(entry.id)
  assert.equal(after.length, 1)
  assert.notEqual(after[0], first[0], 'the replaced image is gone')
})

test('generate-background: a reader who is not the owner is 403, a stranger 404; the provider never hears of it', async () => {
  const owner = await createUser()
  const member = await createUser()
  const stranger = await createUser()
  const orgId = await orgWith(owner, [member])
  const marker = aiMarker()
  const entry = await postEntry(owner, {
    title: `Shared ${marker}`,
    metadata_visibility: 'org',
    org_id: orgId,
  })
  assertError(
    await api('/api/ai/generate-background', { token: member.token, body: { entry_id: entry.id } }),
    403,
    'owner',
  )
  assertError(
    await api('/api/ai/generate-background', { token: stranger.token, body: { entry_id: entry.id } }),
    404,
  )
  assertError(await api('/api/ai/generate-background', { body: { entry_id: entry.id } }), 401)
  assert.deepEqual(await aiRequests(marker), [])
  // PostgREST: no client records a background, not even the owner (the api does, as service role).
  for (const who of [member, owner]) {
    const direct = await clientAs(who.token).rpc('set_entry_background', {
      owner_id: who.id,
      entry_id: entry.id,
      object_name: `${who.id}/${entry.id}-1.png`,
      url: `https://evil.example/${who.id}/${entry.id}-1.png`,
    })
    assert.ok(direct.error, 'refused')
  }
  assert.equal(
    (await sql`select background_url from public.journal_entries where id = ${entry.id}`)[0].background_url,
    null,
  )
})

test('generate-background: a provider error or an unusable image stores nothing and keeps the old background', async () => {
  const owner = await createUser()
  const marker = aiMarker()
  const entry = await postEntry(owner, { title: `Evening ${marker}` })
  await scriptAi(marker, [{ status: 500, error: { message: 'boom', type: 'server_error', code: 'x' } }])
  const failed = await api('/api/ai/generate-background', {
    token: owner.token,
    body: { entry_id: entry.id },
  })
  assert.ok([502, 503].includes(failed.status), `provider failure is a gateway error, got ${failed.status}`)
  assert.equal(typeof failed.body.error, 'string')
  await scriptAi(marker, [{ image: 'garbage' }])
  const garbage = await api('/api/ai/generate-background', {
    token: owner.token,
    body: { entry_id: entry.id },
  })
  assert.ok(
    garbage.status >= 500 && garbage.status < 600 && garbage.status !== 500,
    `unusable image: ${garbage.status}`,
  )
  assert.deepEqual(await objectsOf(entry.id), [])
  assert.equal(
    (await sql`select background_url from public.journal_entries where id = ${entry.id}`)[0].background_url,
    null,
  )
})

test('generate-background: calls in the same millisecond store distinct objects; a failed call gives its place under the cap back', async () => {
  const owner = await createUser()
  const marker = aiMarker()
  const entry = await postEntry(owner, { title: `Burst ${marker}` })
  const callsToday = async () =>
    (await sql`select coalesce(sum(calls), 0)::int as n from private.ai_daily_calls
                where user_id = ${owner.id} and usage_type = 'entry_background' and day = (now() at time zone 'UTC')::date`)[
      0
    ].n
  const { app } = await import('../functions/api/app.ts')
  const generate = () =>
    app.fetch(
      new Request('http://in-process/api/ai/generate-background', {
        method: 'POST',
        headers: { authorization: `Bearer ${owner.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ entry_id: entry.id }),
      }),
    )
  const realNow = Date.now
  const frozen = realNow()
  Date.now = () => frozen
  let replies
  try {
    replies = await Promise.all([generate(), generate(), generate()])
  } finally {
    Date.now = realNow
  }
  const bodies = await Promise.all(replies.map((r) => r.json()))
  assert.deepEqual(replies.map((r) => r.status), [200, 200, 200], JSON.stringify(bodies))
  assert.equal(new Set(bodies.map((b) => b.background_url)).size, 3, 'three objects, three addresses')
  assert.equal(await callsToday(), 3)

  await scriptAi(marker, [{ status: 500, error: { message: 'boom', type: 'server_error' } }])
  const failed = await api('/api/ai/generate-background', {
    token: owner.token,
    body: { entry_id: entry.id },
  })
  assert.ok(failed.status >= 502, `${failed.status}`)
  assert.equal(await callsToday(), 3, 'the failed call was given back')
})

test('generate-background: deleting the entry while the image is made does not give the billed image back', async () => {
  const owner = await createUser()
  const callsToday = async () =>
    (await sql`select coalesce(sum(calls), 0)::int as n from private.ai_daily_calls
                where user_id = ${owner.id} and usage_type = 'entry_background' and day = (now() at time zone 'UTC')::date`)[
      0
    ].n
  const usageRows = async () =>
    (await sql`select count(*)::int as n from public.ai_usage where user_id = ${owner.id} and usage_type = 'entry_background'`)[
      0
    ].n
  for (let round = 1; round <= 3; round++) {
    const marker = aiMarker()
    await scriptAi(marker, [{ delay_ms: 1500, image: 'png' }])
    const entry = await postEntry(owner, { title: `Fleeting ${marker}`, content: 'hello' })
    const generating = api('/api/ai/generate-background', {
      token: owner.token,
      body: { entry_id: entry.id, quality: 'hd' },
    })
    for (let i = 0; (await aiRequests(marker)).filter((r) => r.path.includes('images')).length === 0; i++) {
      if (i > 200) throw new Error('the provider never received the image request')
      await new Promise((r) => setTimeout(r, 25))
    }
    assert.equal(
      (await api(`/api/journal/${entry.id}`, { method: 'DELETE', token: owner.token })).status,
      200,
    )
    const done = await generating
    assertError(done, 404)
    assert.deepEqual(await objectsOf(entry.id), [], 'the stored image is removed again')
    assert.equal(await usageRows(), round, 'the image was billed and recorded')
    assert.equal(await callsToday(), round, 'and it counts against the daily cap')
  }
})
