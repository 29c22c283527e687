// CORS for browser clients, the same on every function.

/** Request headers a browser may send: what supabase-js's functions.invoke sends (authorization,
 *  apikey, x-client-info, content-type, x-region) and every header the API documents
 *  (credentials, Idempotency-Key, If-Match, the webhook signatures). A test compares it with the
 *  OpenAPI document. */
export const ALLOWED_REQUEST_HEADERS = [
  'authorization',
  'x-client-info',
  'apikey',
  'content-type',
  'x-region',
  'x-cron-secret',
  'idempotency-key',
  'if-match',
  'stripe-signature',
  'svix-id',
  'svix-timestamp',
  'svix-signature',
]

/** Reply headers a browser shows a script beyond the basic ones: those the API documents
 *  (Retry-After, a download's Content-Disposition and its file name, a row's ETag) and
 *  x-relay-error, which functions.invoke reads. */
export const EXPOSED_RESPONSE_HEADERS = ['retry-after', 'content-disposition', 'etag', 'x-relay-error']

export const corsHeaders: Record<string, string> = {
  'access-control-allow-origin': '*',
  'access-control-allow-headers': ALLOWED_REQUEST_HEADERS.join(', '),
  'access-control-allow-methods': 'GET, POST, PUT, PATCH, DELETE, OPTIONS',
  'access-control-max-age': '86400',
  'access-control-expose-headers': EXPOSED_RESPONSE_HEADERS.join(', '),
}

/** Answers a preflight, or returns null for any other request. */
export function preflight(req: Request): Response | null {
  return req.method === 'OPTIONS' ? new Response(null, { status: 204, headers: corsHeaders }) : null
}

export function withCors(res: Response): Response {
  for (const [k, v] of Object.entries(corsHeaders)) res.headers.set(k, v)
  return res
}
