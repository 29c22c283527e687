// What the two provider webhooks (Stripe, Resend) share: how a database error is answered, and
// text made storable. A provider retries every non-2xx for days, so only trouble that a retry
// can cure may be 5xx.
import type { PostgrestError } from '@supabase/postgrest-js'
import { fromDb, HttpError } from './errors.ts'

/**
 * Text Postgres and PostgREST accept: NUL replaced, cut to `max` UTF-16 units (when given),
 * then made well-formed. The cut comes first: cutting after would split a surrogate pair at the
 * end again, and PostgREST refuses a lone surrogate in a JSON body (PGRST102).
 */
export const storableText = (s: string, max?: number): string =>
  (max === undefined ? s : s.slice(0, max)).replace(/\u0000/g, '\uFFFD').toWellFormed()

/** 4xx statuses that say nothing about the event's data: credentials, grants, a missing function, timing. */
const NOT_THE_DATA = new Set([401, 403, 404, 408, 409, 429])

/**
 * The database (or PostgREST) refused the event's data, so retrying the same event cannot
 * succeed: it is recorded as ignored. That is class 22 (a bad value: the functions' own checks
 * raise 22023/22007/22008, casts raise others), 54 (too large or too deep), a not-null or check
 * violation, PGRST102 (PostgREST could not read the body as JSON), and any other 4xx (`status`,
 * the HTTP status of PostgREST's reply) except those a fix or a retry on our side cures: 401/403
 * (the service key, grants), 404 (a function not in the schema cache, as during a deploy),
 * 408/409/429 (timing, a race), and our SQL's own faults whatever their status (a plain
 * `raise`/assert (P0), a statement that does not fit the schema (42), PostgREST's schema-cache and
 * JWT errors (PGRST2xx, PGRST3xx)).
 */
export function refusedAsBadData(error: { code?: string }, status?: number): boolean {
  const code = error.code ?? ''
  if (
    code.startsWith('22') || code.startsWith('54') || code === '23502' || code === '23514' ||
    code === 'PGRST102'
  ) return true
  if (status === undefined || status < 400 || status > 499 || NOT_THE_DATA.has(status)) return false
  return !/^(P0|42|PGRST[23])/.test(code)
}

/** Any other failure: 503 when the database is unavailable, else 500; both make the provider retry. */
export function webhookDbFailure(
  error: PostgrestError | { code?: string; message?: string },
  what: string,
): HttpError {
  const mapped = fromDb(error)
  if (mapped.status === 503) return mapped
  console.error(`${what}:`, error)
  return new HttpError(500, 'The event could not be applied; it will be retried')
}
