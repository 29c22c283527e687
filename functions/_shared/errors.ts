// One error type for every endpoint, mapped to {error} with the right status.
import type { PostgrestError } from '@supabase/postgrest-js'

export class HttpError extends Error {
  constructor(readonly status: number, message: string) {
    super(message)
  }
}

export const badRequest = (message: string) => new HttpError(400, message)
export const unauthorized = (message = 'Missing or invalid bearer token') => new HttpError(401, message)
export const forbidden = (message = 'Insufficient permissions') => new HttpError(403, message)
export const notFound = (message = 'Not found') => new HttpError(404, message)

// SQLSTATEs our SQL functions raise on purpose, and PostgREST's own codes.
const STATUS_BY_CODE: Record<string, number> = {
  '42501': 403, // insufficient_privilege: RLS, grants, guards
  '22023': 400, // invalid_parameter_value: validation inside SQL functions
  '22P02': 400, // invalid_text_representation (bad uuid, enum)
  '23514': 400, // check_violation (limits, balance below zero)
  '23502': 400, // not_null_violation
  '23503': 400, // foreign_key_violation (a referenced row does not exist)
  '23505': 409, // unique_violation
  'P0002': 404, // no_data_found
  'PGRST116': 404, // .single() found no row
  'PGRST301': 401, // JWT rejected by PostgREST
  'PGRST302': 401,
}

// Check constraints named <table>_<field>_required say which field is missing.
function constraintMessage(message: string): string | undefined {
  const required = message.match(/check constraint "\w+?_(team_id|org_id)_required"/)
  if (required) {
    const level = required[1] === 'team_id' ? 'team' : 'org'
    return `${required[1]}: required when a visibility is ${level}`
  }
  const field = message.match(/check constraint "[a-z]+(?:_[a-z]+)*?_(title|name|content|mood|tags|description|notes|status|settings|full_name|avatar_url|metadata_visibility|content_visibility)_check"/)
  if (field) return `${field[1]}: value is not allowed (see the API limits)`
  return undefined
}

/** Turns a PostgREST/Postgres error into an HttpError; unknown ones become a 500. */
export function fromDb(error: PostgrestError | { code?: string; message?: string }): HttpError {
  if (error.code === '23514' && error.message) {
    const friendly = constraintMessage(error.message)
    if (friendly) return badRequest(friendly)
  }
  const status = (error.code && STATUS_BY_CODE[error.code]) || 500
  if (status === 500) {
    console.error('database error', error)
    return new HttpError(500, 'Internal error')
  }
  if (status === 403 && /row-level security|permission denied/i.test(error.message ?? '')) {
    return forbidden()
  }
  return new HttpError(status, error.message || 'Request failed')
}

/** The data of a PostgREST reply, or its error as an HttpError. */
export function unwrap<T>(reply: { data: T | null; error: PostgrestError | null }): T {
  if (reply.error) throw fromDb(reply.error)
  return reply.data as T
}
