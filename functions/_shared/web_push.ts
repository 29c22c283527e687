// Web Push (the web app), through the official `web-push` library: it encrypts the payload for
// the subscription (aes128gcm) and signs the VAPID header (generateRequestDetails); the request
// itself goes out with fetch, so a timeout applies and a local push service (tests) can be
// plain http. 201 is delivered; 404/410 mean the subscription is gone; 429/5xx are retried.
//
// Configuration: WEB_PUSH_VAPID_PUBLIC_KEY, WEB_PUSH_VAPID_PRIVATE_KEY and WEB_PUSH_SUBJECT (a
// mailto: or https: URL) turn the channel on. Endpoints on this machine (http://127.0.0.1,
// localhost) are refused unless WEB_PUSH_ALLOW_LOOPBACK=true (tests), so a subscription cannot
// make the api call itself.
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
  | { ok: false; status: number | null; gone: boolean; retry: boolean; retryAfter?: number; message: string }

const LOOPBACK = /^http:\/\/(127\.0\.0\.1|localhost)(:\d+)?\//

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
  if (
    !target.endpoint.startsWith('https://') &&
    !(LOOPBACK.test(target.endpoint) && optionalEnv('WEB_PUSH_ALLOW_LOOPBACK') === 'true')
  ) {
    return {
      ok: false,
      status: null,
      gone: false,
      retry: false,
      message: 'endpoint not allowed (https only)',
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
    }
  }
}

/** Posts a prepared message to the push service; never throws. */
export async function postWebPush(request: WebPushRequest, timeoutMs = 10_000): Promise<WebPushOutcome> {
  try {
    const res = await fetch(request.endpoint, {
      method: request.method,
      headers: request.headers,
      body: request.body as BodyInit,
      signal: AbortSignal.timeout(timeoutMs),
    })
    const text = await res.text().catch(() => '')
    if (res.status >= 200 && res.status < 300) return { ok: true }
    const retryAfter = Number(res.headers.get('retry-after'))
    return {
      ok: false,
      status: res.status,
      gone: res.status === 404 || res.status === 410,
      retry: res.status === 429 || res.status >= 500,
      ...(Number.isFinite(retryAfter) && retryAfter > 0 ? { retryAfter } : {}),
      message: `${res.status}${text ? `: ${text.slice(0, 200)}` : ''}`,
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
