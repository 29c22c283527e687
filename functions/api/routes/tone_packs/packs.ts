// A pack itself: the list (the caller's packs and purchases, each paginated), one pack,
// creating, changing and deleting one (a pack someone bought is retired, not deleted).
import { z } from '@hono/zod-openapi'
import { refuseWrite } from '../../../_shared/access.ts'
import { badRequest, unwrap } from '../../../_shared/errors.ts'
import { decodeCursor, encodeCursor, pageQuery } from '../../../_shared/pagination.ts'
import { removeObjects } from '../../../_shared/storage.ts'
import { idParams } from '../../../_shared/validation.ts'
import { endpoint, Message, NextCursor, orNull, routeModule } from '../../openapi.ts'
import { getPack, ownedPack, Pack, PACK_LIMITS, Purchase, tag, THEMES, TONE_PACK_BUCKET } from './shared.ts'

const packFields = {
  name: z.string().trim().min(1).max(PACK_LIMITS.name),
  description: z.string().trim().max(PACK_LIMITS.description),
  theme: z.enum(THEMES),
  is_public: z.boolean(),
  price_drops: z.number().int().min(0).max(PACK_LIMITS.price).openapi({
    description: 'Price in drops; 0 is free',
  }),
}
const NewPack = z.object({
  name: packFields.name,
  description: packFields.description.default(''),
  theme: packFields.theme,
  is_public: packFields.is_public.default(false),
  price_drops: packFields.price_drops.default(0),
}).strict().openapi('NewTonePack')
const PackPatch = z.object({
  name: packFields.name.optional(),
  description: packFields.description.optional(),
  theme: packFields.theme.optional(),
  is_public: packFields.is_public.optional(),
  price_drops: packFields.price_drops.optional(),
}).strict().openapi('TonePackPatch')

const PackReply = z.object({ pack: Pack })
const PurchasedPack = Purchase.extend({ pack: orNull(Pack) }).openapi('PurchasedTonePack')

const ListQuery = z.object({
  ...pageQuery,
  purchased_before: pageQuery.before.openapi({
    description: 'The purchased_next_cursor of the previous page',
  }),
}).strict()

export const packRoutes = routeModule()
  .openapi(
    endpoint({
      method: 'get',
      path: '/tone-packs',
      tag,
      auth: 'bearer',
      query: ListQuery,
      summary: "Packs the caller owns, was shared, bought, or that are public; and the caller's purchases",
      description:
        'Two sections, each newest first and paginated on its own: `packs` (page with `before`) and ' +
        "`purchased` (the caller's purchases, page with `purchased_before`). Each pack carries its images and the " +
        "caller's relation to it.",
      response: z.object({
        packs: z.array(Pack),
        next_cursor: NextCursor,
        purchased: z.array(PurchasedPack),
        purchased_next_cursor: NextCursor,
      }),
    }),
    async (c) => {
      const q = c.req.valid('query')
      const packsAfter = decodeCursor(q.before)
      let purchasesAfter
      try {
        purchasesAfter = decodeCursor(q.purchased_before)
      } catch {
        throw badRequest('purchased_before: not a valid cursor')
      }
      const args = (cur: typeof packsAfter) => ({
        before_created_at: cur?.createdAt ?? null,
        before_id: cur?.id ?? null,
        page_size: q.limit + 1,
      })
      const [packs, purchases] = await Promise.all([
        c.var.db.rpc('list_tone_packs', args(packsAfter)),
        c.var.db.rpc('list_tone_pack_purchases', args(purchasesAfter)),
      ])
      const pageOf = <K extends string>(
        rows: ({ id: string; created_at: string } & Record<K, unknown>)[],
        key: K,
      ) => {
        const items = rows.slice(0, q.limit)
        const last = items[items.length - 1]
        return { items: items.map((r) => r[key]), next: rows.length > q.limit ? encodeCursor(last) : null }
      }
      const p = pageOf(unwrap(packs), 'pack')
      const b = pageOf(unwrap(purchases), 'purchase')
      return c.json({
        packs: p.items as z.infer<typeof Pack>[],
        next_cursor: p.next,
        purchased: b.items as z.infer<typeof PurchasedPack>[],
        purchased_next_cursor: b.next,
      })
    },
  )
  .openapi(
    endpoint({
      method: 'get',
      path: '/tone-packs/{id}',
      tag,
      auth: 'bearer',
      params: idParams('id'),
      response: PackReply,
      summary: 'A pack with its images',
      description:
        'For a caller who may use or buy it (owner, sharee, buyer, public) and super admins; anyone else: 404.',
    }),
    async (c) => c.json({ pack: await getPack(c.var.db, c.req.valid('param').id) }),
  )
  .openapi(
    endpoint({
      method: 'post',
      path: '/tone-packs',
      tag,
      auth: 'bearer',
      body: NewPack,
      response: PackReply,
      status: 201,
      summary: 'Create a pack (the caller owns it)',
    }),
    async (c) => {
      const body = c.req.valid('json')
      const row = unwrap(await c.var.db.from('tone_packs').insert(body).select('id').single())
      return c.json({ pack: await getPack(c.var.db, row.id) }, 201)
    },
  )
  .openapi(
    endpoint({
      method: 'put',
      path: '/tone-packs/{id}',
      tag,
      auth: 'bearer',
      params: idParams('id'),
      body: PackPatch,
      response: PackReply,
      errors: [403],
      summary: 'Change a pack (owner only)',
      description:
        'Any of name, description, theme, is_public, price_drops. Unpublishing never takes a pack back from its buyers.',
    }),
    async (c) => {
      const { id } = c.req.valid('param')
      const patch = c.req.valid('json')
      if (Object.keys(patch).length) {
        const rows = unwrap(await c.var.db.from('tone_packs').update(patch).eq('id', id).select('id'))
        if (!rows.length) await refuseWrite(c.var.db, 'tone_packs', { id }, 'tone pack')
      } else {
        await ownedPack(c.var.db, id)
      }
      return c.json({ pack: await getPack(c.var.db, id) })
    },
  )
  .openapi(
    endpoint({
      method: 'delete',
      path: '/tone-packs/{id}',
      tag,
      auth: 'bearer',
      params: idParams('id'),
      errors: [403],
      response: Message.extend({ result: z.enum(['deleted', 'retired']) }),
      summary: 'Delete a pack (owner only)',
      description:
        'A pack nobody bought is removed with its images and shares. A pack someone bought is retired: ' +
        'gone for the owner, the public and sharees, kept for its buyers (their purchase and ledger rows stay).',
    }),
    async (c) => {
      const done = unwrap(await c.var.db.rpc('delete_tone_pack', { pack_id: c.req.valid('param').id }))
      await removeObjects(TONE_PACK_BUCKET, done.objects)
      return c.json({
        message: done.result === 'deleted' ? 'Tone pack deleted' : 'Tone pack retired: its buyers keep it',
        result: done.result,
      })
    },
  )
