// Keyset pagination, newest first: `limit` (1..100, default 50) and an opaque `before`
// cursor naming the last row of the previous page by (created_at, id).
import { z } from '@hono/zod-openapi'
import type { PostgrestError } from '@supabase/postgrest-js'
import { badRequest, unwrap } from './errors.ts'

export const MAX_PAGE = 100

export const pageQuery = {
  limit: z.coerce.number().int().min(1).max(MAX_PAGE).default(50)
    .openapi({ description: `Page size, 1..${MAX_PAGE}` }),
  before: z.string().max(200).optional().openapi({ description: 'The next_cursor of the previous page' }),
}

export interface Cursor {
  createdAt: string
  id: string
}

export function encodeCursor(row: { created_at: string; id: string | number }): string {
  return btoa(JSON.stringify([row.created_at, String(row.id)])).replace(/=+$/, '')
}

// What Postgres' timestamptz reads back the way JavaScript does: ISO 8601 with a four-digit
// year from 0001 (JS also parses "2020", "+275760-..." and year 0, which Postgres refuses).
const ISO_TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})T\d{2}:\d{2}:\d{2}(\.\d{1,6})?(Z|[+-]\d{2}:\d{2})$/
function isStorableTimestamp(s: string) {
  const m = s.match(ISO_TIMESTAMP)
  if (!m || Number(m[1]) < 1 || isNaN(Date.parse(s))) return false
  const daysInMonth = new Date(Date.UTC(Number(m[1]), Number(m[2]), 0)).getUTCDate()
  return Number(m[3]) >= 1 && Number(m[3]) <= daysInMonth
}

export function decodeCursor(cursor: string | undefined): Cursor | undefined {
  if (!cursor) return undefined
  try {
    const [createdAt, id] = JSON.parse(atob(cursor))
    if (
      typeof createdAt === 'string' && isStorableTimestamp(createdAt) && typeof id === 'string' &&
      /^[0-9a-fA-F-]{1,36}$/.test(id)
    ) {
      return { createdAt, id }
    }
  } catch { /* fall through */ }
  throw badRequest('before: not a valid cursor')
}

/** The PostgREST `or` filter selecting rows strictly older than the cursor. */
export function olderThan(c: Cursor): string {
  const t = JSON.stringify(c.createdAt)
  return `created_at.lt.${t},and(created_at.eq.${t},id.lt.${c.id})`
}

/** Given limit+1 rows, the page and the cursor of the next page (null at the end). */
export function page<T extends { created_at: string; id: string | number }>(rows: T[], limit: number) {
  const items = rows.slice(0, limit)
  const next = rows.length > limit ? encodeCursor(items[items.length - 1]) : null
  return { items, next_cursor: next }
}

/** A PostgREST query of rows with created_at and id, as newestFirstPage narrows and awaits it. */
interface PageableQuery<Row> {
  or(filters: string): this
  order(column: string, options: { ascending: boolean }): this
  limit(count: number): PromiseLike<{ data: Row[] | null; error: PostgrestError | null }>
}

/**
 * One page of a PostgREST query, newest first: applies the `before` cursor, orders by
 * (created_at, id) descending and fetches one row more than asked to know if more follow.
 */
export async function newestFirstPage<Row extends { created_at: string; id: string | number }>(
  query: PageableQuery<Row>,
  q: { limit: number; before?: string },
) {
  const cursor = decodeCursor(q.before)
  if (cursor) query = query.or(olderThan(cursor))
  const rows = unwrap(
    await query.order('created_at', { ascending: false }).order('id', { ascending: false }).limit(
      q.limit + 1,
    ),
  )
  return page(rows, q.limit)
}
