// Presence as Phoenix.Presence shows it to realtime-js: per topic, each key has a list of
// metas (one per tracking channel, each with its own phx_ref). Joiners get `presence_state`;
// every track, untrack or leave sends `presence_diff` {joins, leaves} to the topic.

type Meta = Record<string, unknown> & { phx_ref: string }
export type State = Record<string, { metas: Meta[] }>

interface Entry {
  key: string
  meta: Meta
}

export class Presence {
  /** topic -> tracking channel (any object) -> what it tracks */
  private byTopic = new Map<string, Map<object, Entry>>()

  state(topic: string): State {
    const out: State = {}
    for (const { key, meta } of this.byTopic.get(topic)?.values() ?? []) {
      ;(out[key] ??= { metas: [] }).metas.push(meta)
    }
    return out
  }

  /** Tracks (or re-tracks) what `owner` shows under `key`; returns the diff to send. */
  track(topic: string, owner: object, key: string, payload: Record<string, unknown>) {
    const entries = this.byTopic.get(topic) ?? new Map<object, Entry>()
    this.byTopic.set(topic, entries)
    const previous = entries.get(owner)
    const meta: Meta = { ...payload, phx_ref: ref() }
    if (previous) meta.phx_ref_prev = previous.meta.phx_ref
    entries.set(owner, { key, meta })
    return {
      joins: { [key]: { metas: [meta] } },
      leaves: previous ? { [previous.key]: { metas: [previous.meta] } } : {},
    }
  }

  /** Stops tracking `owner`; returns the diff to send, or null when it tracked nothing. */
  untrack(topic: string, owner: object) {
    const entries = this.byTopic.get(topic)
    const previous = entries?.get(owner)
    if (!entries || !previous) return null
    entries.delete(owner)
    if (!entries.size) this.byTopic.delete(topic)
    return { joins: {}, leaves: { [previous.key]: { metas: [previous.meta] } } }
  }
}

function ref() {
  const bytes = crypto.getRandomValues(new Uint8Array(8))
  return btoa(String.fromCharCode(...bytes)).replace(/[+/=]/g, '')
}
