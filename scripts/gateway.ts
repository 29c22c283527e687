// The local stand-in for Supabase's API gateway:
//   /rest/v1/*          -> PostgREST
//   /functions/v1/<fn>/* -> the function's handler (a function named `api` sees /api/...)
//   /storage/v1/*       -> the local object store (scripts/lib/storage/)
//   /docs               -> Swagger UI for /functions/v1/api/openapi.json
// Anything else, including look-alikes such as /rest/v1foo or /rest/v1@host, is 404.
// and the worker that sends what net.http_post/net.http_get queued (pg_net's job).
import postgres from 'postgres'
import { drainNetQueue } from './lib/net_queue.ts'
import { handleDocs } from './lib/docs.ts'
import { handleStorage } from './lib/storage/mod.ts'
import { ROOT } from './lib/proc.ts'
import { BodyTooLarge } from './lib/body.ts'
import { proxyRest, restTarget } from './lib/proxy.ts'

const env = (k: string) => {
  const v = Deno.env.get(k)
  if (!v) throw new Error(`gateway: ${k} is not set`)
  return v
}
const port = Number(env('GATEWAY_PORT'))
const postgrestUrl = env('POSTGREST_URL')
const sql = postgres(env('SUPABASE_DB_URL'), { max: 5, onnotice: () => {} })

type Handler = (req: Request) => Response | Promise<Response>
const functions = new Map<string, Handler>()
for await (const entry of Deno.readDir(`${ROOT}/functions`)) {
  if (!entry.isDirectory || entry.name.startsWith('_')) continue
  const mod = await import(`${ROOT}/functions/${entry.name}/handler.ts`)
  functions.set(entry.name, mod.handler as Handler)
}

const json = (status: number, body: unknown) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } })

async function route(req: Request): Promise<Response> {
  const url = new URL(req.url)
  const p = url.pathname
  if (p === '/rest/v1' || p.startsWith('/rest/v1/')) {
    const target = restTarget(postgrestUrl, url)
    if (!target) return json(404, { error: `No route for ${p}` })
    return await proxyRest(req, target)
  }
  if (p.startsWith('/functions/v1/')) {
    const rest = p.slice('/functions/v1'.length) // "/<name>/..."
    const name = rest.split('/')[1]
    // Functions run in this process: only a folder of functions/ is a name (never a path or host).
    const handler = /^[a-z][a-z0-9_-]*$/.test(name) ? functions.get(name) : undefined
    if (!handler) return json(404, { error: `No function named ${name}` })
    const inner = new URL(rest + url.search, url.origin)
    return await handler(new Request(inner, req))
  }
  if (p.startsWith('/storage/v1/')) {
    // Served here from files under STORAGE_DIR and storage.objects; the path is checked
    // segment by segment (no traversal) in handleStorage.
    return handleStorage(req, p.slice('/storage/v1'.length), {
      sql,
      rootDir: env('STORAGE_DIR'),
    })
  }
  const docs = await handleDocs(p)
  if (docs) return docs
  return json(404, { error: `No route for ${p}` })
}

Deno.serve({ hostname: '127.0.0.1', port, onListen: () => console.log(`gateway on :${port}`) }, async (req) => {
  try {
    return await route(req)
  } catch (e) {
    if (e instanceof BodyTooLarge) return json(413, { error: e.message })
    console.error('gateway error', e)
    return json(502, { error: 'Gateway error' })
  }
})

drainNetQueue(sql)
