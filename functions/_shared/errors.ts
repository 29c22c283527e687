// One error type for every endpoint, mapped to {error, code} with the right status: `error` is
// a message for people, `code` a stable name a client branches on and localizes by
// (docs/api.md "Error codes"; the list below is the one the OpenAPI document publishes).
import type { PostgrestError } from '@supabase/postgrest-js'

/** The code of an error that names nothing more specific: one per status. */
export const GENERIC_CODES: Record<number, string> = {
  400: 'bad_request',
  401: 'unauthorized',
  402: 'payment_required',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  409: 'conflict',
  410: 'gone',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  422: 'unprocessable',
  429: 'rate_limited',
  500: 'internal_error',
  501: 'not_implemented',
  502: 'upstream_failed',
  503: 'unavailable',
  504: 'upstream_timeout',
}

/**
 * The product's well-known refusals, each with its own code (and its status). SQL raises carry
 * theirs in the error's `hint` (`raise exception '...' using errcode = 'PT429', hint =
 * 'daily_allowance_exhausted'`), so PostgREST clients read the same code in `error.hint`.
 */
export const NAMED_CODES = {
  daily_allowance_exhausted: { status: 429, means: 'No encouragement drops left today; more tomorrow (UTC), or earn a bonus' },
  custom_drop_limit_reached: { status: 429, means: 'No custom drops left today: send a template instead' },
  already_checked_in: { status: 409, means: 'A workout check-in exists for that day already' },
  reauthentication_needed: { status: 401, means: 'Sign in again: the action needs a sign-in from the last 10 minutes' },
  impersonation_session_ended: { status: 401, means: 'The impersonation session was stopped or expired' },
  account_deleted: { status: 401, means: "The token's account has been deleted (or is being deleted)" },
  insufficient_drops: { status: 402, means: 'The drops balance is below the price or the debit' },
  ownership_transfer_needed: { status: 409, means: 'The account owns organizations with other members: transfer them first' },
  team_id_required: { status: 400, means: 'A team visibility level needs team_id' },
  org_id_required: { status: 400, means: 'An org visibility level needs org_id' },
  id_conflict: {
    status: 409,
    means: 'The id chosen for a create is in use for something else (other content, or not yours): choose a new id',
  },
  concurrent_change: { status: 503, means: 'A concurrent change got in the way; nothing was saved, repeat the request' },
  no_route: { status: 404, means: 'No route for this method and path' },
  sync_conflict: { status: 409, means: 'A pushed record changed on the server since last_pulled_at: pull, then push again' },
  precondition_failed: {
    status: 412,
    means: 'If-Match does not name the current version (ETag): the row changed since it was read; nothing was written',
  },
} as const satisfies Record<string, { status: number; means: string }>

export type NamedCode = keyof typeof NAMED_CODES
const isNamedCode = (code: unknown): code is NamedCode =>
  typeof code === 'string' && Object.hasOwn(NAMED_CODES, code)

/** A 400 naming its field (`"<field>: <what is wrong>"`, from zod or from SQL) is
 *  `<field>_required` or `<field>_invalid`; the field's path in snake case, list indexes left out. */
export const FIELD_CODE_PATTERN = '^[a-z][a-z0-9_]*_(invalid|required)$'

const FIELD_MESSAGE = /^([A-Za-z_][\w.\[\]-]*)(?:, [^:]+)?: (.*)$/s
const REQUIRED = /^(is )?required\b|^must not be empty\b/i

function fieldCode(message: string): string | undefined {
  const m = message.match(FIELD_MESSAGE)
  if (!m) return undefined
  const field = m[1].split(/[.\[\]]+/).filter((s) => s && !/^\d+$/.test(s)).join('_')
    .replace(/[^A-Za-z0-9]+/g, '_').replace(/^_+|_+$/g, '').toLowerCase()
  if (!field || !/^[a-z]/.test(field)) return undefined
  return `${field}_${REQUIRED.test(m[2]) ? 'required' : 'invalid'}`
}

/** The code of an error that carries none of its own: a field's code for a 400 naming one,
 *  else the status's generic code. */
export function codeFor(status: number, message: string): string {
  if (status === 400) {
    const field = fieldCode(message)
    if (field) return field
  }
  return GENERIC_CODES[status] ?? (status >= 500 ? 'internal_error' : 'bad_request')
}

export class HttpError extends Error {
  /** The stable machine-readable code sent beside the message. */
  readonly code: string
  /** retryAfterSeconds: sent as Retry-After (a 503 the caller should simply repeat).
   *  code: a named code (NAMED_CODES); without it, derived from status and message. */
  constructor(readonly status: number, message: string, readonly retryAfterSeconds?: number, code?: NamedCode) {
    super(message)
    this.code = code ?? codeFor(status, message)
  }
}

/** An error whose reply carries more than {error, code}: fields beside them, and headers. */
export class HttpErrorWithFields extends HttpError {
  constructor(
    status: number,
    message: string,
    code: NamedCode,
    readonly fields: Record<string, unknown>,
    readonly headers: Record<string, string> = {},
  ) {
    super(status, message, undefined, code)
  }
}

export const badRequest = (message: string) => new HttpError(400, message)
export const unauthorized = (message = 'Missing or invalid bearer token') => new HttpError(401, message)
export const forbidden = (message = 'Insufficient permissions') => new HttpError(403, message)
export const notFound = (message = 'Not found') => new HttpError(404, message)
export const conflict = (message: string) => new HttpError(409, message)
export const tooManyRequests = (message: string) => new HttpError(429, message)
export const unavailable = (message: string) => new HttpError(503, message)

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
  // PostgREST cannot reach the database, or has not loaded its schema cache yet.
  'PGRST000': 503,
  'PGRST001': 503,
  'PGRST002': 503,
  'PGRST003': 503,
}

/**
 * The status for a SQLSTATE or PostgREST code: the table above, then PostgREST's own custom
 * codes `PTxxx` (raised by our SQL as `sqlstate 'PT404'`), then whole classes: 22 (data
 * exceptions: a value Postgres refuses) and 54 (program limits: too deep, too long) are the
 * caller's bad input; 08 and 57P (connection lost, shutting down) mean "try again".
 */
function statusFor(code: string | undefined): number {
  if (!code) return 500
  if (STATUS_BY_CODE[code]) return STATUS_BY_CODE[code]
  const custom = code.match(/^PT([45]\d\d)$/)
  if (custom) return Number(custom[1])
  if (code.startsWith('22') || code.startsWith('54')) return 400
  if (code.startsWith('08') || code.startsWith('57P')) return 503
  return 500
}

const UNAVAILABLE = 'The database is unavailable; try again shortly'
/** The database (or PostgREST before it) could not answer: repeat in a second. */
const databaseUnavailable = () => new HttpError(503, UNAVAILABLE, 1)

// Serialization failure and deadlock: the statement lost to a concurrent one and was rolled
// back whole; the same request succeeds when repeated.
const RETRYABLE = new Set(['40001', '40P01'])

/**
 * No SQLSTATE and no PostgREST code: nothing answered for the database. postgrest-js reports a
 * failed fetch (PostgREST down or unreachable) with code '' and HTTP status 0; a gateway's own
 * answer while PostgREST restarts (502-504, a body that is no PostgREST error) has no code.
 */
function isUnreachable(error: { code?: string; message?: string }, httpStatus?: number) {
  if (error.code) return false
  if (httpStatus === 0 || (httpStatus !== undefined && httpStatus >= 502 && httpStatus <= 504)) return true
  return /fetch|connect|network|socket|ECONNREFUSED/i.test(error.message ?? '')
}

// postgres.js's own codes when the connection is lost or cannot be made, and the system's.
const CONNECTION_LOST = new Set([
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ENOTCONN',
])

/**
 * An error thrown by a direct database client (postgres.js) rather than returned by PostgREST:
 * a lost connection or a server shutting down or starting (08, 57P) is "try again", never 500.
 */
export function fromThrown(err: unknown): HttpError | undefined {
  const code = (err as { code?: unknown })?.code
  if (typeof code !== 'string') return undefined
  if (CONNECTION_LOST.has(code) || code.startsWith('08') || code.startsWith('57P')) {
    console.error('database unavailable', err)
    return databaseUnavailable()
  }
  return undefined
}

// A fallback: the tables' BEFORE triggers name the field in words before a check constraint
// fires (docs/database.md, "Errors and SQLSTATEs"); a constraint name that still arrives here is
// turned into words where it says which field (<table>_<field>_required, <table>_<field>_check).
function constraintMessage(message: string): string | undefined {
  const required = message.match(/check constraint "\w+?_(team_id|org_id)_required"/)
  if (required) {
    const level = required[1] === 'team_id' ? 'team' : 'org'
    return `${required[1]}: required when a visibility is ${level}`
  }
  const field = message.match(
    /check constraint "[a-z]+(?:_[a-z]+)*?_(title|name|content|mood|tags|description|notes|status|settings|full_name|avatar_url|metadata_visibility|content_visibility)_check"/,
  )
  if (field) return `${field[1]}: value is not allowed (see the API limits)`
  return undefined
}

/** Turns a PostgREST/Postgres error into an HttpError (`httpStatus`: the reply's, when known);
 *  unknown ones become a 500. */
export function fromDb(
  error: PostgrestError | { code?: string; message?: string },
  httpStatus?: number,
): HttpError {
  if (error.code === '23514' && error.message) {
    const friendly = constraintMessage(error.message)
    if (friendly) return badRequest(friendly)
  }
  if (error.code && RETRYABLE.has(error.code)) {
    console.error('database conflict, the caller may retry', error)
    return new HttpError(503, 'A concurrent change got in the way; nothing was saved, try again', 1, 'concurrent_change')
  }
  if (isUnreachable(error, httpStatus)) {
    console.error('PostgREST unreachable:', error.message ?? error)
    return databaseUnavailable()
  }
  const status = statusFor(error.code)
  if (status === 503) {
    console.error('database unavailable', error)
    return databaseUnavailable()
  }
  if (status === 500) {
    console.error('database error', error)
    return new HttpError(500, 'Internal error')
  }
  if (status === 403 && /row-level security|permission denied/i.test(error.message ?? '')) {
    return forbidden()
  }
  const named = isNamedCode((error as PostgrestError).hint) ? (error as PostgrestError).hint as NamedCode : undefined
  return new HttpError(status, error.message || 'Request failed', undefined, named)
}

type Reply = { data: unknown; error: PostgrestError | null; status?: number }
type Success<R> = Extract<R, { error: null }>

/**
 * The data of a reply: the success branch of a postgrest-js reply (a row for .single(), a row
 * or null for .maybeSingle(), the function's result for .rpc()); of a plain {data, error}, its
 * data when there is no error.
 */
type DataOf<R extends Reply> = [Success<R>] extends [never] ? NonNullable<R['data']> : Success<R>['data']

/**
 * postgrest-js types the data of .single() after a function that returns one row (not a set)
 * as never, which would check nothing: such a reply is refused at compile time (read the
 * object without .single()).
 */
type NotNever<R extends Reply> = [Success<R>] extends [never] ? unknown
  : [Success<R>['data']] extends [never] ? { neverTyped: 'drop .single() after an RPC that returns one row' }
  : unknown

/** The data of a PostgREST reply, or its error as an HttpError. */
export function unwrap<R extends Reply>(reply: R & NotNever<R>): DataOf<R> {
  if (reply.error) throw fromDb(reply.error, reply.status)
  return reply.data as DataOf<R>
}
