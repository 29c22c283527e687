// Supabase Storage's error shape: {statusCode, error, message}, the HTTP status the same as
// statusCode.
import { BodyTooLarge } from '../body.ts'

export class StorageError extends Error {
  constructor(readonly status: number, readonly error: string, message: string) {
    super(message)
  }
}

export const fail = (status: number, error: string, message: string): never => {
  throw new StorageError(status, error, message)
}

export const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } })

export const errorBody = (status: number, error: string, message: string) =>
  json(status, { statusCode: String(status), error, message })

/** The response for anything a handler threw: Storage's shape, 500 only for our own faults. */
export function errorResponse(e: unknown): Response {
  if (e instanceof StorageError) return errorBody(e.status, e.error, e.message)
  if (e instanceof BodyTooLarge) return errorBody(413, 'Payload too large', e.message)
  // Postgres errors a caller can cause: RLS refusals, duplicate keys, timeouts.
  const code = (e as { code?: string }).code
  // private.check_request: an ended impersonation session, an account being deleted.
  if (code === 'PT401') return errorBody(401, 'Unauthorized', (e as Error).message)
  if (code === '42501') return errorBody(403, 'Unauthorized', 'new row violates row-level security policy')
  if (code === '23505') return errorBody(409, 'Duplicate', 'The resource already exists')
  if (code === '57014') return errorBody(504, 'DatabaseTimeout', 'The query timed out')
  // A value Postgres refuses (class 22: a NUL, a bad number or date) is the request's fault.
  if (code?.startsWith('22')) return errorBody(400, 'InvalidRequest', (e as Error).message)
  console.error('storage error', e)
  return errorBody(500, 'internal', 'Internal Server Error')
}
