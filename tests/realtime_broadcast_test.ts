// Realtime broadcast and presence between supabase-js clients (/realtime/v1, scripts/lib/realtime/).
import { strict as assert } from 'node:assert'
import { ANON_KEY, API_URL, createUser, test } from './_helpers.ts'
import { closeAll, openTestRooms, realtimeClient, until } from './_realtime.ts'

await openTestRooms()
import type { RealtimeChannel, SupabaseClient } from '@supabase/supabase-js'

async function joined(
  client: SupabaseClient,
  topic: string,
  config: Record<string, unknown>,
  on: (ch: RealtimeChannel) => void,
) {
  await client.realtime.setAuth()
  const ch = client.channel(topic, { config: { ...config, private: true } })
  on(ch)
  const status: string[] = []
  ch.subscribe((s) => status.push(s))
  await until(() => status.length > 0, `joining ${topic}`)
  assert.deepEqual(status, ['SUBSCRIBED'])
  return ch
}

for (const vsn of ['1.0.0', '2.0.0'] as const) {
  test(`realtime: broadcast reaches the other clients of the topic, self and ack as configured (vsn ${vsn})`, async () => {
    const user = await createUser({ prefix: 'rt-bc' })
    const one = realtimeClient(user.token, vsn)
    const two = realtimeClient(undefined, vsn)
    const elsewhere = realtimeClient(undefined, vsn)
    const topic = `room:bc-${crypto.randomUUID().slice(0, 8)}`
    const got = { one: [] as any[], two: [] as any[], elsewhere: [] as any[] }
    try {
      const a = await joined(
        one,
        topic,
        { broadcast: { self: false, ack: true } },
        (ch) => ch.on('broadcast', { event: 'move' }, (p) => got.one.push(p)),
      )
      const b = await joined(
        two,
        topic,
        { broadcast: { self: true } },
        (ch) => ch.on('broadcast', { event: 'move' }, (p) => got.two.push(p)),
      )
      await joined(
        elsewhere,
        `${topic}-other`,
        {},
        (ch) => ch.on('broadcast', { event: '*' }, (p) => got.elsewhere.push(p)),
      )

      assert.equal(
        await a.send({ type: 'broadcast', event: 'move', payload: { x: 1, from: 'one' } }),
        'ok',
        'acknowledged',
      )
      await until(() => got.two.length === 1, 'the broadcast at two')
      assert.deepEqual(got.two[0].payload, { x: 1, from: 'one' })
      assert.equal(got.two[0].event, 'move')
      assert.equal(got.two[0].type, 'broadcast')

      // two has self: true, so it hears itself; one (self: false) hears two only.
      await b.send({ type: 'broadcast', event: 'move', payload: { x: 2, from: 'two' } })
      await until(() => got.two.length === 2 && got.one.length === 1, 'the second broadcast')
      assert.deepEqual(got.one.map((p) => p.payload.from), ['two'])
      assert.deepEqual(got.two.map((p) => p.payload.from), ['one', 'two'])
      assert.deepEqual(got.elsewhere, [], 'another topic hears nothing')
    } finally {
      await closeAll(one, two, elsewhere)
    }
  })
}

test('realtime: REST broadcast (httpSend) reaches the joined clients; a bad token is 401', async () => {
  const listener = realtimeClient()
  const sender = realtimeClient()
  const topic = `room:rest-${crypto.randomUUID().slice(0, 8)}`
  const got: any[] = []
  try {
    await joined(listener, topic, {}, (ch) => ch.on('broadcast', { event: 'ping' }, (p) => got.push(p)))
    const res = await sender.channel(topic, { config: { private: true } }).httpSend('ping', { n: 1 })
    assert.deepEqual(res, { success: true })
    await until(() => got.length === 1, 'the REST broadcast')
    assert.deepEqual(got[0].payload, { n: 1 })

    const refused = await fetch(`${API_URL}/realtime/v1/api/broadcast`, {
      method: 'POST',
      headers: { apikey: 'nope', authorization: 'Bearer nope', 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [{ topic, event: 'ping', payload: { n: 2 }, private: true }] }),
    })
    assert.equal(refused.status, 401)
    assert.equal(typeof (await refused.json()).error, 'string')
    const ok = await fetch(`${API_URL}/realtime/v1/api/broadcast`, {
      method: 'POST',
      headers: { apikey: ANON_KEY, 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [{ topic, event: 'ping', payload: { n: 3 }, private: true }] }),
    })
    assert.equal(ok.status, 202)
    await ok.body?.cancel()
    await until(() => got.length === 2, 'the second REST broadcast')
    assert.deepEqual(got.map((p) => p.payload.n), [1, 3])
  } finally {
    await closeAll(listener, sender)
  }
})

test('realtime: presence shows who is tracked in a topic, and who left', async () => {
  const one = realtimeClient()
  const two = realtimeClient()
  const topic = `room:presence-${crypto.randomUUID().slice(0, 8)}`
  try {
    const a = await joined(
      one,
      topic,
      { presence: { key: 'one' } },
      (ch) => ch.on('presence', { event: 'sync' }, () => {}),
    )
    const b = await joined(
      two,
      topic,
      { presence: { key: 'two' } },
      (ch) => ch.on('presence', { event: 'sync' }, () => {}),
    )
    assert.equal(await a.track({ name: 'Ann' }), 'ok')
    assert.equal(await b.track({ name: 'Bo' }), 'ok')
    const names = (ch: RealtimeChannel) =>
      Object.entries(ch.presenceState()).map(([k, metas]) =>
        `${k}:${(metas as any[]).map((m) => m.name).join(',')}`
      ).sort()
    await until(() => names(a).length === 2 && names(b).length === 2, 'both presences')
    assert.deepEqual(names(a), ['one:Ann', 'two:Bo'])
    assert.deepEqual(names(b), ['one:Ann', 'two:Bo'])

    await b.unsubscribe()
    await until(() => names(a).length === 1, 'two leaving')
    assert.deepEqual(names(a), ['one:Ann'])
  } finally {
    await closeAll(one, two)
  }
})
