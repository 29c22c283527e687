// ETag / If-Match on versioned rows (notebooks, journal entries, goals: docs/journal.md "ETag
// and If-Match"). A row's ETag is its row_version, the id of the transaction that last changed
// it (supabase/schemas/sync.sql). /api never compares versions itself: it forwards If-Match to
// PostgREST with the write, and the database refuses a stale one in the same statement
// (PT412), so no read-then-write race is left between a check and the write.
import { badRequest, HttpErrorWithFields, notFound } from './errors.ts'

/** The ETag of a row version (PostgREST sends xid8 as a string): a strong entity tag, `"<row_version>"`. */
export const etagOf = (rowVersion: unknown) => `"${String(rowVersion)}"`

/** A row read or written: its version goes out as the reply's ETag. Returns the row. */
export function sendETag<R extends { row_version: unknown }>(
  c: { header(name: string, value: string): void },
  row: R,
): R {
  c.header('ETag', etagOf(row.row_version))
  return row
}

// `*`, or a list of entity tags (`"123"`, `W/"123"`) as RFC 9110 writes them. A comma inside a
// tag is refused: the database splits the header on commas.
const TAG = String.raw`(?:W\/)?"[\x21\x23-\x2b\x2d-\x7e]*"`
const IF_MATCH = new RegExp(String.raw`^(?:\*|${TAG}(?:[ \t]*,[ \t]*${TAG})*)$`)
const IF_MATCH_MAX = 1000

/** The request's If-Match, checked (400 naming it when malformed), or undefined without one. */
export function ifMatchOf(header: string | undefined): string | undefined {
  if (header === undefined) return undefined
  const value = header.trim()
  if (!value || value.length > IF_MATCH_MAX || !IF_MATCH.test(value)) {
    throw badRequest('If-Match: must be * or a list of ETags such as "123" (the row_version a read returned)')
  }
  return value
}

/** What If-Match is described as in the OpenAPI document. */
export const IF_MATCH_DESCRIPTION = 'Write only over the version read: the ETag a read or write of this row sent ' +
  '(`"<row_version>"`; `W/"<row_version>"`, a list of them, or `*` also work). A stale one is a 412 with the ' +
  'row as it is now and nothing is written; without the header the write goes ahead (last write wins).'

/** The message of a 412: the row changed since it was read. */
export const staleMessage = (field: string) =>
  `The ${field} changed since it was read (If-Match does not name its current version); nothing was written`

/** A PostgREST query builder: a request that can carry one more header, awaited for its reply. */
interface Builder<R> extends PromiseLike<R> {
  setHeader(name: string, value: string): unknown
}

/**
 * Sends a write with the request's If-Match, for the database to decide (PT412 when stale), and
 * returns PostgREST's reply. A stale write is answered here: 412 naming precondition_failed,
 * with the row as the caller now sees it under `field` and its ETag (a row gone meanwhile: 404).
 */
export async function ifStillCurrent<R extends { error: unknown; status: number }>(
  write: Builder<R>,
  ifMatch: string | undefined,
  field: 'entry' | 'notebook' | 'goal',
  readCurrent: () => Promise<{ row_version: unknown } | null>,
): Promise<R> {
  if (ifMatch !== undefined) write.setHeader('If-Match', ifMatch)
  const reply = await write
  if (!reply.error || reply.status !== 412) return reply
  const current = await readCurrent()
  if (!current) throw notFound(`${field[0].toUpperCase()}${field.slice(1)} not found`)
  throw new HttpErrorWithFields(
    412,
    staleMessage(field),
    'precondition_failed',
    { [field]: current },
    { ETag: etagOf(current.row_version) },
  )
}
