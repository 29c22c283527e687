// Sharing a pack with another user (by id or e-mail), and taking the share back: owner only.
import { z } from '@hono/zod-openapi'
import { unwrap } from '../../../_shared/errors.ts'
import { idParams, uuid } from '../../../_shared/validation.ts'
import { endpoint, Message, routeModule } from '../../openapi.ts'
import { tag } from './shared.ts'

const ShareBody = z.object({
  user_id: uuid().optional(),
  email: z.email().max(320).optional(),
}).strict().refine((b) => (b.user_id === undefined) !== (b.email === undefined), {
  message: 'give either user_id or email',
  path: ['user_id'],
}).openapi('ShareTonePack')
const Share = z.object({
  pack_id: z.string(),
  user_id: z.string(),
  created_at: z.string(),
  created: z.boolean(),
})

export const sharingRoutes = routeModule()
  .openapi(
    endpoint({
      method: 'post',
      path: '/tone-packs/{id}/share',
      tag,
      auth: 'bearer',
      params: idParams('id'),
      body: ShareBody,
      response: z.object({ share: Share }),
      status: 201,
      errors: [403],
      summary: 'Share a pack with a user, by user_id or email (owner only)',
      description:
        'Sharing again is harmless (`created: false`). Only the owner gets as far as looking the user up: ' +
        'an unknown user id or e-mail is 404 "user not found"; oneself is 400.',
    }),
    async (c) => {
      const { id } = c.req.valid('param')
      const body = c.req.valid('json')
      const share = unwrap(
        await c.var.db.rpc('share_tone_pack', {
          pack_id: id,
          user_id: body.user_id ?? null,
          email: body.email ?? null,
        }),
      )
      return c.json({ share: share as z.infer<typeof Share> }, 201)
    },
  )
  .openapi(
    endpoint({
      method: 'delete',
      path: '/tone-packs/{id}/share/{userId}',
      tag,
      auth: 'bearer',
      params: idParams('id', 'userId'),
      response: Message,
      errors: [403],
      summary: 'Stop sharing a pack with a user (owner only)',
    }),
    async (c) => {
      const { id, userId } = c.req.valid('param')
      unwrap(await c.var.db.rpc('unshare_tone_pack', { pack_id: id, user_id: userId }))
      return c.json({ message: 'Share removed' })
    },
  )
