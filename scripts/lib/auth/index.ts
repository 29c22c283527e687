// The local stand-in for Supabase Auth (GoTrue) at /auth/v1 on the gateway: the part of its
// HTTP API that @supabase/auth-js calls, on GoTrue's own tables (auth.users, identities,
// sessions, refresh_tokens), with its shapes and error codes. Routes are in account.ts,
// email_flows.ts and admin.ts; the e-mails go to the local inbox (inbox.ts).
import { BodyTooLarge, JSON_BODY_LIMIT, readLimited } from '../body.ts'
import { adminRoute } from './admin.ts'
import { getUser, logout, signup, token, updateUser } from './account.ts'
import { otp, recover, resend, verify, verifyLink } from './email_flows.ts'
import { AuthError, errorResponse } from './errors.ts'
import { refuseUnstorableInput } from './input.ts'
import type { AuthContext } from './sessions.ts'
import { gatewayCors } from '../cors.ts'

export type { AuthContext } from './sessions.ts'

// Kong's CORS on Supabase's gateway; the headers auth-js reads are exposed (the API version
// decides how it reads error codes; listUsers reads the paging headers).
const { preflight, withCors } = gatewayCors({
  allowHeaders: 'authorization, x-client-info, apikey, content-type, x-supabase-api-version',
  exposeHeaders: 'x-supabase-api-version, x-total-count, link',
  methods: 'GET, HEAD, PUT, PATCH, POST, DELETE, OPTIONS',
  maxAgeSeconds: 3600,
})

// What Kong lets through without an API key on Supabase: the links in e-mails, and the JWKS.
const OPEN_PATHS = new Set(['/verify', '/callback', '/authorize', '/.well-known/jwks.json'])

/** Kong's key check: an apikey header (or ?apikey=) that is one of the project's keys. */
function apiKeyProblem(ctx: AuthContext, req: Request, path: string): Response | null {
  if (OPEN_PATHS.has(path) && req.method === 'GET') return null
  const key = req.headers.get('apikey') ?? new URL(req.url).searchParams.get('apikey')
  if (!key) return Response.json({ message: 'No API key found in request' }, { status: 401 })
  if (key !== ctx.anonKey && key !== ctx.serviceRoleKey) {
    return Response.json({ message: 'Invalid API key' }, { status: 401 })
  }
  return null
}

async function jsonBody(req: Request): Promise<Record<string, any>> {
  if (req.method === 'GET' || req.method === 'HEAD') return {}
  const bytes = await readLimited(req, JSON_BODY_LIMIT)
  const text = new TextDecoder().decode(bytes).trim()
  if (!text) return {}
  if (/^application\/x-www-form-urlencoded/i.test(req.headers.get('content-type') ?? '')) {
    return Object.fromEntries(new URLSearchParams(text))
  }
  try {
    const v = JSON.parse(text)
    return v && typeof v === 'object' && !Array.isArray(v) ? v : {}
  } catch (e) {
    throw new AuthError(400, 'bad_json', `Could not parse request body as JSON: ${(e as Error).message}`)
  }
}

const ok = (body: unknown) => Response.json(body)

async function dispatch(ctx: AuthContext, req: Request, path: string): Promise<Response> {
  const m = req.method
  const body = await jsonBody(req)
  refuseUnstorableInput(body, new URL(req.url).searchParams)
  if (path === '/health' && m === 'GET') {
    return ok({
      version: 'local',
      name: 'GoTrue',
      description: 'GoTrue is a user registration and authentication API',
    })
  }
  // HS256 projects publish no key: a symmetric secret is never served (GoTrue's jwks.go).
  if (path === '/.well-known/jwks.json' && m === 'GET') return ok({ keys: [] })
  if (path === '/settings' && m === 'GET') return ok(settings(ctx))
  if (path === '/verify' && m === 'GET') return await verifyLink(ctx, req)
  if (path === '/user' && m === 'GET') return ok(await getUser(ctx, req))
  if (path === '/signup' && m === 'POST') return ok(await signup(ctx, req, body))
  if (path === '/token' && m === 'POST') return ok(await token(ctx, req, body))
  if (path === '/user' && m === 'PUT') return ok(await updateUser(ctx, req, body))
  if (path === '/logout' && m === 'POST') {
    await logout(ctx, req)
    return new Response(null, { status: 204 })
  }
  if (path === '/otp' && m === 'POST') return ok(await otp(ctx, req, body))
  if (path === '/recover' && m === 'POST') return ok(await recover(ctx, req, body))
  if (path === '/resend' && m === 'POST') return ok(await resend(ctx, req, body))
  if (path === '/verify' && m === 'POST') {
    const out = await verify(ctx, req, body)
    return ok(
      out.kind === 'session' ? out.session : { msg: out.kind === 'message' ? out.msg : '', code: 200 },
    )
  }
  if (path.startsWith('/admin/') || path === '/invite') {
    const res = await adminRoute(ctx, req, path, body)
    if (res !== undefined) return res instanceof Response ? res : ok(res)
  }
  throw new AuthError(404, 'not_found', `Unsupported path: ${path} is not served by the local Auth`)
}

function settings(ctx: AuthContext) {
  const c = ctx.config
  return {
    external: { anonymous_users: c.enableAnonymousSignIns, email: c.email.enableSignup, phone: false },
    disable_signup: !c.enableSignup,
    mailer_autoconfirm: !c.email.enableConfirmations,
    phone_autoconfirm: false,
    sms_provider: '',
    saml_enabled: false,
  }
}

/** Serves /auth/v1<path>. `path` is what follows /auth/v1 ("/signup", "/admin/users/<id>", ...). */
export async function handleAuth(ctx: AuthContext, req: Request, path: string): Promise<Response> {
  if (req.method === 'OPTIONS') return preflight(req)
  const refused = apiKeyProblem(ctx, req, path)
  if (refused) return withCors(refused)
  try {
    return withCors(await dispatch(ctx, req, path))
  } catch (e) {
    if (e instanceof AuthError) return withCors(errorResponse(req, e))
    if (e instanceof BodyTooLarge) throw e // the gateway's 413
    console.error('auth error', e)
    const failure = new AuthError(
      500,
      'unexpected_failure',
      'Unexpected failure, please check server logs for more information',
    )
    return withCors(errorResponse(req, failure))
  }
}
