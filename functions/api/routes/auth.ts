// POST /api/auth/verify: is this access token valid, and whose is it? (no credential)
import { z } from '@hono/zod-openapi'
import { userClaims } from '../../_shared/jwt.ts'
import { beginImpersonatedRequest } from '../credentials.ts'
import { endpoint, routeModule } from '../openapi.ts'

const VerifyBody = z.object({ token: z.string().min(1).max(8192) })

export const authRoutes = routeModule()
  .openapi(
    endpoint({
      method: 'post',
      path: '/auth/verify',
      tag: 'Session',
      auth: 'none',
      notAWrite: 'a check of a token: it writes nothing, and a backend verifying its users calls it from one address',
      body: VerifyBody,
      errors: [401],
      summary: 'Verify an access token',
      description: 'The token of a stopped or expired impersonation session is no longer valid (401).',
      response: z.object({ user: z.object({ id: z.string(), email: z.string().nullable() }) }),
    }),
    async (c) => {
      const token = c.req.valid('json').token
      const claims = await userClaims(token)
      // A check, not a use of the token: as a read, it leaves no request row.
      await beginImpersonatedRequest(token, claims, 'GET', c.req.url)
      return c.json({ user: { id: claims.sub, email: claims.email ?? null } })
    },
  )
