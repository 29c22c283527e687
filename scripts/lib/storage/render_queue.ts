// A fair queue for image renders (render.ts): a few slots (workers) shared by every client, at
// most `perClientRunning` of them busy with one client's images, a bounded line per client and
// in all, and the clients served in turn. A client queuing slow renders waits behind its own
// images; the others keep a worker and a place in line. Heavy renders (render_plan.ts) hold at
// most `heavySlots` of the slots, fewer than all: a light render never waits for a heavy one
// (render.ts gives a client's heavy and light renders lines of their own).

export interface FairLimits {
  /** Renders running at once, in all (one worker each). */
  slots: number
  /** Renders running at once for one client. */
  perClientRunning: number
  /** Renders waiting for one client; past it the client is turned away. */
  perClientWaiting: number
  /** Renders waiting in all (each holds its source image in memory). */
  waiting: number
  /** Heavy renders running at once, in all (fewer than `slots`). */
  heavySlots: number
}

/** The line is full, for this client or for all. */
export class QueueFull extends Error {}

interface Entry<T, R> {
  item: T
  heavy: boolean
  resolve: (r: R) => void
  reject: (e: unknown) => void
}

export class FairQueue<T, R> {
  // Insertion order is the turn order: a client served goes to the back.
  #waiting = new Map<string, Entry<T, R>[]>()
  #running = new Map<string, number>()
  #active = 0
  #heavyActive = 0
  #queued = 0

  constructor(readonly limits: FairLimits, private readonly run: (item: T) => Promise<R>) {}

  /** Runs `item` for `client` when its turn comes; QueueFull at once when there is no room. */
  submit(client: string, item: T, heavy = false): Promise<R> {
    const line = this.#waiting.get(client) ?? []
    if (this.#queued >= this.limits.waiting || line.length >= this.limits.perClientWaiting) {
      return Promise.reject(new QueueFull('Too many images are being transformed; try again shortly'))
    }
    return new Promise<R>((resolve, reject) => {
      line.push({ item, heavy, resolve, reject })
      this.#waiting.set(client, line)
      this.#queued++
      this.#pump()
    })
  }

  /** Renders waiting and running, for a client or in all. */
  stats(client?: string) {
    if (client === undefined) return { waiting: this.#queued, running: this.#active, heavy: this.#heavyActive }
    return { waiting: this.#waiting.get(client)?.length ?? 0, running: this.#running.get(client) ?? 0 }
  }

  #pump() {
    while (this.#active < this.limits.slots) {
      const client = [...this.#waiting.entries()].find(([k, line]) =>
        (this.#running.get(k) ?? 0) < this.limits.perClientRunning &&
        (!line[0].heavy || this.#heavyActive < this.limits.heavySlots)
      )?.[0]
      if (client === undefined) return
      const line = this.#waiting.get(client)!
      const entry = line.shift()!
      this.#waiting.delete(client)
      if (line.length) this.#waiting.set(client, line) // to the back of the turn order
      this.#queued--
      this.#active++
      if (entry.heavy) this.#heavyActive++
      this.#running.set(client, (this.#running.get(client) ?? 0) + 1)
      let result: Promise<R>
      try {
        result = this.run(entry.item)
      } catch (e) {
        result = Promise.reject(e)
      }
      result.then(entry.resolve, entry.reject).finally(() => {
        this.#active--
        if (entry.heavy) this.#heavyActive--
        const left = this.#running.get(client)! - 1
        if (left) this.#running.set(client, left)
        else this.#running.delete(client)
        this.#pump()
      })
    }
  }
}
