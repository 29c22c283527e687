// CORS on /storage/v1, as Supabase's API gateway answers it, so supabase-js's storage client
// works from a browser page and a page may fetch() or <img> a public or signed object URL.
// Any origin may call (no cookies are involved: the token travels in a header); a preflight
// gets every request header it asks for (as the gateway reflects them, so an app's own
// global headers pass too) and the methods storage-js uses.
import { gatewayCors } from '../cors.ts'

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

const cors = gatewayCors({
  allowHeaders: ALLOWED_HEADERS,
  exposeHeaders: EXPOSED_HEADERS,
  methods: 'GET, HEAD, POST, PUT, DELETE, OPTIONS',
  maxAgeSeconds: 86400,
})

/** The answer to a preflight (any OPTIONS under /storage/v1). */
export const storagePreflight = cors.preflight

/** Adds the CORS headers every /storage/v1 response carries (errors included). */
export const withStorageCors = cors.withCors
