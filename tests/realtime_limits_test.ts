// What one client may ask of the Realtime stand-in (scripts/lib/realtime/limits.ts): payload and
// body sizes, messages and joins per second, channels per connection, bindings per join, a
// stalled reader closed; one subscriber's failing filter costs no one else their changes.
import { strict as assert } from 'node:assert'
import type { RealtimeChannel, SupabaseClient } from '@supabase/supabase-js'
import { checkFilters, type ColumnMeta, FILTERS_PER_STATEMENT } from '../scripts/lib/realtime/changes.ts'
import { Connection, type Socket } from '../scripts/lib/realtime/connection.ts'
import {
  MAX_BINDINGS_PER_CHANNEL,
  MAX_BROADCAST_PAYLOAD_BYTES,
  MAX_CHANNELS_PER_CONNECTION,
  MAX_EVENTS_PER_SECOND,
  MAX_REST_BODY_BYTES,
} from '../scripts/lib/realtime/limits.ts'
import { ANON_KEY, API_URL, sql, test } from './_helpers.ts'
import { closeAll, openTestRooms, realtimeClient, until } from './_realtime.ts'

await openTestRooms()

const topicName = (what: string) => `room:${what}-${crypto.randomUUID().slice(0, 8)}`
const PRIVATE = { config: { private: true } }
const oversized = () => ({ blob: 'A'.repeat(MAX_BROADCAST_PAYLOAD_BYTES + 1) })

/** Joins `topic` through supabase-js; resolves with the first status and its error, if any. */
async function subscribe(client: SupabaseClient, ch: RealtimeChannel) {
  await client.realtime.setAuth()
  const seen: { status: string; err?: Error }[] = []
  ch.subscribe((status, err) => seen.push({ status, err }))
  await until(() => seen.length > 0, `joining ${ch.topic}`)
  return seen[0]
}

/** A raw Phoenix (vsn 1.0.0) socket on the gateway with the anon key, collecting what it is sent. */
async function rawSocket() {
  const ws = new WebSocket(
    `${API_URL.replace(/^http/, 'ws')}/realtime/v1/websocket?apikey=${ANON_KEY}&vsn=1.0.0`,
  )
  const got: any[] = []
  let closed: CloseEvent | undefined
  ws.onmessage = (e) => got.push(JSON.parse(e.data))
  ws.onclose = (e) => closed = e
  await new Promise((resolve, reject) => {
    ws.onopen = resolve
    ws.onerror = reject
  })
  let ref = 0
  const push = (topic: string, event: string, payload: unknown) => {
    const r = String(++ref)
    ws.send(JSON.stringify({ topic, event, payload, ref: r, join_ref: event === 'phx_join' ? r : null }))
    return r
  }
  const replyTo = (r: string) => got.find((m) => m.event === 'phx_reply' && m.ref === r)
  return { ws, got, push, replyTo, closed: () => closed }
}

test('realtime: a broadcast payload over 256 KB is refused (payload_size_exceeded) and not delivered', async () => {
  const sender = realtimeClient()
  const listener = realtimeClient()
  const topic = topicName('big')
  const heard: any[] = []
  try {
    const out = sender.channel(topic, { config: { broadcast: { ack: true }, private: true } })
    assert.equal((await subscribe(sender, out)).status, 'SUBSCRIBED')
    const inbox = listener.channel(topic, PRIVATE).on('broadcast', { event: '*' }, (p) => heard.push(p))
    assert.equal((await subscribe(listener, inbox)).status, 'SUBSCRIBED')

    assert.equal(await out.send({ type: 'broadcast', event: 'huge', payload: oversized() }), 'error')
    assert.equal(await out.send({ type: 'broadcast', event: 'small', payload: { n: 1 } }), 'ok')
    await until(() => heard.length > 0, 'the small broadcast')
    // Broadcasts of one sender arrive in order: the refused one would have come first.
    assert.deepEqual(heard.map((p) => p.event), ['small'])
  } finally {
    await closeAll(sender, listener)
  }
})

test('realtime: REST broadcast refuses an oversized body (413, unread) and an oversized payload (422)', async () => {
  const listener = realtimeClient()
  const topic = topicName('rest-big')
  const heard: any[] = []
  try {
    const inbox = listener.channel(topic, PRIVATE).on('broadcast', { event: '*' }, (p) => heard.push(p))
    assert.equal((await subscribe(listener, inbox)).status, 'SUBSCRIBED')

    // A chunked body of 40 MB: answered 413 once the limit is passed, long before its end.
    const total = 40 * 1024 * 1024
    const chunk = new TextEncoder().encode('A'.repeat(64 * 1024))
    let sent = 0
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new TextEncoder().encode(`{"messages":[{"topic":"${topic}","event":"e","payload":{"big":"`))
      },
      pull(c) {
        if (sent >= total) {
          c.enqueue(new TextEncoder().encode('"}}]}'))
          return c.close()
        }
        sent += chunk.length
        c.enqueue(chunk)
      },
    })
    const res = await fetch(`${API_URL}/realtime/v1/api/broadcast`, {
      method: 'POST',
      headers: { apikey: ANON_KEY, 'content-type': 'application/json' },
      body,
      duplex: 'half',
    } as RequestInit)
    assert.equal(res.status, 413)
    assert.match((await res.json()).message, /larger than 1 MB/)
    assert.ok(sent < total / 2, `the gateway stopped reading early (${sent} of ${total} bytes pulled)`)
    assert.ok(MAX_REST_BODY_BYTES < total / 2)

    // Within the body limit, a payload over 256 KB: Realtime's validation errors, nothing sent.
    const refused = await fetch(`${API_URL}/realtime/v1/api/broadcast`, {
      method: 'POST',
      headers: { apikey: ANON_KEY, 'content-type': 'application/json' },
      body: JSON.stringify({
        messages: [{ topic, event: 'ok', payload: { n: 1 } }, { topic, event: 'huge', payload: oversized() }],
      }),
    })
    assert.equal(refused.status, 422)
    assert.deepEqual(await refused.json(), {
      errors: { messages: [{}, { payload: ['Payload size exceeds tenant limit'] }] },
    })
    const res2 = await listener.channel(topic, PRIVATE).httpSend('after', { n: 2 })
    assert.deepEqual(res2, { success: true })
    await until(() => heard.length > 0, 'the broadcast after')
    assert.deepEqual(heard.map((p) => p.event), ['after'], 'nothing of the refused batch was sent')
  } finally {
    await closeAll(listener)
  }
})

test('realtime: more than 100 messages a second from one connection shuts its channels down', async () => {
  const listener = realtimeClient()
  const topic = topicName('flood')
  const heard: any[] = []
  const flood = await rawSocket()
  try {
    const inbox = listener.channel(topic, PRIVATE).on('broadcast', { event: '*' }, (p) => heard.push(p))
    assert.equal((await subscribe(listener, inbox)).status, 'SUBSCRIBED')
    const join = flood.push(`realtime:${topic}`, 'phx_join', { config: { private: true } })
    await until(() => flood.replyTo(join), 'the join reply')
    assert.equal(flood.replyTo(join).payload.status, 'ok')

    const n = MAX_EVENTS_PER_SECOND + 50
    for (let i = 0; i < n; i++) {
      flood.push(`realtime:${topic}`, 'broadcast', { type: 'broadcast', event: 'spam', payload: { i } })
    }
    await until(() => flood.got.some((m) => m.event === 'phx_close'), 'the channel shut down')
    const system = flood.got.find((m) => m.event === 'system')
    assert.equal(system.payload.status, 'error')
    assert.equal(system.payload.message, 'Too many messages per second')
    await until(() => heard.length >= MAX_EVENTS_PER_SECOND, 'the allowed broadcasts')
    // A later broadcast from elsewhere arrives after anything the flood could still deliver.
    assert.deepEqual(await listener.channel(topic, PRIVATE).httpSend('marker', {}), { success: true })
    await until(() => heard.some((p) => p.event === 'marker'), 'the marker')
    assert.equal(heard.filter((p) => p.event === 'spam').length, MAX_EVENTS_PER_SECOND)
  } finally {
    flood.ws.close()
    await closeAll(listener)
  }
})

test('realtime: a join with more than 100 postgres_changes bindings is refused', async () => {
  const client = realtimeClient()
  try {
    const ch = client.channel(topicName('bindings'), PRIVATE)
    for (let i = 0; i <= MAX_BINDINGS_PER_CHANNEL; i++) {
      ch.on('postgres_changes', {
        event: 'INSERT',
        schema: 'public',
        table: 'notifications',
        filter: `type=eq.a.b${i}`,
      }, () => {})
    }
    const { status, err } = await subscribe(client, ch)
    assert.equal(status, 'CHANNEL_ERROR')
    assert.match(String(err?.message ?? err), /PostgresChangesLimitReached: Too many postgres_changes/)

    const fine = client.channel(topicName('bindings-ok'), PRIVATE)
    for (let i = 0; i < MAX_BINDINGS_PER_CHANNEL; i++) {
      fine.on('postgres_changes', {
        event: 'INSERT',
        schema: 'public',
        table: 'notifications',
        filter: `type=eq.a.b${i}`,
      }, () => {})
    }
    assert.equal((await subscribe(client, fine)).status, 'SUBSCRIBED')
  } finally {
    await closeAll(client)
  }
})

test('realtime: a connection joins at most 100 channels, and at most 100 a second', async () => {
  const socket = await rawSocket()
  const burst = await rawSocket()
  try {
    const refs = Array.from(
      { length: MAX_CHANNELS_PER_CONNECTION },
      (_, i) => socket.push(`realtime:room:many-${i}`, 'phx_join', { config: { private: true } }),
    )
    await until(() => refs.every((r) => socket.replyTo(r)), 'the joins', 20_000)
    assert.ok(refs.every((r) => socket.replyTo(r).payload.status === 'ok'))
    await new Promise((r) => setTimeout(r, 1100)) // past the second of the joins
    const extra = socket.push('realtime:room:many-extra', 'phx_join', { config: { private: true } })
    await until(() => socket.replyTo(extra), 'the extra join reply')
    assert.deepEqual(socket.replyTo(extra).payload, {
      status: 'error',
      response: { reason: 'ChannelRateLimitReached: Too many channels' },
    })
    // Rejoining a joined topic is no new channel.
    const again = socket.push('realtime:room:many-0', 'phx_join', { config: { private: true } })
    await until(() => socket.replyTo(again), 'the rejoin reply')
    assert.equal(socket.replyTo(again).payload.status, 'ok')

    // 101 joins in a burst: the last is refused and the connection closed, as hosted does.
    const joins = Array.from(
      { length: 101 },
      (_, i) => burst.push(`realtime:room:burst-${i % 50}`, 'phx_join', { config: { private: true } }),
    )
    await until(() => burst.closed() !== undefined, 'the burst connection closed')
    assert.deepEqual(burst.replyTo(joins[100])?.payload, {
      status: 'error',
      response: { reason: 'ClientJoinRateLimitReached: Too many joins per second' },
    })
  } finally {
    socket.ws.close()
    burst.ws.close()
  }
})

test('realtime: a client that stops reading is disconnected once 8 MB wait for it', () => {
  // The gateway's sockets report bufferedAmount (what the client has not taken yet).
  let buffered = 0
  const sent: unknown[] = []
  const closes: number[] = []
  const socket: Socket = {
    readyState: WebSocket.OPEN,
    get bufferedAmount() {
      return buffered
    },
    send: (d) => sent.push(d),
    close: (code) => closes.push(code!),
  }
  const ended: unknown[] = []
  const conn = new Connection(socket, '1.0.0', 'key', (c) => ended.push(c), 1000)
  const m = { join_ref: null, ref: null, topic: 'realtime:x', event: 'broadcast', payload: {} }
  buffered = 900
  conn.send(m)
  assert.equal(sent.length, 1)
  assert.deepEqual(closes, [])
  buffered = 1001
  conn.send(m)
  assert.deepEqual(closes, [1008], 'closed as a policy violation')
  assert.equal(ended.length, 1, 'its channels are left at once, without waiting for the client')
  conn.send(m)
  assert.equal(sent.length, 2, 'nothing more is queued for it')
})

test('realtime: filters are checked in bounded statements; a failing one loses only itself', async () => {
  const column = (name: string, sqlType: string): ColumnMeta => ({
    name,
    type: sqlType,
    sqlType,
    isPk: false,
  })
  const checks = new Map<string, any>()
  // More distinct filters than one statement checks, and their parameters past Postgres' 65,535.
  const n = 33_000
  for (let i = 0; i < n; i++) {
    checks.set(`t${i}`, { column: column('type', 'text'), op: 'eq', value: `a.b${i}`, actual: 'a.b7' })
  }
  // json has no equality operator: this one fails in Postgres, whoever's it is.
  checks.set('broken', { column: column('doc', 'json'), op: 'eq', value: '{}', actual: '{}' })
  checks.set('uuid-in', {
    column: column('user_id', 'uuid'),
    op: 'in',
    value: '{00000000-0000-4000-8000-000000000001,00000000-0000-4000-8000-000000000002}',
    actual: '00000000-0000-4000-8000-000000000002',
  })
  checks.set('missing', null)
  assert.ok(n > FILTERS_PER_STATEMENT)
  const errors = console.error
  console.error = () => {}
  let out: Map<string, boolean>
  try {
    out = await checkFilters(sql, checks)
  } finally {
    console.error = errors
  }
  assert.equal(out.size, checks.size)
  assert.equal(out.get('t7'), true)
  assert.equal([...out].filter(([k, v]) => k.startsWith('t') && v).length, 1)
  assert.equal(out.get('broken'), false)
  assert.equal(out.get('uuid-in'), true, 'the filters checked beside the failing one keep their outcome')
  assert.equal(out.get('missing'), false)
})
