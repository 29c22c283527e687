// The admin console (admin/, a static React app built with Vite) on the local stack: built before
// the gateway starts, served by the gateway at /dashboard/admin and /auth/impersonate-callback,
// as a static host with a single-page fallback would serve it (docs/admin_console.md).
import { LOCAL_ANON_KEY, LOCAL_JWT_SECRET, LOCAL_SERVICE_ROLE_KEY } from './keys.ts'
import { ROOT } from './proc.ts'
import { publicKeyProblem, secretFindings } from '../../admin/bundle_secrets.ts'
export { SECRET_VARIABLES } from '../../admin/bundle_secrets.ts'

export const ADMIN_DIR = `${ROOT}/admin`
export const ADMIN_DIST = `${ADMIN_DIR}/dist`
const SOURCES = ['src', 'index.html', 'vite.config.mts', 'bundle_secrets.ts', 'tsconfig.json']

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
export async function buildAdminConsole(
  o: { force?: boolean; log?: (s: string) => void; env?: Record<string, string> } = {},
) {
  const secretEnv = (k: string) => o.env?.[k] ?? Deno.env.get(k)
  if (!o.force && !adminConsoleStale()) {
    // Unchanged sources, but perhaps another environment: the build on disk is checked anyway.
    const leaks = await secretsInBundle(ADMIN_DIST, secretEnv)
    if (!leaks.length) return
  }
  const anonKey = Deno.env.get('VITE_SUPABASE_ANON_KEY') ?? LOCAL_ANON_KEY
  const problem = publicKeyProblem(anonKey)
  if (problem) throw new Error(`building the admin console: ${problem}`)
  o.log?.('Building the admin console (admin/ with Vite)...')
  const out = await new Deno.Command(`${ROOT}/node_modules/.bin/vite`, {
    args: ['build', ADMIN_DIR, '--logLevel', 'warn'],
    cwd: ROOT,
    env: { VITE_SUPABASE_ANON_KEY: anonKey },
    stdout: 'piped',
    stderr: 'piped',
  }).output()
  if (!out.success) {
    const d = new TextDecoder()
    throw new Error(`building the admin console failed:\n${d.decode(out.stdout)}${d.decode(out.stderr)}`)
  }
  const leaks = await secretsInBundle(ADMIN_DIST, secretEnv)
  if (leaks.length) {
    await Deno.remove(ADMIN_DIST, { recursive: true })
    throw new Error(`the admin console's build holds secrets, so it was deleted:\n  ${leaks.join('\n  ')}`)
  }
}

/**
 * What in a build would hand a browser a server-side secret (admin/bundle_secrets.ts): secret
 * variables set here or given in `env` (the stack's function environment), the local stack's
 * service-role key and JWT secret, secret shapes, non-anon JWTs. One line per finding.
 */
export async function secretsInBundle(
  dist: string,
  env: (k: string) => string | undefined = (k) => Deno.env.get(k),
): Promise<string[]> {
  const files: { name: string; text: string }[] = []
  const walk = async (dir: string) => {
    for await (const e of Deno.readDir(dir)) {
      const path = `${dir}/${e.name}`
      if (e.isDirectory) await walk(path)
      else files.push({ name: path, text: await Deno.readTextFile(path) })
    }
  }
  await walk(dist)
  return secretFindings(files, env, {
    'the local service-role key': LOCAL_SERVICE_ROLE_KEY,
    'the local JWT secret': LOCAL_JWT_SECRET,
  })
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
  // The console talks to its own origin only (the gateway serves the API beside it); a static
  // host adds the project's https:// and wss:// URL (docs/admin_console.md).
  'content-security-policy':
    "default-src 'self'; connect-src 'self'; img-src 'self' data: blob:; style-src 'self' 'unsafe-inline'; " +
    "script-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'; object-src 'none'",
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
