// What the two provider webhooks (Stripe, Resend) share: how a database error is answered.
// A provider retries every non-2xx for days, so only trouble that a retry can cure may be 5xx.
import type { PostgrestError } from '@supabase/postgrest-js'
import { fromDb, HttpError } from './errors.ts'

/**
 * The database refused the event's data: class 22 (a bad value: the functions' own checks
 * raise 22023/22007/22008, casts raise others), 54 (too large or too deep), or a table's
 * not-null/check constraint. Retrying the same event cannot succeed: it is recorded as ignored.
 */
export function refusedAsBadData(error: { code?: string }): boolean {
  const code = error.code ?? ''
  return code.startsWith('22') || code.startsWith('54') || code === '23502' || code === '23514'
}

/** Any other failure: 503 when the database is unavailable, else 500; both make the provider retry. */
export function webhookDbFailure(error: PostgrestError | { code?: string; message?: string }, what: string): HttpError {
  const mapped = fromDb(error)
  if (mapped.status === 503) return mapped
  console.error(`${what}:`, error)
  return new HttpError(500, 'The event could not be applied; it will be retried')
}
