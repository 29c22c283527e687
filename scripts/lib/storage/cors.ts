// CORS on /storage/v1, as Supabase's API gateway answers it, so supabase-js's storage client
// works from a browser page and a page may fetch() or <img> a public or signed object URL.
// Any origin may call (no cookies are involved: the token travels in a header); a preflight
// gets every request header it asks for (as the gateway reflects them, so an app's own
// global headers pass too) and the methods storage-js uses.

const ALLOWED_HEADERS =
  'authorization, apikey, x-client-info, content-type, x-upsert, cache-control, x-metadata, range, ' +
  'if-none-match, if-modified-since, accept, accept-profile, content-profile, prefer, x-supabase-api-version'
const EXPOSED_HEADERS = [
  'content-length',
  'content-type',
  'content-range',
  'content-disposition',
  'content-location',
  'cache-control',
  'etag',
  'last-modified',
  'expires',
  'accept-ranges',
  'x-transformations',
].join(', ')

const corsHeaders = {
  'access-control-allow-origin': '*',
  'access-control-expose-headers': EXPOSED_HEADERS,
}

/** The answer to a preflight (any OPTIONS under /storage/v1). */
export function storagePreflight(req: Request): Response {
  const asked = req.headers.get('access-control-request-headers')
  // Reflect what was asked when it is a plain list of header names; else the known list.
  const allow = asked && /^[\w-]+(\s*,\s*[\w-]+)*$/.test(asked.trim()) ? asked.trim() : ALLOWED_HEADERS
  return new Response(null, {
    status: 204,
    headers: {
      ...corsHeaders,
      'access-control-allow-methods': 'GET, HEAD, POST, PUT, DELETE, OPTIONS',
      'access-control-allow-headers': allow,
      'access-control-max-age': '86400',
    },
  })
}

/** Adds the CORS headers every /storage/v1 response carries (errors included). */
export function withStorageCors(res: Response): Response {
  try {
    for (const [k, v] of Object.entries(corsHeaders)) res.headers.set(k, v)
    return res
  } catch {
    // A response with immutable headers: copy it.
    const copy = new Response(res.body, res)
    for (const [k, v] of Object.entries(corsHeaders)) copy.headers.set(k, v)
    return copy
  }
}
