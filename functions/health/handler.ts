// GET /health: liveness, no credential.
import { preflight, withCors } from '../_shared/cors.ts'

const json = (status: number, body: unknown) =>
  withCors(new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } }))

export function handler(req: Request): Response {
  const early = preflight(req)
  if (early) return early
  const path = new URL(req.url).pathname.replace(/\/+$/, '')
  if (path !== '/health') return json(404, { error: `No route for ${req.method} ${path}` })
  if (req.method !== 'GET' && req.method !== 'HEAD') return json(405, { error: 'Use GET /health' })
  return json(200, { status: 'ok', timestamp: new Date().toISOString() })
}
