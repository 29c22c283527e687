// Errors as Supabase Auth (GoTrue) answers them. A client that sends
// `X-Supabase-Api-Version: 2024-01-01` (auth-js always does) gets `{code, message}` and the
// header echoed; others get the original `{code: <status>, error_code, msg}`.
export const API_VERSION_HEADER = 'x-supabase-api-version'
const API_VERSION_2024 = '2024-01-01'

export class AuthError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message)
  }
}

export const badRequest = (code: string, msg: string) => new AuthError(400, code, msg)
export const unprocessable = (code: string, msg: string) => new AuthError(422, code, msg)
export const forbidden = (code: string, msg: string) => new AuthError(403, code, msg)
export const notFound = (code: string, msg: string) => new AuthError(404, code, msg)
export const tooMany = (code: string, msg: string) => new AuthError(429, code, msg)
export const validationFailed = (msg: string) => badRequest('validation_failed', msg)

export const weakPassword = (msg: string, reasons: string[]) =>
  new AuthError(422, 'weak_password', msg, { weak_password: { reasons } })

/** True when the request asked for the 2024-01-01 error shape (any valid date at or after it). */
function wants2024(req: Request): boolean {
  const v = req.headers.get(API_VERSION_HEADER)
  return !!v && /^\d{4}-\d{2}-\d{2}$/.test(v) && v >= API_VERSION_2024
}

export function errorResponse(req: Request, e: AuthError, headers: HeadersInit = {}): Response {
  const h = new Headers(headers)
  h.set('content-type', 'application/json')
  let body: Record<string, unknown>
  if (wants2024(req)) {
    h.set(API_VERSION_HEADER, API_VERSION_2024)
    body = { code: e.code, message: e.message, ...e.extra }
  } else {
    body = { code: e.status, error_code: e.code, msg: e.message, ...e.extra }
  }
  return new Response(JSON.stringify(body), { status: e.status, headers: h })
}
