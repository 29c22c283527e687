// /rest/v1 on the gateway: forwarded to PostgREST's origin and nowhere else, and only when
// PostgREST can read it as UTF-8 (it answers 500 to what it cannot decode).
import { JSON_BODY_LIMIT, readLimited } from './body.ts'

const strictUtf8 = new TextDecoder('utf-8', { fatal: true })
const encoder = new TextEncoder()

function isUtf8(bytes: Uint8Array): boolean {
  try {
    strictUtf8.decode(bytes)
    return true
  } catch {
    return false
  }
}

/**
 * The bytes a percent-encoded string stands for. A `%` not followed by two hex digits stays a
 * `%` (PostgREST reads it so), other characters are their UTF-8 bytes.
 */
function percentDecoded(s: string): Uint8Array {
  const out: number[] = []
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '%' && /^[0-9A-Fa-f]{2}$/.test(s.slice(i + 1, i + 3))) {
      out.push(parseInt(s.slice(i + 1, i + 3), 16))
      i += 2
    } else {
      const cp = s.codePointAt(i)!
      out.push(...encoder.encode(String.fromCodePoint(cp)))
      if (cp > 0xffff) i++
    }
  }
  return Uint8Array.from(out)
}

/** A header value's bytes (Deno hands them over one byte per character), or null if it is not bytes. */
function headerBytes(value: string): Uint8Array | null {
  const bytes = new Uint8Array(value.length)
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i)
    if (c > 0xff) return null
    bytes[i] = c
  }
  return bytes
}

/** Bodies PostgREST reads as text: JSON (also without a Content-Type), text/*, forms. Others are bytes (bytea). */
const isTextBody = (contentType: string | null) =>
  !contentType || /^\s*(text\/|application\/(x-www-form-urlencoded|json|[\w.+-]*\+json)\b)/i.test(contentType)

/**
 * Why PostgREST could not decode this request as UTF-8, or null. PostgREST 12 answers 500 "Something
 * went wrong" to a query string, a header (every header: it passes them all to SQL as
 * request.headers), a form body or a CSV value that is not UTF-8 once percent-decoded, and looks
 * up a path that is not with U+FFFD in it; the gateway answers 400 for all of them instead.
 */
export function notUtf8(url: URL, headers: Headers, body: Uint8Array | undefined): string | null {
  if (!isUtf8(percentDecoded(url.pathname))) return 'path: not valid UTF-8 once percent-decoded'
  if (!isUtf8(percentDecoded(url.search))) return 'query string: not valid UTF-8 once percent-decoded'
  for (const [name, value] of headers) {
    const bytes = headerBytes(value)
    if (!bytes || !isUtf8(bytes)) return `${name} header: not valid UTF-8`
  }
  if (body?.length && isTextBody(headers.get('content-type'))) {
    if (!isUtf8(body)) return 'body: not valid UTF-8'
    if (/^\s*application\/x-www-form-urlencoded/i.test(headers.get('content-type') ?? '') &&
      !isUtf8(percentDecoded(new TextDecoder().decode(body).replace(/\+/g, ' ')))) {
      return 'body: not valid UTF-8 once percent-decoded'
    }
  }
  return null
}

/**
 * PostgREST's URL for a gateway URL, or null when the path is not `/rest/v1` or under
 * `/rest/v1/`. The target is built on PostgREST's origin (never by pasting strings, which let
 * `/rest/v1@host:port/...` reach any host), and checked to still be that origin.
 */
export function restTarget(postgrestUrl: string, url: URL): URL | null {
  const p = url.pathname
  if (p !== '/rest/v1' && !p.startsWith('/rest/v1/')) return null
  const origin = new URL(postgrestUrl)
  const target = new URL(origin.origin)
  target.pathname = p.slice('/rest/v1'.length) || '/'
  target.search = url.search
  return target.origin === origin.origin ? target : null
}

/** Forwards a request to PostgREST, its body capped at JSON_BODY_LIMIT. */
export async function proxyRest(req: Request, target: URL): Promise<Response> {
  const headers = new Headers(req.headers)
  // Like Supabase's gateway: an apikey without Authorization acts as the bearer.
  const apikey = headers.get('apikey')
  if (!headers.has('authorization') && apikey) headers.set('authorization', `Bearer ${apikey}`)
  headers.delete('host')
  const hasBody = req.method !== 'GET' && req.method !== 'HEAD'
  const body = hasBody ? await readLimited(req, JSON_BODY_LIMIT) : undefined
  const undecodable = notUtf8(new URL(req.url), req.headers, body)
  if (undecodable) return Response.json({ error: undecodable }, { status: 400 })
  if (body) headers.delete('transfer-encoding')
  let res: Response
  try {
    res = await fetch(target, { method: req.method, headers, body, redirect: 'manual' })
  } catch (e) {
    // PostgREST is down or restarting (the stack's supervisor brings it back).
    console.error('PostgREST unreachable:', (e as Error).message)
    return Response.json({ error: 'PostgREST is unavailable; try again shortly' }, { status: 503 })
  }
  if (res.status >= 500) return await withoutConnectionDetails(res)
  return new Response(res.body, { status: res.status, headers: res.headers })
}

/**
 * PostgREST's "cannot reach the database" errors (PGRST000-003) carry libpq's words in
 * `details`: locally PostgREST reaches Postgres through the cluster's socket, so they would show
 * clients the project's folder. Hosted PostgREST reaches its database over TCP on its own host
 * (the words name only that); here `details` is dropped. Other errors pass unchanged.
 */
async function withoutConnectionDetails(res: Response): Promise<Response> {
  const text = await res.text()
  let body = text
  try {
    const error = JSON.parse(text)
    if (/^PGRST00[0-3]$/.test(error?.code ?? '')) body = JSON.stringify({ ...error, details: null })
  } catch { /* not JSON: as it came */ }
  const headers = new Headers(res.headers)
  headers.delete('content-length')
  return new Response(body, { status: res.status, headers })
}
