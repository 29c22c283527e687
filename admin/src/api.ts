// Calls to the /api endpoints with the signed-in admin's token. A reply that is not 2xx becomes
// an ApiError carrying the API's own {error} text, which pages show as it is.
import { functionsUrl, supabase } from './supabase.ts'

export class ApiError extends Error {
  constructor(readonly status: number, message: string, readonly body: unknown) {
    super(message)
  }
}

export interface ApiOptions {
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
  body?: unknown
  query?: Record<string, string | number | boolean | null | undefined>
  /** Another bearer than the admin's session (an impersonation token). */
  token?: string
}

/** Calls `path` (as in the OpenAPI document, such as /api/admin/users) and returns its JSON. */
export async function api<T = any>(path: string, o: ApiOptions = {}): Promise<T> {
  const res = await apiResponse(path, o)
  const text = await res.text()
  let body: any = null
  try {
    body = text ? JSON.parse(text) : null
  } catch {
    body = text
  }
  if (!res.ok) {
    const message = typeof body?.error === 'string' ? body.error : `${res.status} ${res.statusText}`
    throw new ApiError(res.status, message, body)
  }
  return body as T
}

/**
 * Paths carry ids taken from the page's own URL (/dashboard/admin/users/:id): a segment such as
 * `..` or one holding `?`, `#`, `%` or `\\` would send the admin's token elsewhere on the origin.
 */
function checkedPath(path: string): string {
  const segments = path.split('/').slice(1)
  if (!path.startsWith('/api/') || segments.some((s) => s === '' || s === '.' || s === '..' || /[?#%\\\s]/.test(s))) {
    throw new ApiError(0, `Refused to call a malformed API path: ${path}`, null)
  }
  return path
}

/** The raw reply (for downloads such as CSV). */
export async function apiResponse(path: string, o: ApiOptions = {}): Promise<Response> {
  checkedPath(path)
  const token = o.token ?? (await supabase.auth.getSession()).data.session?.access_token
  const url = new URL(`${functionsUrl}${path}`)
  for (const [k, v] of Object.entries(o.query ?? {})) {
    if (v !== undefined && v !== null && v !== '') url.searchParams.set(k, String(v))
  }
  const headers: Record<string, string> = {}
  if (token) headers.authorization = `Bearer ${token}`
  if (o.body !== undefined) headers['content-type'] = 'application/json'
  try {
    return await fetch(url, {
      method: o.method ?? (o.body === undefined ? 'GET' : 'POST'),
      headers,
      body: o.body === undefined ? undefined : JSON.stringify(o.body),
    })
  } catch (e) {
    throw new ApiError(0, `The API could not be reached (${(e as Error).message})`, null)
  }
}

export const errorText = (e: unknown) => (e instanceof Error ? e.message : String(e))
