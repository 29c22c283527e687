// The local stand-in for Supabase Realtime, served by the gateway under /realtime/v1:
//   /websocket       Phoenix channels as realtime-js speaks them (vsn 1.0.0 and 2.0.0):
//                    postgres_changes on the `supabase_realtime` publication (changes.ts),
//                    broadcast (self/ack) and presence between the clients of a topic;
//   /api/broadcast   the REST broadcast realtime-js falls back to (httpSend).
// Private channels only by default, as the project is set up on hosted (Realtime settings:
// public access off, `private_only`): a channel's broadcast and presence are what the policies on
// realtime.messages allow (authorization.ts), and this project grants no one to send either.
// REALTIME_PRIVATE_ONLY=false opens public channels, as a project with public access on.
// What a client may ask is bounded (limits.ts): hosted Realtime's quotas, and the stand-in's own.
import postgres from 'postgres'
import { BodyTooLarge, readLimited } from '../body.ts'
import { type Claims, TokenError, verifyToken } from './auth.ts'
import { type Extension, mayWrite, type ReadPolicies, readPolicies } from './authorization.ts'
import { type Binding, ChangeFeed, type Subscriber } from './changes.ts'
import { Connection as BaseConnection } from './connection.ts'
import { ParamsError, parseParams } from './filters.ts'
import {
  MAX_BINDINGS_PER_CHANNEL,
  MAX_CHANNELS_PER_CONNECTION,
  MAX_EVENTS_PER_SECOND,
  MAX_FRAME_BYTES,
  MAX_REST_BODY_BYTES,
  payloadTooLarge,
  RateWindow,
} from './limits.ts'
import { Presence } from './presence.ts'
import { decode, type Message, reply } from './protocol.ts'
import { gatewayCors } from '../cors.ts'

export interface RealtimeOptions {
  dbUrl: string
  jwtSecret: string
  /** Public channels refused (hosted's `private_only`); true unless said otherwise. */
  privateOnly?: boolean
}

const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } })

// The REST broadcast API behind the gateway's CORS (realtime-js's httpSend from a page).
const cors = gatewayCors({
  allowHeaders: 'authorization, x-client-info, apikey, content-type',
  methods: 'POST, OPTIONS',
  maxAgeSeconds: 3600,
})
const CORS = cors.headers

/** A 27-bit hash of a binding's parameters: its id (Realtime uses :erlang.phash2 likewise). */
function bindingId(params: unknown) {
  const text = JSON.stringify(params, Object.keys(params as object).sort())
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0
  return h & 0x7ffffff
}

type Connection = BaseConnection<Channel>

/** Realtime's reason when a session's token can no longer be used. */
const ENDED_IMPERSONATION = 'Unauthorized: The impersonation session has ended'

class Channel {
  claims!: Claims
  token!: string
  /** A private channel's read rights (null: a public channel, no policies apply). */
  reads: ReadPolicies | null = null
  /** A private channel's write rights, asked once per token as hosted does. */
  writes = new Map<Extension, boolean>()
  bindings: Binding[] = []
  selfBroadcast = false
  ack = false
  presenceKey = ''
  presenceEnabled = false
  subscriber?: Subscriber
  expiry?: ReturnType<typeof setTimeout>
  constructor(readonly conn: Connection, readonly topic: string, readonly joinRef: string | null) {}
  /** Private and public channels of one name are apart, as on hosted. */
  get key() {
    return (this.reads ? 'private:' : 'public:') + this.topic
  }
  get name() {
    return this.topic.slice('realtime:'.length)
  }
  get hearsPresence() {
    return this.presenceEnabled && (this.reads?.presence ?? true)
  }
  push(event: string, payload: unknown) {
    this.conn.send({ join_ref: this.joinRef, ref: null, topic: this.topic, event, payload })
  }
  system(extension: string, status: 'ok' | 'error', message: string) {
    this.push('system', { extension, status, message, channel: this.topic.slice('realtime:'.length) })
  }
}

export function createRealtime(o: RealtimeOptions) {
  const feed = new ChangeFeed(o.dbUrl)
  const privateOnly = o.privateOnly ?? true
  // Realtime's own connection for authorization probes (hosted: supabase_realtime_admin).
  const authz = postgres(o.dbUrl, { max: 2, onnotice: () => {}, idle_timeout: 60 })
  const restEvents = new RateWindow(MAX_EVENTS_PER_SECOND) // REST broadcasts, all senders together
  const presence = new Presence()
  const topics = new Map<string, Set<Channel>>() // joined channels per topic, across connections

  const members = (key: string) => topics.get(key) ?? new Set<Channel>()

  function leave(ch: Channel) {
    clearTimeout(ch.expiry)
    if (ch.subscriber) feed.unsubscribe(ch.subscriber)
    ch.conn.channels.delete(ch.topic)
    const set = topics.get(ch.key)
    set?.delete(ch)
    if (set && !set.size) topics.delete(ch.key)
    const diff = presence.untrack(ch.key, ch)
    if (diff) { for (const m of members(ch.key)) if (m.hearsPresence) m.push('presence_diff', diff) }
  }

  /** Ends a channel from the server's side, saying why (Realtime's shutdown_response). */
  function shutdown(ch: Channel, message: string) {
    ch.system('system', 'error', message)
    ch.push('phx_close', {})
    leave(ch)
  }

  /** Accepts a (new) token for a joined channel, or throws TokenError. */
  async function authorize(ch: Channel, token: string) {
    const claims = await verifyToken(token, o.jwtSecret)
    // Hosted Realtime knows nothing of this project's impersonation sessions (the restrictive
    // policies keep an ended one from seeing rows); locally a token of an ended one is refused.
    if (!(await feed.impersonationLive(claims))) throw new TokenError(ENDED_IMPERSONATION)
    if (ch.reads) {
      const reads = await readPolicies(authz, ch.name, claims)
      if (!reads.broadcast && !reads.presence) {
        throw new TokenError(`Unauthorized: You do not have permissions to read from this Channel topic: ${ch.name}`)
      }
      ch.reads = reads
      ch.writes.clear()
    }
    ch.claims = claims
    ch.token = token
    if (ch.subscriber) ch.subscriber.claims = claims
    clearTimeout(ch.expiry)
    const ms = Math.min(claims.exp * 1000 - Date.now(), 2 ** 31 - 1)
    ch.expiry = setTimeout(
      () =>
        shutdown(
          ch,
          `Token has expired ${Math.max(0, Math.floor(Date.now() / 1000) - claims.exp)} seconds ago`,
        ),
      ms,
    )
  }

  async function join(conn: Connection, m: Message) {
    if (!m.topic.startsWith('realtime:')) return conn.send(reply(m, 'error', { reason: 'unmatched topic' }))
    if (m.topic === 'realtime:') {
      return conn.send(reply(m, 'error', { reason: 'TopicNameRequired: You must provide a topic name' }))
    }
    if (!conn.joins.take()) {
      conn.send(reply(m, 'error', { reason: 'ClientJoinRateLimitReached: Too many joins per second' }))
      return conn.close(1000, 'Too many joins per second')
    }
    const old = conn.channels.get(m.topic)
    if (!old && conn.channels.size >= MAX_CHANNELS_PER_CONNECTION) {
      return conn.send(reply(m, 'error', { reason: 'ChannelRateLimitReached: Too many channels' }))
    }
    const payload = (m.payload ?? {}) as Record<string, any>
    const config = (payload.config ?? {}) as Record<string, any>
    if (Array.isArray(config.postgres_changes) && config.postgres_changes.length > MAX_BINDINGS_PER_CHANNEL) {
      return conn.send(reply(m, 'error', {
        reason:
          `PostgresChangesLimitReached: Too many postgres_changes in one channel (at most ${MAX_BINDINGS_PER_CHANNEL})`,
      }))
    }
    const isPrivate = config.private === true
    if (!isPrivate && privateOnly) {
      return conn.send(reply(m, 'error', { reason: 'PrivateOnly: This project only allows private channels' }))
    }
    if (old) leave(old)
    const ch = new Channel(conn, m.topic, m.join_ref)
    if (isPrivate) ch.reads = { broadcast: false, presence: false } // decided by authorize()
    let token = payload.access_token ?? payload.user_token
    if (typeof token !== 'string' || token.startsWith('sb_')) token = conn.apikey
    try {
      await authorize(ch, token)
    } catch (e) {
      clearTimeout(ch.expiry)
      if (e instanceof TokenError) return conn.send(reply(m, 'error', { reason: e.message }))
      throw e
    }
    if (conn.closed) return clearTimeout(ch.expiry) // ended while the token was checked
    ch.selfBroadcast = config.broadcast?.self === true
    ch.ack = config.broadcast?.ack === true
    ch.presenceKey = typeof config.presence?.key === 'string' && config.presence.key
      ? config.presence.key
      : crypto.randomUUID()
    ch.presenceEnabled = config.presence?.enabled === true
    const requested = Array.isArray(config.postgres_changes)
      ? config.postgres_changes.filter((p: unknown) => p && typeof p === 'object')
      : []
    const echoed = requested.map((p: Record<string, unknown>) => ({ ...p, id: bindingId(p) }))

    conn.channels.set(m.topic, ch)
    topics.set(ch.key, members(ch.key).add(ch))
    conn.send(reply(m, 'ok', { postgres_changes: echoed }))
    if (ch.hearsPresence) ch.push('presence_state', presence.state(ch.key))
    if (!requested.length) return

    try {
      ch.bindings = requested.map((p: Record<string, unknown>, i: number) => ({
        id: echoed[i].id,
        params: parseParams(p),
      }))
      const sub: Subscriber = {
        claims: ch.claims,
        bindings: ch.bindings,
        push: (ids, data) => ch.push('postgres_changes', { ids, data }),
      }
      await feed.subscribe(sub)
      if (conn.channels.get(m.topic) !== ch) return feed.unsubscribe(sub) // left meanwhile
      ch.subscriber = sub
      // As hosted: the join's ok (supabase-js's SUBSCRIBED) went first; this message says changes
      // are read for the subscriber from now on, so it is sent only once the subscriber is
      // registered with a stream reading from before this moment. Clients wait for it
      // (docs/local_stack.md, tests/realtime_live_test.ts).
      ch.system('postgres_changes', 'ok', 'Subscribed to PostgreSQL')
    } catch (e) {
      if (!(e instanceof ParamsError)) console.error('realtime: postgres_changes subscription failed', e)
      ch.system('postgres_changes', 'error', (e as Error).message)
    }
  }

  /** Whether a private channel's caller may send `extension` (asked once per token). */
  async function allowed(ch: Channel, extension: Extension) {
    if (!ch.reads) return true
    let ok = ch.writes.get(extension)
    if (ok === undefined) {
      ok = await mayWrite(authz, ch.name, ch.claims, extension)
      ch.writes.set(extension, ok)
    }
    return ok
  }

  async function broadcast(ch: Channel, m: Message) {
    if (payloadTooLarge(m.payload?.payload)) {
      // As hosted: not delivered; an acknowledged channel hears why.
      if (ch.ack) ch.conn.send(reply(m, 'error', { error: 'payload_size_exceeded' }))
      return
    }
    // As hosted: a broadcast the policies do not allow is dropped without a word.
    if (!(await allowed(ch, 'broadcast'))) return
    for (const other of members(ch.key)) {
      if (other === ch && !ch.selfBroadcast) continue
      if (other.reads && !other.reads.broadcast) continue
      other.conn.send({
        join_ref: null,
        ref: null,
        topic: other.topic,
        event: 'broadcast',
        payload: m.payload,
      })
    }
    if (ch.ack) ch.conn.send(reply(m, 'ok', {}))
  }

  async function track(ch: Channel, m: Message) {
    const p = (m.payload ?? {}) as Record<string, any>
    let diff
    if (p.event === 'track') {
      if (!p.payload || typeof p.payload !== 'object' || Array.isArray(p.payload)) {
        return ch.conn.send(reply(m, 'error', { reason: 'Presence track payload must be a map' }))
      }
      if (payloadTooLarge(p.payload)) {
        return ch.conn.send(reply(m, 'error', { error: 'payload_size_exceeded' }))
      }
      if (!(await allowed(ch, 'presence'))) {
        return ch.conn.send(reply(m, 'error', { reason: 'Unauthorized: You do not have permissions to track presence' }))
      }
      if (!ch.presenceEnabled) {
        ch.presenceEnabled = true
        if (ch.hearsPresence) ch.push('presence_state', presence.state(ch.key))
      }
      diff = presence.track(ch.key, ch, ch.presenceKey, p.payload)
    } else if (p.event === 'untrack') {
      diff = presence.untrack(ch.key, ch)
    }
    ch.conn.send(reply(m, 'ok', {}))
    if (diff) {
      for (const other of members(ch.key)) if (other.hearsPresence) other.push('presence_diff', diff)
    }
  }

  async function onMessage(conn: Connection, m: Message) {
    if (m.topic === 'phoenix' && m.event === 'heartbeat') return conn.send(reply(m, 'ok', {}))
    if (m.event === 'phx_join') return await join(conn, m)
    const ch = conn.channels.get(m.topic)
    if (!ch) return conn.send(reply(m, 'error', { reason: 'unmatched topic' }))
    switch (m.event) {
      case 'phx_leave':
        conn.send(reply(m, 'ok', {}))
        return leave(ch)
      case 'access_token': {
        const token = m.payload?.access_token
        if (typeof token !== 'string' || token.startsWith('sb_') || token === ch.token) return
        try {
          await authorize(ch, token)
        } catch (e) {
          if (e instanceof TokenError) return shutdown(ch, e.message)
          throw e
        }
        return
      }
      case 'broadcast':
      case 'presence':
        if (!conn.events.take()) {
          // As hosted when max_events_per_second is passed: the channels are shut down.
          for (const joined of [...conn.channels.values()]) shutdown(joined, 'Too many messages per second')
          return
        }
        return m.event === 'broadcast' ? await broadcast(ch, m) : await track(ch, m)
      default:
        return // Realtime ignores other client events
    }
  }

  async function websocket(req: Request, url: URL): Promise<Response> {
    if ((req.headers.get('upgrade') ?? '').toLowerCase() !== 'websocket') {
      return json(400, { error: 'Expected a WebSocket upgrade (realtime-js connects here)' })
    }
    const vsn = url.searchParams.get('vsn') ?? '1.0.0'
    if (vsn !== '1.0.0' && vsn !== '2.0.0') return json(400, { error: `Unsupported vsn ${vsn}` })
    const apikey = req.headers.get('x-api-key') ?? url.searchParams.get('apikey') ?? ''
    try {
      await verifyToken(apikey, o.jwtSecret)
    } catch {
      return json(403, { error: 'Forbidden: the apikey is not a valid key of this project' })
    }
    const { socket, response } = Deno.upgradeWebSocket(req)
    socket.binaryType = 'arraybuffer'
    const conn: Connection = new BaseConnection<Channel>(socket, vsn, apikey, (c) => {
      for (const ch of [...c.channels.values()]) leave(ch)
    })
    let chain = Promise.resolve() // a connection's messages are handled in order
    socket.onmessage = (ev) => {
      if (conn.closed) return
      const size = typeof ev.data === 'string' ? ev.data.length : (ev.data as ArrayBuffer).byteLength
      if (size > MAX_FRAME_BYTES) return conn.close(1009, 'Message too big')
      const m = decode(vsn, ev.data)
      if (!m) return
      chain = chain.then(() => conn.closed ? undefined : onMessage(conn, m)).catch((e) =>
        console.error('realtime: message failed', e)
      )
    }
    socket.onclose = () => {
      chain = chain.then(() => conn.end())
    }
    return response
  }

  /** POST /api/broadcast {messages: [{topic, event, payload, private?}]}. */
  async function restBroadcast(req: Request): Promise<Response> {
    if (req.method === 'OPTIONS') return cors.preflight(req)
    if (req.method !== 'POST') return json(405, { error: 'Method not allowed' }, CORS)
    const bearer = req.headers.get('authorization')?.replace(/^Bearer\s+/i, '') ||
      req.headers.get('apikey') || ''
    let claims: Claims
    try {
      claims = await verifyToken(bearer, o.jwtSecret)
    } catch (e) {
      return json(401, { error: e instanceof TokenError ? e.message : 'Unauthorized' }, CORS)
    }
    let body: any
    try {
      body = JSON.parse(new TextDecoder().decode(await readLimited(req, MAX_REST_BODY_BYTES)))
    } catch (e) {
      if (e instanceof BodyTooLarge) return json(413, { message: `Payload Too Large: ${e.message}` }, CORS)
      return json(400, { error: 'The body must be JSON: {messages: [{topic, event, payload}]}' }, CORS)
    }
    if (!Array.isArray(body?.messages)) return json(400, { error: 'messages: required, an array' }, CORS)
    // Hosted refuses a batch larger than what is left of the second's events, and a payload over
    // the size limit with the batch's validation errors (one entry per message), sending nothing.
    if (!restEvents.take(body.messages.length)) {
      return json(429, { message: 'Too many messages to broadcast, please reduce the batch size' }, CORS)
    }
    const invalid = body.messages.map((msg: any) =>
      msg && payloadTooLarge(msg.payload) ? { payload: ['Payload size exceeds tenant limit'] } : {}
    )
    if (invalid.some((e: object) => Object.keys(e).length)) {
      return json(422, { errors: { messages: invalid } }, CORS)
    }
    // Public messages reach public channels; private ones only a topic the caller may write,
    // asked once per topic (as hosted: refused ones are dropped, the batch still answers 202).
    const writable = new Map<string, Promise<boolean>>()
    for (const msg of body.messages) {
      if (!msg || typeof msg.topic !== 'string' || typeof msg.event !== 'string') continue
      const isPrivate = msg.private === true
      if (isPrivate) {
        if (!writable.has(msg.topic)) writable.set(msg.topic, mayWrite(authz, msg.topic, claims, 'broadcast'))
        if (!(await writable.get(msg.topic))) continue
      }
      const payload = { type: 'broadcast', event: msg.event, payload: msg.payload ?? {} }
      for (const ch of members(`${isPrivate ? 'private:' : 'public:'}realtime:${msg.topic}`)) {
        if (!ch.reads || ch.reads.broadcast) ch.push('broadcast', payload)
      }
    }
    return new Response(null, { status: 202, headers: CORS })
  }

  return {
    /** `path` is what follows /realtime/v1. */
    handle(req: Request, path: string): Promise<Response> | Response {
      const url = new URL(req.url)
      if (path === '/websocket') return websocket(req, url)
      if (path === '/api/broadcast') return restBroadcast(req)
      return json(404, { error: `No route for /realtime/v1${path}` })
    },
    close: async () => {
      await feed.close()
      await authz.end({ timeout: 1 })
    },
  }
}
