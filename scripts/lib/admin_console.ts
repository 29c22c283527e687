// The admin console (admin/, a static React app built with Vite) on the local stack: built before
// the gateway starts, served by the gateway at /dashboard/admin and /auth/impersonate-callback,
// as a static host with a single-page fallback would serve it (docs/admin_console.md).
import { LOCAL_ANON_KEY } from './keys.ts'
import { ROOT } from './proc.ts'

export const ADMIN_DIR = `${ROOT}/admin`
export const ADMIN_DIST = `${ADMIN_DIR}/dist`
const SOURCES = ['src', 'index.html', 'vite.config.ts', 'tsconfig.json']

function newestChange(path: string): number {
  const info = Deno.statSync(path)
  if (!info.isDirectory) return info.mtime?.getTime() ?? 0
  let newest = info.mtime?.getTime() ?? 0
  for (const e of Deno.readDirSync(path)) newest = Math.max(newest, newestChange(`${path}/${e.name}`))
  return newest
}

/** True when admin/dist is older than a source file (or missing). */
export function adminConsoleStale(): boolean {
  let built: number
  try {
    built = Deno.statSync(`${ADMIN_DIST}/index.html`).mtime?.getTime() ?? 0
  } catch {
    return true
  }
  return SOURCES.some((s) => newestChange(`${ADMIN_DIR}/${s}`) > built) ||
    newestChange(`${ROOT}/types/database.ts`) > built
}

/**
 * Builds admin/dist with Vite when a source changed. The build reads only public values: the
 * page's own origin is the Supabase URL (the gateway serves both), the anon key is the local one.
 */
export async function buildAdminConsole(o: { force?: boolean; log?: (s: string) => void } = {}) {
  if (!o.force && !adminConsoleStale()) return
  o.log?.('Building the admin console (admin/ with Vite)...')
  const out = await new Deno.Command(`${ROOT}/node_modules/.bin/vite`, {
    args: ['build', ADMIN_DIR, '--logLevel', 'warn'],
    cwd: ROOT,
    env: { VITE_SUPABASE_ANON_KEY: Deno.env.get('VITE_SUPABASE_ANON_KEY') ?? LOCAL_ANON_KEY },
    stdout: 'piped',
    stderr: 'piped',
  }).output()
  if (!out.success) {
    const d = new TextDecoder()
    throw new Error(`building the admin console failed:\n${d.decode(out.stdout)}${d.decode(out.stderr)}`)
  }
}

const TYPES: Record<string, string> = {
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
  svg: 'image/svg+xml',
  png: 'image/png',
  ico: 'image/x-icon',
  woff2: 'font/woff2',
}

/** What a static host in front of the console should send too (docs/admin_console.md). */
const PAGE_HEADERS = {
  'content-security-policy':
    "default-src 'self'; connect-src 'self' ws: wss: http: https:; img-src 'self' data: blob: http: https:; " +
    "style-src 'self' 'unsafe-inline'; script-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
}

export const isAdminConsolePath = (p: string) =>
  p === '/dashboard/admin' || p.startsWith('/dashboard/admin/') || p === '/auth/impersonate-callback'

/** Serves a built file under /dashboard/admin/assets/, else index.html (the app routes the rest). */
export async function serveAdminConsole(pathname: string, dist = ADMIN_DIST): Promise<Response> {
  if (pathname.startsWith('/dashboard/admin/assets/')) {
    const asset = pathname.match(/^\/dashboard\/admin\/assets\/([A-Za-z0-9_-][A-Za-z0-9._-]*)$/)
    const type = asset && TYPES[asset[1].split('.').pop() ?? '']
    try {
      if (asset && type) {
        const body = await Deno.readFile(`${dist}/assets/${asset[1]}`)
        // File names carry a content hash: cached for good.
        return new Response(body, {
          headers: { 'content-type': type, 'cache-control': 'public, max-age=31536000, immutable', 'x-content-type-options': 'nosniff' },
        })
      }
    } catch { /* falls through to 404 */ }
    return new Response(JSON.stringify({ error: `No file ${pathname}` }), {
      status: 404,
      headers: { 'content-type': 'application/json' },
    })
  }
  try {
    const html = await Deno.readFile(`${dist}/index.html`)
    return new Response(html, {
      headers: { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-cache', ...PAGE_HEADERS },
    })
  } catch {
    return new Response(
      JSON.stringify({ error: 'The admin console is not built: run `npm run admin:build` (npm start builds it)' }),
      { status: 503, headers: { 'content-type': 'application/json' } },
    )
  }
}
