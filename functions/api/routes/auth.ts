// POST /api/auth/verify: is this access token valid, and whose is it? (no credential)
import { z } from '@hono/zod-openapi'
import { userClaims } from '../../_shared/jwt.ts'
import { endpoint, routeModule } from '../openapi.ts'

const VerifyBody = z.object({ token: z.string().min(1).max(8192) })

export const authRoutes = routeModule()
  .openapi(
    endpoint({
      method: 'post', path: '/auth/verify', tag: 'Session', auth: 'none', body: VerifyBody, errors: [401],
      summary: 'Verify an access token',
      response: z.object({ user: z.object({ id: z.string(), email: z.string().nullable() }) }),
    }),
    async (c) => {
      const claims = await userClaims(c.req.valid('json').token)
      return c.json({ user: { id: claims.sub, email: claims.email ?? null } })
    },
  )
