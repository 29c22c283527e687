// The /api/... router: one route module per SPEC.md area.
import { Hono } from 'hono'
import { HTTPException } from 'hono/http-exception'
import { corsHeaders } from '../_shared/cors.ts'
import { HttpError } from '../_shared/errors.ts'
import type { ApiEnv } from './credentials.ts'
import { adminRoutes } from './routes/admin.ts'
import { authRoutes } from './routes/auth.ts'
import { dropsRoutes } from './routes/drops.ts'
import { goalRoutes } from './routes/goals.ts'
import { journalRoutes } from './routes/journal.ts'
import { notebookRoutes } from './routes/notebooks.ts'
import { organizationRoutes } from './routes/organizations.ts'
import { profileRoutes } from './routes/profile.ts'
import { teamRoutes } from './routes/teams.ts'

export const app = new Hono<ApiEnv>().basePath('/api')

app.use('*', async (c, next) => {
  if (c.req.method === 'OPTIONS') return new Response(null, { status: 204, headers: corsHeaders })
  await next()
  for (const [k, v] of Object.entries(corsHeaders)) c.res.headers.set(k, v)
})

app.route('/', authRoutes)
app.route('/', profileRoutes)
app.route('/', dropsRoutes)
app.route('/', adminRoutes)
app.route('/', organizationRoutes)
app.route('/', teamRoutes)
app.route('/', notebookRoutes)
app.route('/', journalRoutes)
app.route('/', goalRoutes)

app.notFound((c) => c.json({ error: `No route for ${c.req.method} ${c.req.path}` }, 404))

app.onError((err, c) => {
  let status = 500
  let message = 'Internal error'
  if (err instanceof HttpError) {
    status = err.status
    message = err.message
  } else if (err instanceof HTTPException) {
    status = err.status
    message = err.message || 'Request failed'
  } else {
    console.error(`${c.req.method} ${c.req.path}`, err)
  }
  const res = c.json({ error: message }, status as 400)
  for (const [k, v] of Object.entries(corsHeaders)) res.headers.set(k, v)
  return res
})
