// How many renders one client may start a minute (render.ts): a token bucket per client that
// holds RENDERS_PER_MINUTE and refills at that rate, so a burst of a page's icons passes and a
// stream of distinct sizes does not. Only renders count: an answer from the render cache
// costs nothing. A client is the user of a user token, else the request's address.

export const RENDERS_PER_MINUTE = 120

interface Bucket {
  tokens: number
  at: number
}

export class RenderRate {
  #buckets = new Map<string, Bucket>()

  constructor(readonly perMinute = RENDERS_PER_MINUTE, readonly maxClients = 10_000) {}

  /** Takes one render for `client`: 0 when it may start now, else the seconds to wait. */
  take(client: string, now = Date.now()): number {
    const refill = this.perMinute / 60_000 // tokens a millisecond
    const b = this.#buckets.get(client) ?? { tokens: this.perMinute, at: now }
    b.tokens = Math.min(this.perMinute, b.tokens + (now - b.at) * refill)
    b.at = now
    this.#buckets.delete(client) // re-inserted last: the map's order is the last use
    this.#buckets.set(client, b)
    if (this.#buckets.size > this.maxClients) this.#forgetOldest()
    if (b.tokens < 1) return Math.ceil((1 - b.tokens) / refill / 1000)
    b.tokens -= 1
    return 0
  }

  #forgetOldest() {
    for (const client of this.#buckets.keys()) {
      this.#buckets.delete(client)
      if (this.#buckets.size <= this.maxClients) return
    }
  }
}
