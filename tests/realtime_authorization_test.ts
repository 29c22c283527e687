// Who may join, send and be present on Realtime channels (supabase/schemas/realtime.sql,
// scripts/lib/realtime/authorization.ts): private channels only; a user joins only their own;
// no client can broadcast or track presence, so nothing a client sends reaches another person.
import { strict as assert } from 'node:assert'
import type { RealtimeChannel, SupabaseClient } from '@supabase/supabase-js'
import { ANON_KEY, API_URL, createUser, SERVICE_ROLE_KEY, test } from './_helpers.ts'
import { closeAll, realtimeClient, until } from './_realtime.ts'

/** Joins through supabase-js; resolves with the first status and the error's text, if any. */
async function join(client: SupabaseClient, ch: RealtimeChannel) {
  await client.realtime.setAuth()
  const seen: { status: string; err?: string }[] = []
  ch.subscribe((status, err) => seen.push({ status, err: err?.message }))
  await until(() => seen.length > 0, `joining ${ch.topic}`)
  return seen[0]
}

const restBroadcast = (key: string, bearer: string, topic: string, n: number) =>
  fetch(`${API_URL}/realtime/v1/api/broadcast`, {
    method: 'POST',
    headers: { apikey: key, authorization: `Bearer ${bearer}`, 'content-type': 'application/json' },
    body: JSON.stringify({ messages: [{ topic, event: 'note', payload: { n }, private: true }] }),
  })

test('realtime: a public channel is refused to everyone (private channels only), for broadcast, presence and changes alike', async () => {
  const user = await createUser({ prefix: 'rt-pub' })
  const anon = realtimeClient()
  const signedIn = realtimeClient(user.token)
  try {
    for (const client of [anon, signedIn]) {
      const topic = `lobby-${crypto.randomUUID().slice(0, 8)}`
      const first = await join(client, client.channel(topic, { config: { presence: { key: 'me' } } }))
      assert.equal(first.status, 'CHANNEL_ERROR')
      assert.match(first.err ?? '', /PrivateOnly: This project only allows private channels/)
    }
  } finally {
    await closeAll(anon, signedIn)
  }
})

test("realtime: a user joins their own channels only; another user's and the anon key are refused", async () => {
  const [alice, bob] = await Promise.all([createUser({ prefix: 'rt-own-a' }), createUser({ prefix: 'rt-own-b' })])
  const a = realtimeClient(alice.token)
  const b = realtimeClient(bob.token)
  const anon = realtimeClient()
  const priv = { config: { private: true } }
  try {
    assert.equal((await join(a, a.channel(`user:${alice.id}`, priv))).status, 'SUBSCRIBED')
    assert.equal((await join(a, a.channel(`user:${alice.id}:feed`, priv))).status, 'SUBSCRIBED')
    for (const [client, topic] of [[b, `user:${alice.id}`], [b, `user:${alice.id}:feed`], [anon, `user:${alice.id}`],
      [a, `user:${alice.id}x`], [a, 'user:']] as const) {
      const refused = await join(client, client.channel(topic, priv))
      assert.equal(refused.status, 'CHANNEL_ERROR', topic)
      assert.match(refused.err ?? '', /Unauthorized: You do not have permissions to read from this Channel topic/)
    }
  } finally {
    await closeAll(a, b, anon)
  }
})

test('realtime: on their own channel a client can neither broadcast nor track presence; only the server reaches it', async () => {
  const alice = await createUser({ prefix: 'rt-send' })
  const one = realtimeClient(alice.token)
  const two = realtimeClient(alice.token)
  const topic = `user:${alice.id}:room`
  const heard: any[] = []
  try {
    const sender = one.channel(topic, { config: { private: true, broadcast: { self: true, ack: true } } })
    sender.on('broadcast', { event: '*' }, (p) => heard.push({ at: 'one', ...p }))
    assert.equal((await join(one, sender)).status, 'SUBSCRIBED')
    const listener = two.channel(topic, { config: { private: true } })
    listener.on('broadcast', { event: '*' }, (p) => heard.push({ at: 'two', ...p }))
    assert.equal((await join(two, listener)).status, 'SUBSCRIBED')

    // Over the socket: dropped without a word (as hosted), so the acknowledgement never comes.
    assert.equal(await sender.send({ type: 'broadcast', event: 'note', payload: { n: 1 } }, { timeout: 1500 }), 'timed out')
    assert.notEqual(await sender.track({ name: 'Alice' }), 'ok', 'presence is refused')
    // Over REST: the anon key and the user's own token are dropped; the service role is delivered.
    for (const [key, bearer, n] of [[ANON_KEY, ANON_KEY, 2], [ANON_KEY, alice.token, 3], [SERVICE_ROLE_KEY, SERVICE_ROLE_KEY, 4]] as const) {
      const res = await restBroadcast(key, bearer, topic, n)
      assert.equal(res.status, 202)
      await res.body?.cancel()
    }
    await until(() => heard.length >= 2, 'the service role broadcast at both clients')
    assert.deepEqual(heard.map((h) => `${h.at}:${h.payload.n}`).sort(), ['one:4', 'two:4'])
    assert.deepEqual(Object.keys(listener.presenceState()), [], 'nobody is present')
  } finally {
    await closeAll(one, two)
  }
})
