// A local push service as browsers' push services speak RFC 8030 (with VAPID, RFC 8292, and
// aes128gcm payloads, RFC 8291): POST /push/<id> answers 201; 404/410 for a subscription that is
// gone; 429 with Retry-After; 413 over 4 KB. It checks the VAPID JWT (ES256 over the key in
// `k=`, aud = this origin, sub = WEB_PUSH_SUBJECT) and keeps each message, decrypting it on
// demand with the subscription's private key.
//
// Its env turns Web Push on for the api (a VAPID key pair made here, WEB_PUSH_SUBJECT) and
// allows its http://127.0.0.1 endpoints (WEB_PUSH_ALLOW_LOOPBACK).
// Control (tests only, steered per subscription):
//   POST /__control/subscribe {gone?: 404|410}  a new subscription {endpoint, keys: {p256dh, auth}}
//   POST /__control/fail {endpoint, status, times, retry_after?, location?, body?, body_bytes?}
//        its next pushes fail: with that status, a Location (a redirect), a body (text, or
//        body_bytes of filler streamed as the client reads)
//   GET  /__control/streamed?endpoint=<url>       {bytes}: how much of such bodies clients pulled
//   GET  /__control/messages?endpoint=<url>       {payload (decrypted JSON), ttl, urgency, topic}[]
import webpush from 'web-push'
import { importJWK, jwtVerify } from 'jose'

export interface WebPushFakeOptions {
  latencyMs?: number
  /** Keep only counts per topic and endpoint (the bench), not the messages. */
  countOnly?: boolean
}

const b64u = (bytes: Uint8Array) =>
  btoa(String.fromCharCode(...bytes)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
const unb64u = (s: string) =>
  Uint8Array.from(
    atob(s.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (s.length % 4)) % 4)),
    (c) => c.charCodeAt(0),
  )
const concat = (...parts: Uint8Array[]) => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0))
  let i = 0
  for (const p of parts) out.set(p, (i += p.length) - p.length)
  return out
}
const text = (s: string) => new TextEncoder().encode(s)

async function hkdf(salt: Uint8Array, ikm: Uint8Array, info: Uint8Array, bytes: number) {
  const key = await crypto.subtle.importKey('raw', ikm as BufferSource, 'HKDF', false, ['deriveBits'])
  return new Uint8Array(
    await crypto.subtle.deriveBits(
      { name: 'HKDF', hash: 'SHA-256', salt: salt as BufferSource, info: info as BufferSource },
      key,
      bytes * 8,
    ),
  )
}

interface Subscription {
  privateKey: CryptoKey
  publicRaw: Uint8Array
  auth: Uint8Array
  gone?: number
}

/** RFC 8291: one aes128gcm record from the application server to this subscription. */
async function decrypt(sub: Subscription, body: Uint8Array): Promise<string> {
  const salt = body.slice(0, 16)
  const idlen = body[20]
  const asPublic = body.slice(21, 21 + idlen)
  const ciphertext = body.slice(21 + idlen)
  const asKey = await crypto.subtle.importKey(
    'raw',
    asPublic as BufferSource,
    { name: 'ECDH', namedCurve: 'P-256' },
    false,
    [],
  )
  const secret = new Uint8Array(
    await crypto.subtle.deriveBits({ name: 'ECDH', public: asKey }, sub.privateKey, 256),
  )
  const ikm = await hkdf(sub.auth, secret, concat(text('WebPush: info\0'), sub.publicRaw, asPublic), 32)
  const cek = await hkdf(salt, ikm, text('Content-Encoding: aes128gcm\0'), 16)
  const nonce = await hkdf(salt, ikm, text('Content-Encoding: nonce\0'), 12)
  const key = await crypto.subtle.importKey('raw', cek as BufferSource, 'AES-GCM', false, ['decrypt'])
  const plain = new Uint8Array(
    await crypto.subtle.decrypt(
      { name: 'AES-GCM', iv: nonce as BufferSource },
      key,
      ciphertext as BufferSource,
    ),
  )
  let end = plain.length - 1
  while (end > 0 && plain[end] === 0) end--
  return new TextDecoder().decode(plain.slice(0, end)) // plain[end] is the 0x02 delimiter
}

export async function start(options: WebPushFakeOptions = {}) {
  const vapid = webpush.generateVAPIDKeys()
  const subject = 'mailto:push@journal.test'
  const subs = new Map<string, Subscription>()
  const received = new Map<
    string,
    { body: Uint8Array; ttl: string | null; urgency: string | null; topic: string | null }[]
  >()
  const counts = new Map<string, number>()
  /** topic|id -> when (epoch ms) the request that first carried it had been read. */
  const arrivals = new Map<string, number>()
  const failures = new Map<
    string,
    {
      status: number
      times: number
      retryAfter?: number
      location?: string
      body?: string
      bodyBytes?: number
    }
  >()
  const streamed = new Map<string, number>()
  const pub = unb64u(vapid.publicKey)
  const verifyKey = await importJWK({
    kty: 'EC',
    crv: 'P-256',
    x: b64u(pub.slice(1, 33)),
    y: b64u(pub.slice(33, 65)),
  }, 'ES256')
  // One key pair for the bench's many subscriptions (the keys are not what it measures).
  let sharedKeys: { privateKey: CryptoKey; publicRaw: Uint8Array } | undefined

  let origin = ''
  const server: Deno.HttpServer<Deno.NetAddr> = Deno.serve({
    hostname: '127.0.0.1',
    port: 0,
    onListen: () => {},
  }, async (req): Promise<Response> => {
    const url = new URL(req.url)
    if (url.pathname === '/__control/subscribe') {
      const b = await req.json().catch(() => ({}))
      const pair = b.shared && sharedKeys ? sharedKeys : await (async () => {
        const kp = await crypto.subtle.generateKey({ name: 'ECDH', namedCurve: 'P-256' }, true, [
          'deriveBits',
        ]) as CryptoKeyPair
        return {
          privateKey: kp.privateKey,
          publicRaw: new Uint8Array(await crypto.subtle.exportKey('raw', kp.publicKey)),
        }
      })()
      if (b.shared) sharedKeys = pair
      const auth = crypto.getRandomValues(new Uint8Array(16))
      const id = crypto.randomUUID()
      subs.set(id, { ...pair, auth, gone: b.gone })
      return Response.json({
        endpoint: `${origin}/push/${id}`,
        keys: { p256dh: b64u(pair.publicRaw), auth: b64u(auth) },
      })
    }
    if (url.pathname === '/__control/fail') {
      const b = await req.json()
      failures.set(new URL(b.endpoint).pathname.split('/').pop()!, {
        status: b.status,
        times: b.times ?? 1,
        retryAfter: b.retry_after,
        location: b.location,
        body: b.body,
        bodyBytes: b.body_bytes,
      })
      return Response.json({ ok: true })
    }
    if (url.pathname === '/__control/streamed') {
      const id = new URL(url.searchParams.get('endpoint') ?? 'http://x/').pathname.split('/').pop()!
      return Response.json({ bytes: streamed.get(id) ?? 0 })
    }
    if (url.pathname === '/__control/messages') {
      const id = new URL(url.searchParams.get('endpoint') ?? 'http://x/').pathname.split('/').pop()!
      const sub = subs.get(id)
      const list = received.get(id) ?? []
      return Response.json(
        await Promise.all(list.map(async (m) => ({
          payload: sub ? JSON.parse(await decrypt(sub, m.body)) : null,
          ttl: m.ttl,
          urgency: m.urgency,
          topic: m.topic,
        }))),
      )
    }
    const m = url.pathname.match(/^\/push\/([0-9a-f-]+)$/)
    if (req.method !== 'POST' || !m) return new Response('Not found', { status: 404 })
    const id = m[1]
    const sub = subs.get(id)
    const body = new Uint8Array(await req.arrayBuffer())
    const arrived = Date.now()
    if (options.latencyMs) await new Promise((r) => setTimeout(r, options.latencyMs))
    // countOnly (the bench): any id is a live subscription, and only the VAPID header's shape is checked.
    if (!sub && !options.countOnly) return new Response('No such subscription', { status: 404 })
    if (sub?.gone) return new Response('Subscription expired', { status: sub.gone })
    // VAPID: Authorization: vapid t=<JWT>, k=<public key>
    const auth = req.headers.get('authorization') ?? ''
    const vm = auth.match(/^vapid t=([^,\s]+),\s*k=([A-Za-z0-9_-]+)$/)
    if (!vm || vm[2] !== vapid.publicKey) return new Response('Missing or unknown VAPID key', { status: 401 })
    if (!options.countOnly) {
      try {
        const { payload } = await jwtVerify(vm[1], verifyKey, { audience: origin })
        if (payload.sub !== subject) return new Response('VAPID sub mismatch', { status: 403 })
      } catch (e) {
        return new Response(`Bad VAPID token: ${(e as Error).message}`, { status: 403 })
      }
    }
    if (req.headers.get('content-encoding') !== 'aes128gcm') {
      return new Response('Unsupported encoding', { status: 415 })
    }
    if (body.length > 4096) return new Response('Payload too large', { status: 413 })
    const failure = failures.get(id)
    if (failure && failure.times > 0) {
      failure.times--
      const headers: Record<string, string> = {}
      if (failure.retryAfter) headers['retry-after'] = String(failure.retryAfter)
      if (failure.location) headers.location = failure.location
      // A long answer, made as the client reads it: what it pulled is counted.
      const filler = new Uint8Array(64 * 1024).fill(0x61)
      let left = failure.bodyBytes ?? 0
      const body = failure.bodyBytes
        ? new ReadableStream<Uint8Array>({
          pull(controller) {
            if (left <= 0) return controller.close()
            const chunk = filler.subarray(0, Math.min(left, filler.length))
            left -= chunk.length
            streamed.set(id, (streamed.get(id) ?? 0) + chunk.length)
            controller.enqueue(chunk)
          },
        }, { highWaterMark: 0 })
        : failure.body ?? 'Try again later'
      return new Response(body, { status: failure.status, headers })
    }
    const topic = req.headers.get('topic')
    const key = `${topic}|${id}`
    counts.set(key, (counts.get(key) ?? 0) + 1)
    if (!arrivals.has(key)) arrivals.set(key, arrived)
    if (!options.countOnly) {
      const list = received.get(id) ?? []
      list.push({ body, ttl: req.headers.get('ttl'), urgency: req.headers.get('urgency'), topic })
      received.set(id, list)
    }
    return new Response(null, {
      status: 201,
      headers: { location: `${origin}/message/${crypto.randomUUID()}` },
    })
  })

  origin = `http://127.0.0.1:${server.addr.port}`
  return {
    env: {
      WEB_PUSH_VAPID_PUBLIC_KEY: vapid.publicKey,
      WEB_PUSH_VAPID_PRIVATE_KEY: vapid.privateKey,
      WEB_PUSH_SUBJECT: subject,
      WEB_PUSH_ALLOW_LOOPBACK: 'true',
      WEB_PUSH_FAKE_URL: `http://127.0.0.1:${server.addr.port}`,
    },
    counts,
    arrivals,
    stop: () => server.shutdown(),
  }
}
