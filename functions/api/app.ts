// The /api/... router: one route module per SPEC.md area, each declared with endpoint() so
// the same zod schemas validate requests and describe them in GET /api/openapi.json.
import { OpenAPIHono } from '@hono/zod-openapi'
import type { Context } from 'hono'
import { bodyLimit } from 'hono/body-limit'
import { HTTPException } from 'hono/http-exception'
import { corsHeaders } from '../_shared/cors.ts'
import { optionalEnv } from '../_shared/env.ts'
import { badRequest, fromThrown, HttpError, HttpErrorWithFields } from '../_shared/errors.ts'
import { unstorableValue } from '../_shared/validation.ts'
import type { ApiEnv } from './credentials.ts'
import { registerSecuritySchemes, validationHook } from './openapi.ts'
import { adminRoutes } from './routes/admin.ts'
import { adminFeatureRoutes } from './routes/admin_features.ts'
import { adminJobRoutes } from './routes/admin_jobs.ts'
import { adminUserRoutes } from './routes/admin_users.ts'
import { aiRoutes } from './routes/ai.ts'
import { authRoutes } from './routes/auth.ts'
import { chatRoutes } from './routes/chat/index.ts'
import { dropsRoutes } from './routes/drops.ts'
import { emailRoutes } from './routes/email.ts'
import { encouragementRoutes } from './routes/encouragement/index.ts'
import { goalRoutes } from './routes/goals.ts'
import { impersonationRoutes } from './routes/impersonation.ts'
import { invitationRoutes } from './routes/invitations.ts'
import { journalRoutes } from './routes/journal.ts'
import { journalToneRoutes } from './routes/journal_tone.ts'
import { labsRoutes } from './routes/labs/index.ts'
import { musicRoutes } from './routes/music.ts'
import { notebookRoutes } from './routes/notebooks.ts'
import { notificationRoutes } from './routes/notifications/index.ts'
import { organizationRoutes } from './routes/organizations.ts'
import { paymentRoutes } from './routes/payments.ts'
import { profileRoutes } from './routes/profile.ts'
import { syncRoutes } from './routes/sync.ts'
import { teamRoutes } from './routes/teams.ts'
import { tonePackRoutes } from './routes/tone_packs/index.ts'
import { accountRoutes } from './routes/user_data/account.ts'
import { userDataRoutes } from './routes/user_data/index.ts'
import { workoutRoutes } from './routes/workout/index.ts'

/** JSON bodies are small; uploads (check-in photos 10 MB, pack images 5 MB) are multipart. */
export const BODY_LIMITS = { json: 1024 * 1024, multipart: 12 * 1024 * 1024 }

export const app = new OpenAPIHono<ApiEnv>({ defaultHook: validationHook }).basePath('/api')

app.use('*', async (c, next) => {
  if (c.req.method === 'OPTIONS') return new Response(null, { status: 204, headers: corsHeaders })
  await next()
  for (const [k, v] of Object.entries(corsHeaders)) c.res.headers.set(k, v)
})

app.use('*', async (c, next) => {
  const multipart = /^multipart\/form-data/i.test(c.req.header('content-type') ?? '')
  const maxSize = multipart ? BODY_LIMITS.multipart : BODY_LIMITS.json
  return await bodyLimit({
    maxSize,
    onError: () => {
      throw new HttpError(413, `The body is larger than ${maxSize / 1024 / 1024} MB`)
    },
  })(c, next)
})

// The signed provider webhooks read their raw body themselves: a body the database cannot
// store as sent is the provider's, recorded (cleaned) as an ignored event and answered 2xx, since
// the provider retries any 4xx for days.
const SIGNED_WEBHOOKS = new Set(['/api/payment/webhook', '/api/email/webhook'])

// Strings Postgres cannot store (NUL, lone surrogates) and absurd nesting are bad input,
// refused here once for every route (the signed webhooks above excepted), naming the field.
app.use('*', async (c, next) => {
  if (SIGNED_WEBHOOKS.has(c.req.path)) return await next()
  for (const [k, values] of Object.entries(c.req.queries())) {
    for (const v of values) {
      const problem = unstorableValue(v, [k])
      if (problem) throw badRequest(problem)
    }
  }
  if (/^application\/([\w.-]+\+)?json/i.test(c.req.header('content-type') ?? '')) {
    const parsed = await c.req.json().then((v) => ({ v }), () => null) // malformed: the validator says so
    const problem = parsed && unstorableValue(parsed.v)
    if (problem) throw badRequest(problem)
  }
  await next()
})

const modules = [
  authRoutes,
  profileRoutes,
  dropsRoutes,
  adminRoutes,
  adminJobRoutes,
  organizationRoutes,
  teamRoutes,
  invitationRoutes,
  notebookRoutes,
  journalToneRoutes,
  journalRoutes,
  goalRoutes,
  syncRoutes,
  notificationRoutes,
  aiRoutes,
  adminUserRoutes,
  adminFeatureRoutes,
  tonePackRoutes,
  paymentRoutes,
  emailRoutes,
  encouragementRoutes,
  chatRoutes,
  workoutRoutes,
  musicRoutes,
  labsRoutes,
  impersonationRoutes,
  userDataRoutes,
  accountRoutes,
]
for (const m of modules) app.route('/', m)

registerSecuritySchemes(app)
app.doc31('/openapi.json', (c) => ({
  openapi: '3.1.0',
  info: {
    title: 'Journal & accountability API',
    version: '1.0.0',
    description: 'The edge-function API (`/functions/v1/api/...`). Every error body is `{error, code}` (ErrorCode lists the codes). ' +
      'Tables and RPCs are also served by PostgREST at `/rest/v1` with the same rules (RLS).',
  },
  servers: [{ url: functionsBaseUrl(c.req.url), description: "This project's edge functions" }],
}))

/**
 * Where the paths of the document (/api/...) are served: <project URL>/functions/v1. The
 * project URL is SUPABASE_URL (set on hosted Supabase and by the local stack); a function never
 * sees the /functions/v1 prefix in its own request URL, so the request only stands in for it.
 */
function functionsBaseUrl(requestUrl: string): string {
  const project = optionalEnv('SUPABASE_URL') ?? new URL(requestUrl).origin
  return `${project.replace(/\/+$/, '')}/functions/v1`
}

app.notFound((c) => c.json({ error: `No route for ${c.req.method} ${c.req.path}`, code: 'no_route' }, 404))

/** Any error a route, a middleware or Hono throws, as the HttpError it answers. */
function asHttpError(err: unknown, c: Context): HttpError {
  if (err instanceof HttpError) return err
  if (err instanceof HTTPException && err.status === 415) {
    // A body of the wrong type is refused, never read as {}. JSON sent where it is refused can
    // only mean an upload route (the others take JSON).
    return badRequest(
      /application\/json/i.test(c.req.header('content-type') ?? '')
        ? 'body: this endpoint takes an upload: send multipart/form-data'
        : 'body: send JSON with Content-Type: application/json',
    )
  }
  if (err instanceof HTTPException) return new HttpError(err.status, err.message || 'Request failed')
  const lost = fromThrown(err)
  if (lost) return lost
  console.error(`${c.req.method} ${c.req.path}`, err)
  return new HttpError(500, 'Internal error')
}

app.onError((thrown, c) => {
  const err = asHttpError(thrown, c)
  const fields = err instanceof HttpErrorWithFields ? err.fields : {}
  const res = c.json({ error: err.message, code: err.code, ...fields }, err.status as 400)
  const headers = err instanceof HttpErrorWithFields ? err.headers : {}
  for (const [k, v] of Object.entries({ ...corsHeaders, ...headers })) res.headers.set(k, v)
  if (err.retryAfterSeconds) {
    res.headers.set('Retry-After', String(err.retryAfterSeconds))
  }
  return res
})
