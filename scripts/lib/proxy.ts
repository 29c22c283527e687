// /rest/v1 on the gateway: forwarded to PostgREST's origin and nowhere else.
import { JSON_BODY_LIMIT, readLimited } from './body.ts'

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
  if (body) headers.delete('transfer-encoding')
  let res: Response
  try {
    res = await fetch(target, { method: req.method, headers, body, redirect: 'manual' })
  } catch (e) {
    // PostgREST is down or restarting (the stack's supervisor brings it back).
    console.error('PostgREST unreachable:', (e as Error).message)
    return Response.json({ error: 'PostgREST is unavailable; try again shortly' }, { status: 503 })
  }
  return new Response(res.body, { status: res.status, headers: res.headers })
}
