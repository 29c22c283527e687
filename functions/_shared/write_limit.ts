// The write rate limit on /api (docs/rate_limits.md): a mutating request is counted once, by the
// credential middleware, in the same budget as the caller's PostgREST writes (the signed-in user,
// or the address of an anonymous caller), and refused with 429, Retry-After and {error} saying
// when to retry. The PostgREST calls /api then makes carry the database's secret in
// x-api-write-pass, so PostgREST's pre-request does not count them again; the secret never
// leaves the server.
import { serviceDb } from './db.ts'
import { fromDb, HttpError } from './errors.ts'

/** Honoured by PostgREST's pre-request (private.limit_writes) when it holds the secret. */
export const WRITE_PASS_HEADER = 'x-api-write-pass'

/** The request headers the database reads the client's address from (private.client_address). */
const ADDRESS_HEADERS = ['cf-connecting-ip', 'x-forwarded-for']

/**
 * Counts one mutating request of the user (userId) or, for a public route (null), of the
 * address its headers name; a 429 HttpError when the budget is spent (nothing counted then).
 * For a user, a 401 when their account is being deleted, as PostgREST's pre-request says.
 */
export async function takeApiWrite(userId: string | null, headers: Headers): Promise<void> {
  const requestHeaders = Object.fromEntries(
    ADDRESS_HEADERS.flatMap((name) => headers.has(name) ? [[name, headers.get(name)]] : []),
  )
  const { data, error, status } = await serviceDb().rpc('take_api_write', {
    user_id: userId,
    request_headers: requestHeaders,
  })
  if (error) throw fromDb(error, status)
  const verdict = data?.[0]
  if (verdict?.retry_after_seconds != null) {
    throw new HttpError(429, verdict.message ?? 'Too many writes', verdict.retry_after_seconds)
  }
}

let pass: Promise<string> | undefined

async function askPass(): Promise<string> {
  const { data, error, status } = await serviceDb().rpc('api_write_pass')
  if (error || typeof data !== 'string') {
    pass = undefined
    throw fromDb(error ?? { message: 'api_write_pass returned no secret' }, status)
  }
  return data
}

/** The secret, asked once per isolate (a failure is asked again next time). */
export function apiWritePass(): Promise<string> {
  return pass ??= askPass()
}

/** fetch that adds the secret: for the clients that call PostgREST with a caller's token. */
export const fetchWithWritePass: typeof fetch = async (input, init) => {
  const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined))
  headers.set(WRITE_PASS_HEADER, await apiWritePass())
  return fetch(input, { ...init, headers })
}
