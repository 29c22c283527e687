// The Phoenix channel messages realtime-js speaks. vsn 1.0.0 (its default): JSON objects
// {join_ref, ref, topic, event, payload}. vsn 2.0.0: JSON arrays [join_ref, ref, topic, event,
// payload], plus binary frames for user broadcasts (kind 3 from the client, kind 4 to it).

export interface Message {
  join_ref: string | null
  ref: string | null
  topic: string
  event: string
  payload: any
}

export type Vsn = '1.0.0' | '2.0.0'

const PUSH_KIND = 3 // a client's user broadcast (vsn 2.0.0)
const BROADCAST_KIND = 4 // a user broadcast to a client (vsn 2.0.0)
const JSON_ENCODING = 1

/** Reads one frame; null when it is not a message of the version spoken. */
export function decode(vsn: Vsn, data: string | ArrayBuffer | Uint8Array): Message | null {
  if (typeof data !== 'string') return vsn === '2.0.0' ? decodeBinaryPush(new Uint8Array(data)) : null
  let parsed: unknown
  try {
    parsed = JSON.parse(data)
  } catch {
    return null
  }
  if (vsn === '2.0.0') {
    if (!Array.isArray(parsed) || parsed.length !== 5) return null
    const [join_ref, ref, topic, event, payload] = parsed
    return valid({ join_ref, ref, topic, event, payload })
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) return null
  const o = parsed as Record<string, unknown>
  return valid({
    join_ref: o.join_ref as any,
    ref: o.ref as any,
    topic: o.topic as any,
    event: o.event as any,
    payload: o.payload,
  })
}

function valid(m: Message): Message | null {
  if (typeof m.topic !== 'string' || typeof m.event !== 'string') return null
  return { ...m, join_ref: m.join_ref ?? null, ref: m.ref ?? null, payload: m.payload ?? {} }
}

/** kind 3: [kind, joinRef len, ref len, topic len, event len, metadata len, encoding, ...strings, payload]. */
function decodeBinaryPush(b: Uint8Array): Message | null {
  if (b.length < 7 || b[0] !== PUSH_KIND) return null
  const [joinLen, refLen, topicLen, eventLen, metaLen, encoding] = b.subarray(1, 7)
  const text = new TextDecoder()
  let at = 7
  const take = (n: number) => text.decode(b.subarray(at, at += n))
  const join_ref = take(joinLen)
  const ref = take(refLen)
  const topic = take(topicLen)
  const event = take(eventLen)
  const meta = take(metaLen)
  const body = b.subarray(at)
  let payload: unknown
  try {
    payload = encoding === JSON_ENCODING ? JSON.parse(text.decode(body)) : body.slice().buffer
  } catch {
    return null
  }
  const userPayload: Record<string, unknown> = { type: 'broadcast', event, payload }
  if (meta) {
    try {
      Object.assign(userPayload, JSON.parse(meta))
    } catch { /* metadata is optional */ }
  }
  return { join_ref: join_ref || null, ref: ref || null, topic, event: 'broadcast', payload: userPayload }
}

/** Writes one message in the version the socket speaks. */
export function encode(vsn: Vsn, m: Message): string | Uint8Array {
  if (vsn === '1.0.0') return JSON.stringify(m)
  const p = m.payload
  if (m.event === 'broadcast' && p && typeof p.event === 'string' && !m.ref) {
    return encodeBinaryBroadcast(m.topic, p)
  }
  return JSON.stringify([m.join_ref, m.ref, m.topic, m.event, m.payload])
}

/** kind 4: [kind, topic len, event len, metadata len, encoding, topic, event, metadata, payload]. */
function encodeBinaryBroadcast(topic: string, p: { event: string; payload?: unknown; meta?: unknown }) {
  const enc = new TextEncoder()
  const t = enc.encode(topic)
  const e = enc.encode(p.event)
  const meta = enc.encode(p.meta === undefined ? '' : JSON.stringify(p.meta))
  const isBinary = p.payload instanceof ArrayBuffer
  const body = isBinary
    ? new Uint8Array(p.payload as ArrayBuffer)
    : enc.encode(JSON.stringify(p.payload ?? {}))
  const out = new Uint8Array(5 + t.length + e.length + meta.length + body.length)
  out.set([BROADCAST_KIND, t.length, e.length, meta.length, isBinary ? 0 : JSON_ENCODING])
  let at = 5
  for (const part of [t, e, meta, body]) {
    out.set(part, at)
    at += part.length
  }
  return out
}

export const reply = (to: Message, status: 'ok' | 'error', response: unknown): Message => ({
  join_ref: to.join_ref,
  ref: to.ref,
  topic: to.topic,
  event: 'phx_reply',
  payload: { status, response },
})
