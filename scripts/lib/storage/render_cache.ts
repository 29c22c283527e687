// Renders kept between requests (render.ts), so that asking again for an image at a size it
// was already made at costs no CPU. A render is keyed by the object's version (storage.objects
// .version changes with every upload, update, move or copy; with its id, eTag and update time
// beside it) and the normalized transformation, so a changed object is never answered from an
// old render; renders of versions no longer asked for age out. The cache is bounded in bytes
// (least recently used out first); a render refused as unrenderable (422, a timeout included)
// is kept too, so it is not tried again and again. The caller's right to the object is checked
// before the cache is asked: a cached render is never an access path.
import type { Rendered } from './transform.ts'

/** What a render came to: the image, or Storage's error for it. */
export type CachedRender = Rendered | { status: number; error: string; message: string }

/** Bytes kept in all, and the largest render kept. */
export const RENDER_CACHE_BYTES = 64 * 1024 * 1024
export const RENDER_CACHE_ENTRY_BYTES = 8 * 1024 * 1024
const ENTRY_OVERHEAD = 256

const sizeOf = (key: string, v: CachedRender) =>
  key.length * 2 + ENTRY_OVERHEAD + ('bytes' in v ? v.bytes.length : v.message.length * 2)

export class RenderCache {
  // Insertion order is recency: a hit moves its entry to the end.
  #entries = new Map<string, CachedRender>()
  #bytes = 0

  constructor(readonly maxBytes = RENDER_CACHE_BYTES, readonly maxEntryBytes = RENDER_CACHE_ENTRY_BYTES) {}

  get(key: string): CachedRender | undefined {
    const v = this.#entries.get(key)
    if (v === undefined) return undefined
    this.#entries.delete(key)
    this.#entries.set(key, v)
    return v
  }

  set(key: string, v: CachedRender) {
    const size = sizeOf(key, v)
    if (size > this.maxEntryBytes) return
    this.delete(key)
    this.#entries.set(key, v)
    this.#bytes += size
    for (const [oldest, old] of this.#entries) {
      if (this.#bytes <= this.maxBytes) break
      this.delete(oldest, old)
    }
  }

  delete(key: string, v = this.#entries.get(key)) {
    if (v === undefined) return
    this.#entries.delete(key)
    this.#bytes -= sizeOf(key, v)
  }

  stats() {
    return { entries: this.#entries.size, bytes: this.#bytes }
  }
}

/** The object as it is now: any change to it gives another key. */
export interface ObjectVersion {
  bucket: string
  name: string
  id: string | null
  version: string | null
  eTag: string | null
  updatedAt: Date | string | null
}

/** A render's key: the object's version, the options in a fixed order, and, when no format is
 *  asked, whether the client takes WebP (the same URL gives either). */
export function renderKey(o: ObjectVersion, options: Record<string, unknown>, acceptsWebp: boolean) {
  const updated = o.updatedAt instanceof Date ? o.updatedAt.toISOString() : o.updatedAt
  const params = Object.keys(options).sort().map((k) => `${k}:${options[k]}`).join(',')
  const accept = options.format === undefined ? `webp:${acceptsWebp}` : ''
  return JSON.stringify([o.bucket, o.name, o.id, o.version, o.eTag, updated, params, accept])
}
