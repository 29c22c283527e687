// The local stand-in for Supabase's API gateway:
//   /rest/v1/*          -> PostgREST
//   /functions/v1/<fn>/* -> the function's handler (a function named `api` sees /api/...)
//   /storage/v1/*       -> the local object store (scripts/lib/storage/)
//   /realtime/v1/*      -> the Realtime stand-in (scripts/lib/realtime/): WebSocket, REST broadcast
//   /auth/v1/*          -> the local Auth stand-in (scripts/lib/auth/), its e-mails to the
//                          local inbox served on INBOX_PORT
//   /docs               -> Swagger UI for /functions/v1/api/openapi.json
//   /dashboard/admin/*, /auth/impersonate-callback -> the admin console (admin/dist)
// Anything else, including look-alikes such as /rest/v1foo or /rest/v1@host, is 404.
// and the worker that sends what net.http_post/net.http_get queued (pg_net's job).
import postgres from 'postgres'
import { drainNetQueue } from './lib/net_queue.ts'
import { handleDocs } from './lib/docs.ts'
import { isAdminConsolePath, serveAdminConsole } from './lib/admin_console.ts'
import { handleStorage } from './lib/storage/mod.ts'
import { ROOT } from './lib/proc.ts'
import { BodyTooLarge } from './lib/body.ts'
import { proxyRest, restTarget } from './lib/proxy.ts'
import { createRealtime } from './lib/realtime/server.ts'
import { type AuthContext, handleAuth } from './lib/auth/index.ts'
import { loadAuthConfig } from './lib/auth/config.ts'
import { handleInbox } from './lib/auth/inbox.ts'
import { preflight, withCors } from '../functions/_shared/cors.ts'

const env = (k: string) => {
  const v = Deno.env.get(k)
  if (!v) throw new Error(`gateway: ${k} is not set`)
  return v
}
const port = Number(env('GATEWAY_PORT'))
const postgrestUrl = env('POSTGREST_URL')
const sql = postgres(env('SUPABASE_DB_URL'), { max: 5, onnotice: () => {} })
const realtime = createRealtime({
  dbUrl: env('SUPABASE_DB_URL'),
  jwtSecret: env('JWT_SECRET'),
  privateOnly: Deno.env.get('REALTIME_PRIVATE_ONLY') !== 'false',
})

// Auth connects as supabase_auth_admin, as GoTrue does on Supabase (triggers and the
// access-token hook run with that role's rights).
const authDbUrl = new URL(env('SUPABASE_DB_URL'))
authDbUrl.username = 'supabase_auth_admin'
authDbUrl.password = 'postgres'
const authSql = postgres(authDbUrl.toString(), { max: 5, onnotice: () => {} })
const auth: AuthContext = {
  sql: authSql,
  config: await loadAuthConfig(),
  apiUrl: env('SUPABASE_URL'),
  jwtSecret: env('JWT_SECRET'),
  anonKey: env('SUPABASE_ANON_KEY'),
  serviceRoleKey: env('SUPABASE_SERVICE_ROLE_KEY'),
  inboxSender: 'Supabase Auth <noreply@mail.app.supabase.io>',
}

type Handler = (req: Request) => Response | Promise<Response>
const functions = new Map<string, Handler>()
for await (const entry of Deno.readDir(`${ROOT}/functions`)) {
  if (!entry.isDirectory || entry.name.startsWith('_')) continue
  const mod = await import(`${ROOT}/functions/${entry.name}/handler.ts`)
  functions.set(entry.name, mod.handler as Handler)
}

const json = (status: number, body: unknown) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } })

/**
 * The client's address for the write rate limit (docs/rate_limits.md), in the header hosted
 * Supabase's gateway forwards it in: x-forwarded-for, replaced with the peer address so a client
 * cannot pick its own, and no cf-connecting-ip (hosted, Cloudflare overwrites a client's).
 */
function withClientAddress(req: Request, clientIp: string): Request {
  const headers = new Headers(req.headers)
  headers.set('x-forwarded-for', clientIp)
  headers.delete('cf-connecting-ip')
  return new Request(req, { headers })
}

async function route(req: Request, clientIp: string): Promise<Response> {
  const url = new URL(req.url)
  const p = url.pathname
  if (p === '/auth/v1' || p.startsWith('/auth/v1/')) {
    // The peer address (for Auth's per-IP rate limits) in a header no client can set.
    const headers = new Headers(req.headers)
    headers.set('x-local-client-ip', clientIp)
    return await handleAuth(auth, new Request(req, { headers }), p.slice('/auth/v1'.length) || '/')
  }
  if (p === '/rest/v1' || p.startsWith('/rest/v1/')) {
    const target = restTarget(postgrestUrl, url)
    if (!target) return json(404, { error: `No route for ${p}` })
    return await proxyRest(withClientAddress(req, clientIp), target)
  }
  if (p.startsWith('/functions/v1/')) {
    const rest = p.slice('/functions/v1'.length) // "/<name>/..."
    const name = rest.split('/')[1]
    // Functions run in this process: only a folder of functions/ is a name (never a path or host).
    const handler = /^[a-z][a-z0-9_-]*$/.test(name) ? functions.get(name) : undefined
    // A browser reads this 404 (and its preflight) only with the functions' CORS headers.
    if (!handler) return preflight(req) ?? withCors(json(404, { error: `No function named ${name}` }))
    const inner = new URL(rest + url.search, url.origin)
    return await handler(new Request(inner, withClientAddress(req, clientIp)))
  }
  if (p.startsWith('/storage/v1/')) {
    // Served here from files under STORAGE_DIR and storage.objects; the path is checked
    // segment by segment (no traversal) in handleStorage.
    return handleStorage(req, p.slice('/storage/v1'.length), {
      sql,
      rootDir: env('STORAGE_DIR'),
      clientAddress: clientIp,
    })
  }
  if (p.startsWith('/realtime/v1/')) return await realtime.handle(req, p.slice('/realtime/v1'.length))
  const docs = await handleDocs(p)
  if (docs) return docs
  if (isAdminConsolePath(p) && (req.method === 'GET' || req.method === 'HEAD')) return await serveAdminConsole(p)
  return json(404, { error: `No route for ${p}` })
}

Deno.serve({ hostname: '127.0.0.1', port, onListen: () => console.log(`gateway on :${port}`) }, async (req, info) => {
  try {
    return await route(req, (info.remoteAddr as Deno.NetAddr).hostname)
  } catch (e) {
    if (e instanceof BodyTooLarge) return json(413, { error: e.message })
    console.error('gateway error', e)
    return json(502, { error: 'Gateway error' })
  }
})

const inboxPort = Number(env('INBOX_PORT'))
Deno.serve({ hostname: '127.0.0.1', port: inboxPort, onListen: () => console.log(`inbox on :${inboxPort}`) }, async (req) => {
  try {
    return await handleInbox(authSql, req)
  } catch (e) {
    console.error('inbox error', e)
    return json(500, { error: 'Inbox error' })
  }
})

drainNetQueue(sql)
