// Web Push (the web app): the payload is encrypted for the subscription (RFC 8291 aes128gcm,
// encryptWebPush below) and the VAPID header is signed by the official `web-push` library
// (getVapidHeaders); the request goes out with fetch, so a timeout applies and a local push
// service (tests) can be plain http. 201 is delivered; 404/410 mean the subscription is gone;
// 429/5xx are retried.
//
// Why the encryption is not web-push's own: the library derives the key with node:crypto's ECDH,
// which under Deno costs 1.3-1.5 ms of CPU a message (a P-256 key pair and a shared secret, each a
// slow scalar multiplication), and the fan-out is CPU-bound. WebCrypto does the same work in
// about 0.75 ms: its key pair comes from ring (fast), and the sender's public key is read from the
// PKCS#8 it exports instead of being computed again. The format is the library's (one record of
// 4096, no padding) and tests/web_push_encryption_test.ts opens both with http_ece, the library
// web-push itself encrypts with, as a browser would.
//
// Configuration: WEB_PUSH_VAPID_PUBLIC_KEY, WEB_PUSH_VAPID_PRIVATE_KEY and WEB_PUSH_SUBJECT (a
// mailto: or https: URL) turn the channel on.
//
// The endpoint is the client's choice and this code POSTs to it, so it is held to known push
// services (webPushEndpointProblem: at registration and again before each send): https on a host
// of WEB_PUSH_ALLOWED_HOSTS (default the browsers' own services), no IP literal, no port but 443;
// redirects are not followed; at most 1 KB of an answer is read, and what the sender stores of it
// where the owner can read it (retired_reason) is fixed words, never the answer. Loopback
// endpoints (http://127.0.0.1, localhost, the tests' fake) only with WEB_PUSH_ALLOW_LOOPBACK=true.
import { Buffer } from 'node:buffer'
import nodeCrypto from 'node:crypto'
import webpush from 'web-push'
import { optionalEnv } from './env.ts'

export interface VapidConfig {
  publicKey: string
  privateKey: string
  subject: string
}

export function vapidConfig(): VapidConfig | null {
  const publicKey = optionalEnv('WEB_PUSH_VAPID_PUBLIC_KEY')
  const privateKey = optionalEnv('WEB_PUSH_VAPID_PRIVATE_KEY')
  const subject = optionalEnv('WEB_PUSH_SUBJECT')
  if (!publicKey || !privateKey || !subject) return null
  return { publicKey, privateKey, subject }
}

export const webPushConfigured = () => vapidConfig() !== null

export interface WebPushTarget {
  endpoint: string
  p256dh: string
  auth: string
}

export type WebPushOutcome =
  | { ok: true }
  | {
    ok: false
    status: number | null
    gone: boolean
    retry: boolean
    retryAfter?: number
    message: string
    /** When `gone`: the device's retired_reason (fixed words). */
    reason?: string
  }

/**
 * The browsers' push services (the endpoints PushManager.subscribe() hands out): Chrome, Edge on
 * Android, Opera, Samsung Internet and other Chromium browsers use FCM; Firefox Mozilla's
 * autopush; Safari Apple's web.push.apple.com; Edge on Windows WNS (wns2-*.notify.windows.com).
 * `*.` matches any subdomain (not the bare domain).
 */
export const DEFAULT_WEB_PUSH_HOSTS = [
  'fcm.googleapis.com',
  'updates.push.services.mozilla.com',
  '*.push.apple.com',
  '*.notify.windows.com',
]

/**
 * WEB_PUSH_ALLOWED_HOSTS (comma-separated host names or `*.suffix` patterns) replaces the default
 * list; the word `default` in it stands for the default list (`default,push.example.com` extends it).
 */
export function webPushAllowedHosts(): string[] {
  const configured = optionalEnv('WEB_PUSH_ALLOWED_HOSTS')
  if (!configured) return DEFAULT_WEB_PUSH_HOSTS
  return configured.split(',').map((h) => h.trim().toLowerCase()).filter(Boolean).flatMap((h) =>
    h === 'default' ? DEFAULT_WEB_PUSH_HOSTS : /^(\*\.)?[a-z0-9-]+(\.[a-z0-9-]+)+$/.test(h) ? [h] : []
  )
}

const hostMatches = (host: string, pattern: string) =>
  pattern.startsWith('*.')
    ? host.endsWith(pattern.slice(1)) && host.length > pattern.length - 1
    : host === pattern

const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]'])
/** An IP literal in any notation URL parsing accepts (dotted, decimal, hex, IPv6): the last label is not a name. */
const notAName = (host: string) => host.startsWith('[') || !/\.[a-z][a-z0-9-]*$/.test(host)

/**
 * Why the sender may not call a Web Push endpoint (null: it may). Checked when a subscription is
 * registered through /api (400 naming the field) and again before each send (a row written
 * around the api, through PostgREST, is retired unsent). The database refuses what it can know
 * without the configuration (private.web_push_endpoint_problem).
 */
export function webPushEndpointProblem(endpoint: string): string | null {
  let url: URL
  try {
    url = new URL(endpoint)
  } catch {
    return 'must be a URL'
  }
  if (url.username || url.password) return 'must not carry a user name or password'
  const host = url.hostname.toLowerCase()
  if (LOOPBACK_HOSTS.has(host) && optionalEnv('WEB_PUSH_ALLOW_LOOPBACK') === 'true') {
    return url.protocol === 'http:' || url.protocol === 'https:' ? null : 'must be an https URL'
  }
  if (url.protocol !== 'https:') return 'must be an https URL'
  if (url.port) return 'must not name a port (push services listen on 443)'
  if (notAName(host)) return 'must name a push service by its host name, not an IP address'
  const allowed = webPushAllowedHosts()
  if (!allowed.some((pattern) => hostMatches(host, pattern))) {
    return `must be the endpoint of a known push service (${allowed.join(', ')})`
  }
  return null
}

/** Retirement reasons: fixed words, since the owner reads them and the endpoint was the owner's choice. */
const GONE_REASON: Record<number, string> = { 404: 'not found (404)', 410: 'gone (410)' }
/** The most of a push service's answer ever read: enough for an error's first words. */
export const MAX_ANSWER_BYTES = 1024

/** The first `max` bytes of a body, as text; the rest is never read (the stream is cancelled). */
async function readAtMost(res: Response, max = MAX_ANSWER_BYTES): Promise<string> {
  if (!res.body) return ''
  const reader = res.body.getReader()
  const parts: Uint8Array[] = []
  let size = 0
  try {
    while (size < max) {
      const { done, value } = await reader.read()
      if (done) break
      parts.push(value)
      size += value.length
    }
  } catch {
    // A body cut short says nothing more than its status.
  } finally {
    reader.cancel().catch(() => {})
  }
  const bytes = new Uint8Array(size)
  parts.reduce((at, part) => (bytes.set(part, at), at + part.length), 0)
  return new TextDecoder().decode(bytes.subarray(0, max))
}

/**
 * The VAPID header for a push service's origin, signed once and reused for 12 hours (of its
 * 24): an ES256 signature per message would cost more than the message's own encryption.
 */
const vapidHeaders = new Map<string, { headers: Record<string, string>; until: number }>()
function vapidHeadersFor(vapid: VapidConfig, endpoint: string): Record<string, string> {
  const origin = new URL(endpoint).origin
  const key = `${origin} ${vapid.publicKey} ${vapid.subject}`
  const cached = vapidHeaders.get(key)
  if (cached && cached.until > Date.now()) return cached.headers
  const expiration = Math.floor(Date.now() / 1000) + 12 * 3600
  const headers = webpush.getVapidHeaders(
    origin,
    vapid.subject,
    vapid.publicKey,
    vapid.privateKey,
    'aes128gcm',
    expiration,
  ) as Record<string, string>
  vapidHeaders.set(key, { headers, until: Date.now() + 11 * 3600_000 })
  return headers
}

export interface WebPushOptions {
  ttlSeconds: number
  urgency: 'normal' | 'high'
  /** Lets the push service replace an undelivered message of the same topic. */
  topic?: string
}

/** A message encrypted for its subscription and signed, ready to post. */
export interface WebPushRequest {
  endpoint: string
  method: string
  headers: Record<string, string>
  body: Uint8Array
}

type Refusal = Extract<WebPushOutcome, { ok: false }>

/** A subscription whose keys can never be used: the device is retired, nothing is sent. */
const badKeys = (message: string): Refusal => ({
  ok: false,
  status: null,
  gone: true,
  retry: false,
  message: `bad subscription: ${message}`,
  reason: 'bad subscription keys',
})

const P256 = { name: 'ECDH', namedCurve: 'P-256' } as const
const utf8 = new TextEncoder()
const KEY_INFO = utf8.encode('WebPush: info\0')
const CEK_INFO = utf8.encode('Content-Encoding: aes128gcm\0')
const NONCE_INFO = utf8.encode('Content-Encoding: nonce\0')
/** RFC 8188's record size: the whole message is one record (push services take at most 4096 bytes). */
const RECORD_SIZE = 4096
/** The header before the ciphertext: salt (16), record size (4), key id length (1), the sender's key (65). */
const HEADER_SIZE = 16 + 4 + 1 + 65
/** The largest payload one record holds: a record is the payload, a delimiter byte and a 16-byte tag. */
export const MAX_WEB_PUSH_PAYLOAD = RECORD_SIZE - HEADER_SIZE - 1 - 16

const concat = (...parts: Uint8Array[]) => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0))
  parts.reduce((at, p) => (out.set(p, at), at + p.length), 0)
  return out
}

/** Lenient, as the library's own Buffer decoding: the lengths are checked after. */
const fromBase64Url = (text: string) => new Uint8Array(Buffer.from(text, 'base64url'))

/**
 * A fresh P-256 key pair and its public key (uncompressed, 65 bytes). WebCrypto's exportKey('raw')
 * computes the public key again from the private one (as slow as the ECDH itself); the PKCS#8 the
 * key pair was made with carries it at its end (ECPrivateKey's publicKey: BIT STRING of 66 bytes).
 */
export async function ephemeralKeyPair(): Promise<
  { privateKey: CryptoKey; publicKey: Uint8Array<ArrayBuffer> }
> {
  const pair = await crypto.subtle.generateKey(P256, true, ['deriveBits']) as CryptoKeyPair
  const pkcs8 = new Uint8Array(await crypto.subtle.exportKey('pkcs8', pair.privateKey))
  // BIT STRING (03), 66 bytes (42), no unused bits (00), then the point: 04 || x || y.
  const tail = pkcs8.subarray(pkcs8.length - 68)
  const publicKey = tail[0] === 0x03 && tail[1] === 0x42 && tail[2] === 0x00 && tail[3] === 0x04
    ? tail.slice(3)
    : new Uint8Array(await crypto.subtle.exportKey('raw', pair.publicKey))
  return { privateKey: pair.privateKey, publicKey }
}

/**
 * Encrypts a payload for a subscription (RFC 8291 with RFC 8188's aes128gcm): a fresh key pair
 * and salt per message, the keys derived with HKDF-SHA-256 from the ECDH secret and the
 * subscription's auth secret. Returns the request body, or a refusal when the subscription's
 * keys cannot be used.
 */
export async function encryptWebPush(
  target: Pick<WebPushTarget, 'p256dh' | 'auth'>,
  payload: Uint8Array,
): Promise<Uint8Array | Refusal> {
  const browserKey = fromBase64Url(target.p256dh)
  const authSecret = fromBase64Url(target.auth)
  if (browserKey.length !== 65) return badKeys('the subscription p256dh value should be 65 bytes long')
  if (authSecret.length < 16) return badKeys('the subscription auth key should be at least 16 bytes long')
  if (payload.length > MAX_WEB_PUSH_PAYLOAD) {
    // The message cannot be sent as it is; the subscription is fine.
    return {
      ok: false,
      status: null,
      gone: false,
      retry: false,
      message: `payload over ${MAX_WEB_PUSH_PAYLOAD} bytes`,
    }
  }
  const sender = await ephemeralKeyPair()
  let secret: Uint8Array
  try {
    // WebCrypto takes any 65 bytes at import; a point off the curve fails here.
    const browser = await crypto.subtle.importKey('raw', browserKey, P256, false, [])
    secret = new Uint8Array(
      await crypto.subtle.deriveBits({ name: 'ECDH', public: browser }, sender.privateKey, 256),
    )
  } catch {
    return badKeys('the subscription p256dh value is not a P-256 public key')
  }
  const ikm = new Uint8Array(
    nodeCrypto.hkdfSync('sha256', secret, authSecret, concat(KEY_INFO, browserKey, sender.publicKey), 32),
  )
  const salt = crypto.getRandomValues(new Uint8Array(16))
  const cek = new Uint8Array(nodeCrypto.hkdfSync('sha256', ikm, salt, CEK_INFO, 16))
  const nonce = new Uint8Array(nodeCrypto.hkdfSync('sha256', ikm, salt, NONCE_INFO, 12))
  const cipher = nodeCrypto.createCipheriv('aes-128-gcm', cek, nonce)
  const header = new Uint8Array(21)
  header.set(salt)
  new DataView(header.buffer).setUint32(16, RECORD_SIZE)
  header[20] = sender.publicKey.length
  // The last (and only) record ends with the delimiter 2, unpadded.
  return concat(
    header,
    sender.publicKey,
    cipher.update(payload),
    cipher.update(Uint8Array.of(2)),
    cipher.final(),
    cipher.getAuthTag(),
  )
}

/**
 * Encrypts a message for one subscription (encryptWebPush: about 0.75 ms of CPU, most of it on
 * WebCrypto's thread) and adds the VAPID header. Kept apart from the post so a sender can do this
 * work before it marks the row as being sent, and while earlier messages are on the network.
 */
export async function prepareWebPush(
  vapid: VapidConfig,
  target: WebPushTarget,
  payload: string,
  options: WebPushOptions,
): Promise<WebPushRequest | Refusal> {
  const problem = webPushEndpointProblem(target.endpoint)
  if (problem) {
    // Never called: the device is retired, so nothing more is queued for it.
    return {
      ok: false,
      status: null,
      gone: true,
      retry: false,
      message: `endpoint not allowed: ${problem}`,
      reason: 'endpoint not allowed',
    }
  }
  const body = await encryptWebPush(target, utf8.encode(payload))
  if (!(body instanceof Uint8Array)) return body
  return {
    endpoint: target.endpoint,
    method: 'POST',
    headers: {
      ...vapidHeadersFor(vapid, target.endpoint),
      TTL: String(Math.max(0, Math.floor(options.ttlSeconds))),
      Urgency: options.urgency,
      ...(options.topic ? { Topic: options.topic } : {}),
      'Content-Type': 'application/octet-stream',
      'Content-Encoding': 'aes128gcm',
    },
    body,
  }
}

/**
 * Posts a prepared message to the push service; never throws. A redirect is not followed (it
 * could lead anywhere) and counts as a refusal; at most MAX_ANSWER_BYTES of the answer are read.
 */
export async function postWebPush(request: WebPushRequest, timeoutMs = 10_000): Promise<WebPushOutcome> {
  try {
    const res = await fetch(request.endpoint, {
      method: request.method,
      headers: request.headers,
      body: request.body as BodyInit,
      redirect: 'manual',
      signal: AbortSignal.timeout(timeoutMs),
    })
    if (res.status >= 200 && res.status < 300) {
      // Nothing in a success is read: reading it cost a third of a post's CPU.
      res.body?.cancel().catch(() => {})
      return { ok: true }
    }
    const text = await readAtMost(res)
    if (res.status >= 300 && res.status < 400) {
      return {
        ok: false,
        status: res.status,
        gone: false,
        retry: false,
        message: `${res.status}: redirect not followed`,
      }
    }
    const retryAfter = Number(res.headers.get('retry-after'))
    const gone = GONE_REASON[res.status]
    return {
      ok: false,
      status: res.status,
      gone: !!gone,
      retry: res.status === 429 || res.status >= 500,
      ...(Number.isFinite(retryAfter) && retryAfter > 0 ? { retryAfter } : {}),
      // The first words of the answer stay in the outbox row (private) for whoever runs the job.
      // deno-lint-ignore no-control-regex -- control characters are what is taken out
      message: `${res.status}${text ? `: ${text.replace(/[\x00-\x1f\x7f]+/g, ' ').slice(0, 200)}` : ''}`,
      ...(gone ? { reason: gone } : {}),
    }
  } catch (e) {
    return { ok: false, status: null, gone: false, retry: true, message: `network: ${(e as Error).message}` }
  }
}

/** Sends one message; never throws. */
export async function sendWebPush(
  vapid: VapidConfig,
  target: WebPushTarget,
  payload: string,
  options: WebPushOptions & { timeoutMs?: number },
): Promise<WebPushOutcome> {
  const request = await prepareWebPush(vapid, target, payload, options)
  return 'ok' in request ? request : await postWebPush(request, options.timeoutMs)
}
