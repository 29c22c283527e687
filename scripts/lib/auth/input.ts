// Text Postgres cannot hold, refused before any route reads it: a NUL character (text and jsonb
// refuse it) or an unpaired UTF-16 surrogate (jsonb refuses its \u escape), in any field, key or
// query parameter, and JSON nested deeper than anything Auth stores. Hosted Auth hands such
// input to Postgres and answers 500; here it is GoTrue's 400 validation_failed naming the field
// (a local-only difference, docs/local_stack.md).
import { badRequest, validationFailed } from './errors.ts'

const MAX_DEPTH = 64

/** Why a string cannot be stored, or null when it can. */
function unstorable(s: string): string | null {
  if (s.includes('\u0000')) return 'must not contain NUL characters'
  if (!s.isWellFormed()) return 'must not contain unpaired surrogates (invalid Unicode)'
  return null
}

/** Throws 400 naming the first field of the body or the query that Postgres could not store. */
export function refuseUnstorableInput(body: Record<string, unknown>, query: URLSearchParams) {
  for (const [name, value] of query) {
    const why = unstorable(name) ?? unstorable(value)
    if (why) throw validationFailed(`${name}: ${why}`)
  }
  // Iterative, so a deeply nested body cannot exhaust the stack.
  const pending: [string, unknown, number][] = Object.entries(body).map(([k, v]) => [k, v, 1])
  while (pending.length) {
    const [path, value, depth] = pending.pop()!
    if (depth > MAX_DEPTH) throw badRequest('validation_failed', `${path}: nested more than ${MAX_DEPTH} levels deep`)
    if (typeof value === 'string') {
      const why = unstorable(value)
      if (why) throw validationFailed(`${path}: ${why}`)
    } else if (value && typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) {
        const why = unstorable(k)
        if (why) throw validationFailed(`${path}: a key ${why}`)
        pending.push([Array.isArray(value) ? `${path}[${k}]` : `${path}.${k}`, v, depth + 1])
      }
    }
  }
  for (const key of Object.keys(body)) {
    const why = unstorable(key)
    if (why) throw validationFailed(`a field name ${why}`)
  }
}
