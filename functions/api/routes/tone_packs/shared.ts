// What the tone-pack modules share: the tag, the bucket, themes and limits, the pack, image and
// purchase shapes, and reading a pack as the caller sees it (or as its owner must).
import { z } from '@hono/zod-openapi'
import type { Db } from '../../../_shared/db.ts'
import { HttpError, unwrap } from '../../../_shared/errors.ts'
import { TONES } from '../../../_shared/tone.ts'

export const tag = 'Tone packs'

export const TONE_PACK_BUCKET = 'tone-packs'
export const THEMES = [
  'origami',
  'animals',
  'nature',
  'abstract',
  'geometric',
  'minimalist',
  'watercolor',
  'line-art',
  'icons',
  'emojis',
  'shapes',
  'patterns',
] as const
export const PACK_LIMITS = { name: 100, description: 1000, price: 1_000_000, imageBytes: 5 * 1024 * 1024 }

export const Image = z.object({ tone: z.enum(TONES), url: z.string(), updated_at: z.string() }).openapi(
  'TonePackImage',
)
export const Pack = z.object({
  id: z.string(),
  owner_id: z.string(),
  name: z.string(),
  description: z.string(),
  theme: z.enum(THEMES),
  is_public: z.boolean(),
  price_drops: z.number().int(),
  retired: z.boolean().openapi({
    description: 'Deleted by its owner after someone bought it: kept for its buyers only',
  }),
  created_at: z.string(),
  updated_at: z.string(),
  images: z.array(Image),
  is_owner: z.boolean(),
  is_shared: z.boolean().openapi({ description: 'Shared with the caller' }),
  is_purchased: z.boolean().openapi({ description: 'Bought by the caller' }),
  can_use: z.boolean().openapi({
    description: 'The caller may activate it (owner, sharee, buyer, or public and free)',
  }),
  can_buy: z.boolean(),
  is_active: z.boolean().openapi({
    description: "The caller's active pack (preferences.active_tone_pack_id)",
  }),
}).openapi('TonePack')
export const Purchase = z.object({
  id: z.string(),
  pack_id: z.string().nullable(),
  pack_name: z.string(),
  price_drops: z.number().int(),
  transaction_id: z.number().int().nullable().openapi({
    description: 'The ledger row that charged it (null for a free pack)',
  }),
  created_at: z.string(),
}).openapi('TonePackPurchase')

export async function getPack(db: Db, id: string) {
  return unwrap(await db.rpc('get_tone_pack', { pack_id: id }))
}

/** The pack, if the caller owns it: 404 when they may not see it, 403 when it is not theirs. */
export async function ownedPack(db: Db, id: string) {
  const pack = await getPack(db, id)
  if (!pack.is_owner || pack.retired) throw new HttpError(403, "Only the pack's owner may change it")
  return pack
}
