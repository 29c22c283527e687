// POST /api/auth/verify: is this access token valid, and whose is it? (no credential)
import { Hono } from 'hono'
import { z } from 'zod'
import { userClaims } from '../../_shared/jwt.ts'
import { readJson } from '../../_shared/validation.ts'
import { type ApiEnv, publicRoute } from '../credentials.ts'

const VerifyBody = z.object({
  token: z.string({ required_error: 'token is required', invalid_type_error: 'token must be a string' })
    .min(1, 'token is required').max(8192, 'token is too long'),
})

export const authRoutes = new Hono<ApiEnv>()
  .post('/auth/verify', publicRoute, async (c) => {
    const { token } = await readJson(c, VerifyBody)
    const claims = await userClaims(token)
    return c.json({ user: { id: claims.sub, email: claims.email ?? null } })
  })
