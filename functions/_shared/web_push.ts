// Web Push (the web app), through the official `web-push` library: it encrypts the payload for
// the subscription (aes128gcm) and signs the VAPID header (generateRequestDetails); the request
// itself goes out with fetch, so a timeout applies and a local push service (tests) can be
// plain http. 201 is delivered; 404/410 mean the subscription is gone; 429/5xx are retried.
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

/**
 * Encrypts a message for one subscription (aes128gcm: a fresh P-256 key pair and ECDH per
 * message, about a millisecond of CPU) and adds the VAPID header. Kept apart from the post so a
 * sender can do this CPU work before it marks the row as being sent, and while earlier messages
 * are on the network.
 */
export function prepareWebPush(
  vapid: VapidConfig,
  target: WebPushTarget,
  payload: string,
  options: WebPushOptions,
): WebPushRequest | Refusal {
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
  try {
    const details = webpush.generateRequestDetails(
      { endpoint: target.endpoint, keys: { p256dh: target.p256dh, auth: target.auth } },
      payload,
      {
        headers: vapidHeadersFor(vapid, target.endpoint),
        TTL: Math.max(0, Math.floor(options.ttlSeconds)),
        urgency: options.urgency,
        ...(options.topic ? { topic: options.topic } : {}),
      },
    )
    return {
      endpoint: details.endpoint,
      method: details.method,
      // fetch sets Content-Length itself; the library gives some values as numbers.
      headers: Object.fromEntries(
        Object.entries(details.headers as Record<string, unknown>)
          .filter(([k]) => k.toLowerCase() !== 'content-length')
          .map(([k, v]) => [k, String(v)]),
      ),
      body: new Uint8Array(details.body as Uint8Array),
    }
  } catch (e) {
    // Keys the library cannot use: this subscription can never receive anything.
    return {
      ok: false,
      status: null,
      gone: true,
      retry: false,
      message: `bad subscription: ${(e as Error).message}`,
      reason: 'bad subscription keys',
    }
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
    const text = await readAtMost(res)
    if (res.status >= 200 && res.status < 300) return { ok: true }
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
  const request = prepareWebPush(vapid, target, payload, options)
  return 'ok' in request ? request : await postWebPush(request, options.timeoutMs)
}
