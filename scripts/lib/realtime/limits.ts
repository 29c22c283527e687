// What one client may ask of the Realtime stand-in. The quotas are hosted Realtime's on the Free
// plan (supabase.com/docs/guides/realtime/quotas), counted per connection here (hosted counts some
// per project); the others bound what the stand-in would otherwise hold or compute for a client.

/** Broadcast payload size (hosted: 256 KB on Free): larger ones are refused, not delivered. */
export const MAX_BROADCAST_PAYLOAD_BYTES = 256 * 1024
/** Messages a connection may send per second (hosted: 100 on Free); beyond, its channels close. */
export const MAX_EVENTS_PER_SECOND = 100
/** Channel joins a connection may make per second (hosted: 100 on Free); beyond, it is disconnected. */
export const MAX_JOINS_PER_SECOND = 100
/** Channels one connection may have joined at once (hosted: 100). */
export const MAX_CHANNELS_PER_CONNECTION = 100
/** postgres_changes bindings in one join (the stand-in's own bound: each costs work per change). */
export const MAX_BINDINGS_PER_CHANNEL = 100
/** A frame larger than this closes the connection (1009): no message of the protocol needs it. */
export const MAX_FRAME_BYTES = 1024 * 1024
/** Bytes queued for a client that does not read; past it the connection is closed (slow consumer). */
export const MAX_BUFFERED_BYTES = 8 * 1024 * 1024
/** The REST broadcast's body (POST /api/broadcast). */
export const MAX_REST_BODY_BYTES = 1024 * 1024

/** Counts events in the current one-second window; `take()` is false once `limit` is passed. */
export class RateWindow {
  private start = 0
  private count = 0
  constructor(readonly limit: number, private now: () => number = Date.now) {}
  /** Counts `n` events; false when the window's count passes the limit. */
  take(n = 1): boolean {
    const t = this.now()
    if (t - this.start >= 1000) {
      this.start = t
      this.count = 0
    }
    this.count += n
    return this.count <= this.limit
  }
}

const encoder = new TextEncoder()

/** Whether a broadcast's user payload (JSON as it would be sent, or binary bytes) passes the limit. */
export function payloadTooLarge(payload: unknown, limit = MAX_BROADCAST_PAYLOAD_BYTES): boolean {
  if (payload instanceof ArrayBuffer || ArrayBuffer.isView(payload)) return payload.byteLength > limit
  const text = JSON.stringify(payload ?? {}) ?? ''
  // A UTF-16 unit is at most 3 bytes of UTF-8: encode only when the length alone cannot tell.
  if (text.length > limit) return true
  return text.length * 3 > limit && encoder.encode(text).length > limit
}
