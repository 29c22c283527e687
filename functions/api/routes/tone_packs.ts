// Tone packs (SPEC "Tone pack", "Tone analysis, images, tone packs", Drops currency 3).
// Who may see, use, change, share, activate and buy a pack is decided in SQL
// (supabase/migrations/20261122020000_tone_packs.sql); these routes validate, call it with the
// caller's token and shape the reply. Images are generated through the AI client, or
// uploaded; the api alone writes them (service role) into the public bucket `tone-packs`,
// once their bytes are known to be an image: no client may write there.
import { z } from '@hono/zod-openapi'
import { refuseWrite } from '../../_shared/access.ts'
import { aiConfig, AiError, aiHttpError, generateImage, imageType, notConfigured } from '../../_shared/ai.ts'
import { claimDailyCalls, recordUsageQuietly, releaseDailyCalls } from '../../_shared/ai_usage.ts'
import { type Db, serviceDb } from '../../_shared/db.ts'
import { optionalEnv } from '../../_shared/env.ts'
import { badRequest, fromDb, HttpError, tooManyRequests, unwrap } from '../../_shared/errors.ts'
import { decodeCursor, encodeCursor, pageQuery } from '../../_shared/pagination.ts'
import { removeObjects, StorageError, uniqueStamp, uploadObject } from '../../_shared/storage.ts'
import { TONES } from '../../_shared/tone.ts'
import { idParams, uuid } from '../../_shared/validation.ts'
import { endpoint, Message, NextCursor, routeModule } from '../openapi.ts'

export const TONE_PACK_BUCKET = 'tone-packs'
export const THEMES = [
  'origami', 'animals', 'nature', 'abstract', 'geometric', 'minimalist',
  'watercolor', 'line-art', 'icons', 'emojis', 'shapes', 'patterns',
] as const
export const PACK_LIMITS = { name: 100, description: 1000, price: 1_000_000, imageBytes: 5 * 1024 * 1024 }

const packFields = {
  name: z.string().trim().min(1).max(PACK_LIMITS.name),
  description: z.string().trim().max(PACK_LIMITS.description),
  theme: z.enum(THEMES),
  is_public: z.boolean(),
  price_drops: z.number().int().min(0).max(PACK_LIMITS.price).openapi({ description: 'Price in drops; 0 is free' }),
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

const Image = z.object({ tone: z.enum(TONES), url: z.string(), updated_at: z.string() }).openapi('TonePackImage')
export const Pack = z.object({
  id: z.string(),
  owner_id: z.string(),
  name: z.string(),
  description: z.string(),
  theme: z.enum(THEMES),
  is_public: z.boolean(),
  price_drops: z.number().int(),
  retired: z.boolean().openapi({ description: 'Deleted by its owner after someone bought it: kept for its buyers only' }),
  created_at: z.string(),
  updated_at: z.string(),
  images: z.array(Image),
  is_owner: z.boolean(),
  is_shared: z.boolean().openapi({ description: 'Shared with the caller' }),
  is_purchased: z.boolean().openapi({ description: 'Bought by the caller' }),
  can_use: z.boolean().openapi({ description: 'The caller may activate it (owner, sharee, buyer, or public and free)' }),
  can_buy: z.boolean(),
  is_active: z.boolean().openapi({ description: 'The caller\'s active pack (preferences.active_tone_pack_id)' }),
}).openapi('TonePack')
const PackReply = z.object({ pack: Pack })
const Purchase = z.object({
  id: z.string(),
  pack_id: z.string().nullable(),
  pack_name: z.string(),
  price_drops: z.number().int(),
  transaction_id: z.number().int().nullable().openapi({ description: 'The ledger row that charged it (null for a free pack)' }),
  created_at: z.string(),
}).openapi('TonePackPurchase')
const PurchasedPack = Purchase.extend({ pack: Pack.nullable() }).openapi('PurchasedTonePack')

const ListQuery = z.object({
  ...pageQuery,
  purchased_before: pageQuery.before.openapi({ description: 'The purchased_next_cursor of the previous page' }),
}).strict()

const GenerateBody = z.object({
  tones: z.array(z.enum(TONES)).min(1).max(TONES.length)
    .refine((t) => new Set(t).size === t.length, 'must not list a tone twice'),
  quality: z.enum(['standard', 'hd']).default('standard'),
}).strict().openapi('GenerateTonePackImages')
const Generated = z.object({
  pack_id: z.string(),
  generated: z.array(z.object({ tone: z.enum(TONES), url: z.string(), cost_usd: z.number().nullable() })),
  failed: z.array(z.object({ tone: z.enum(TONES), error: z.string() })),
}).openapi('TonePackImagesGenerated')

const PurchaseBody = z.object({
  expected_price_drops: z.number().int().min(0).max(PACK_LIMITS.price).optional().openapi({
    description: 'The price the buyer was shown. The purchase is refused (409) unless it is the pack\'s price. ' +
      'Without it, the purchase is refused (409) once the pack\'s price has ever changed since its creation.',
  }),
}).strict().openapi('PurchaseTonePack')

const ShareBody = z.object({
  user_id: uuid().optional(),
  email: z.email().max(320).optional(),
}).strict().refine((b) => (b.user_id === undefined) !== (b.email === undefined), {
  message: 'give either user_id or email', path: ['user_id'],
}).openapi('ShareTonePack')
const Share = z.object({ pack_id: z.string(), user_id: z.string(), created_at: z.string(), created: z.boolean() })

const ImageParams = z.object({
  id: uuid().openapi({ param: { name: 'id', in: 'path' } }),
  tone: z.enum(TONES).openapi({ param: { name: 'tone', in: 'path' } }),
})
const ImageUpload = z.object({
  file: z.custom<File>((v) => v instanceof File, 'required: a file part named file')
    .openapi({ type: 'string', format: 'binary', description: 'PNG, JPEG or WEBP, at most 5 MB' }),
})

const EXTENSION = { 'image/png': 'png', 'image/jpeg': 'jpg', 'image/webp': 'webp' } as const

/** The prompt: the pack's theme, name and one tone. */
function iconPrompt(pack: { name: string; theme: string }, tone: string) {
  return [
    `A small square icon for the feeling "${tone}", part of an icon set called "${pack.name}".`,
    `Style: ${pack.theme.replace('-', ' ')}. One simple centered motif on a plain background,`,
    'readable at 32 pixels. No text, letters or logos.',
  ].join(' ')
}

/** Runs fn over items, at most `limit` at a time, keeping their order. */
async function inPool<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length)
  let next = 0
  const worker = async () => {
    while (next < items.length) {
      const i = next++
      results[i] = await fn(items[i])
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
  return results
}

const positiveEnv = (name: string, fallback: number) => {
  const n = Number(optionalEnv(name) ?? fallback)
  return Number.isFinite(n) && n > 0 ? Math.floor(n) : fallback
}

/** Whether the pack still exists, unretired, as the caller's (one indexed read, under RLS). */
async function stillOwned(db: Db, id: string, ownerId: string) {
  const row = await db.from('tone_packs').select('id').eq('id', id).eq('owner_id', ownerId).is('retired_at', null).maybeSingle()
  if (row.error) console.error(`tone pack ${id}: checking it still exists failed:`, row.error.message)
  return !row.error && row.data !== null
}

async function getPack(db: Db, id: string) {
  return unwrap(await db.rpc('get_tone_pack', { pack_id: id })) as z.infer<typeof Pack>
}

/** The pack, if the caller owns it: 404 when they may not see it, 403 when it is not theirs. */
async function ownedPack(db: Db, id: string) {
  const pack = await getPack(db, id)
  if (!pack.is_owner || pack.retired) throw new HttpError(403, 'Only the pack\'s owner may change it')
  return pack
}

/**
 * Stores an image whose bytes were checked (`type` is what they are) as a new object of the
 * owner's folder, and maps it to the tone. The replaced object is deleted unless a buyer holds
 * it. Service role: no client writes into the bucket (its policies allow none).
 */
async function storeImage(userId: string, packId: string, tone: string, bytes: Uint8Array, type: keyof typeof EXTENSION) {
  const objectName = `${userId}/${packId}/${tone}-${uniqueStamp()}.${EXTENSION[type]}`
  let url: string
  try {
    url = await uploadObject(TONE_PACK_BUCKET, objectName, bytes, type)
  } catch (e) {
    if (e instanceof StorageError && e.status === 413) throw new HttpError(413, 'file: must be at most 5 MB')
    if (e instanceof StorageError && e.status === 415) throw badRequest('file: must be a PNG, JPEG or WEBP image')
    console.error('tone pack image: storing failed:', (e as Error).message)
    throw new HttpError(502, 'Storing the image failed')
  }
  // Mapped by the service role for this owner: only the api decides which address an icon has.
  const mapped = await serviceDb().rpc('set_tone_pack_image', { owner_id: userId, pack_id: packId, tone, object_name: objectName, url })
  if (mapped.error) {
    await removeObjects(TONE_PACK_BUCKET, [objectName])
    throw fromDb(mapped.error)
  }
  const previous = (mapped.data as { previous_object: string | null }).previous_object
  if (previous) await removeObjects(TONE_PACK_BUCKET, [previous])
  return mapped.data as { tone: string; url: string; updated_at: string }
}

const tag = 'Tone packs'

export const tonePackRoutes = routeModule()
  .openapi(
    endpoint({
      method: 'get', path: '/tone-packs', tag, auth: 'bearer', query: ListQuery,
      summary: 'Packs the caller owns, was shared, bought, or that are public; and the caller\'s purchases',
      description: 'Two sections, each newest first and paginated on its own: `packs` (page with `before`) and ' +
        '`purchased` (the caller\'s purchases, page with `purchased_before`). Each pack carries its images and the ' +
        'caller\'s relation to it.',
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
        before_created_at: cur?.createdAt ?? null, before_id: cur?.id ?? null, page_size: q.limit + 1,
      })
      const [packs, purchases] = await Promise.all([
        c.var.db.rpc('list_tone_packs', args(packsAfter)),
        c.var.db.rpc('list_tone_pack_purchases', args(purchasesAfter)),
      ])
      const pageOf = <K extends string>(rows: ({ id: string; created_at: string } & Record<K, unknown>)[], key: K) => {
        const items = rows.slice(0, q.limit)
        const last = items[items.length - 1]
        return { items: items.map((r) => r[key]), next: rows.length > q.limit ? encodeCursor(last) : null }
      }
      const p = pageOf(unwrap(packs) as { id: string; created_at: string; pack: unknown }[], 'pack')
      const b = pageOf(unwrap(purchases) as { id: string; created_at: string; purchase: unknown }[], 'purchase')
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
      method: 'get', path: '/tone-packs/{id}', tag, auth: 'bearer', params: idParams('id'), response: PackReply,
      summary: 'A pack with its images',
      description: 'For a caller who may use or buy it (owner, sharee, buyer, public) and super admins; anyone else: 404.',
    }),
    async (c) => c.json({ pack: await getPack(c.var.db, c.req.valid('param').id) }),
  )
  .openapi(
    endpoint({
      method: 'post', path: '/tone-packs', tag, auth: 'bearer', body: NewPack, response: PackReply, status: 201,
      summary: 'Create a pack (the caller owns it)',
    }),
    async (c) => {
      const body = c.req.valid('json')
      const row = unwrap(await c.var.db.from('tone_packs').insert(body).select('id').single()) as { id: string }
      return c.json({ pack: await getPack(c.var.db, row.id) }, 201)
    },
  )
  .openapi(
    endpoint({
      method: 'put', path: '/tone-packs/{id}', tag, auth: 'bearer', params: idParams('id'), body: PackPatch,
      response: PackReply, errors: [403], summary: 'Change a pack (owner only)',
      description: 'Any of name, description, theme, is_public, price_drops. Unpublishing never takes a pack back from its buyers.',
    }),
    async (c) => {
      const { id } = c.req.valid('param')
      const patch = c.req.valid('json')
      if (Object.keys(patch).length) {
        const rows = unwrap(await c.var.db.from('tone_packs').update(patch).eq('id', id).select('id')) as unknown[]
        if (!rows.length) await refuseWrite(c.var.db, 'tone_packs', { id }, 'tone pack')
      } else {
        await ownedPack(c.var.db, id)
      }
      return c.json({ pack: await getPack(c.var.db, id) })
    },
  )
  .openapi(
    endpoint({
      method: 'delete', path: '/tone-packs/{id}', tag, auth: 'bearer', params: idParams('id'), errors: [403],
      response: Message.extend({ result: z.enum(['deleted', 'retired']) }), summary: 'Delete a pack (owner only)',
      description: 'A pack nobody bought is removed with its images and shares. A pack someone bought is retired: ' +
        'gone for the owner, the public and sharees, kept for its buyers (their purchase and ledger rows stay).',
    }),
    async (c) => {
      const done = unwrap(await c.var.db.rpc('delete_tone_pack', { pack_id: c.req.valid('param').id })) as {
        result: 'deleted' | 'retired'
        objects: string[]
      }
      await removeObjects(TONE_PACK_BUCKET, done.objects)
      return c.json({
        message: done.result === 'deleted' ? 'Tone pack deleted' : 'Tone pack retired: its buyers keep it',
        result: done.result,
      })
    },
  )
  .openapi(
    endpoint({
      method: 'post', path: '/tone-packs/{id}/generate-images', tag, auth: 'bearer', params: idParams('id'),
      body: GenerateBody, response: Generated, errors: [403, 429, 503],
      summary: 'Generate the pack\'s images for some tones (owner only)',
      description: `One 1024x1024 image per tone from the pack's theme and name (AI_IMAGE_MODEL), stored in the public ` +
        `bucket \`${TONE_PACK_BUCKET}\` at \`{userId}/{packId}/{tone}-{timestamp}-{random}.png\` and mapped as the pack's ` +
        'image for that tone (earlier buyers keep the image they bought). Each image counts against the daily cap for ' +
        'tone pack images (429 when none is left; tones past it are listed in `failed`) and is recorded in token usage ' +
        '(Packs). A tone that fails is listed in `failed` with the reason and does not undo the others; its place under ' +
        'the cap is given back only when the provider did not bill it (a billed image counts, even if storing it ' +
        'fails). Tones not yet started when the pack is deleted are not attempted.',
    }),
    async (c) => {
      const { id } = c.req.valid('param')
      const body = c.req.valid('json')
      const caller = c.var.caller
      const pack = await ownedPack(c.var.db, id)
      const cfg = aiConfig()
      if (!cfg) throw aiHttpError(notConfigured())

      // One claim for the whole request, counted per image; tones past the cap are refused.
      const claim = await claimDailyCalls(c.var.db, caller.id, 'tone_pack_image', body.tones.length)
      if (!claim.granted) throw tooManyRequests('Daily limit for tone pack images reached; try again tomorrow (UTC)')
      const allowed = body.tones.slice(0, claim.granted)
      const overCap = body.tones.slice(claim.granted)
        .map((tone) => ({ tone, error: 'Daily limit for tone pack images reached; try again tomorrow (UTC)' }))

      // Places the provider never billed are given back at the end; a billed image counts
      // whatever fails after it (the caller could delete the pack mid-request on purpose).
      let unbilled = 0
      let packGone = false
      const budgetMs = positiveEnv('TONE_PACK_GENERATION_BUDGET_MS', 120_000)
      const endsAt = Date.now() + budgetMs
      const results = await inPool(allowed, positiveEnv('TONE_PACK_IMAGE_CONCURRENCY', 4), async (tone) => {
        const remaining = endsAt - Date.now()
        if (remaining < 1000) {
          unbilled++
          return { tone, error: 'Not attempted: the request\'s time budget was spent; ask again for this tone' }
        }
        // Deleted (or retired) since the request began: no image is paid for a pack that is gone.
        if (packGone || !(await stillOwned(c.var.db, id, caller.id))) {
          packGone = true
          unbilled++
          return { tone, error: 'Not attempted: tone pack not found' }
        }
        let image
        try {
          image = await generateImage(
            { prompt: iconPrompt(pack, tone), quality: body.quality },
            { deadlineMs: Math.min(cfg.imageTimeoutMs, remaining) },
          )
        } catch (e) {
          // A billed reply we could not use counts; a call the provider did not bill is given back.
          if (e instanceof AiError && e.usage) await recordUsageQuietly(caller.id, 'tone_pack_image', e.usage, { packId: id })
          else unbilled++
          console.error(`tone pack ${id} ${tone}: generation failed:`, (e as Error).message)
          return { tone, error: aiHttpError(e).message }
        }
        const usage = await recordUsageQuietly(caller.id, 'tone_pack_image', image.usage, { packId: id })
        try {
          const stored = await storeImage(caller.id, id, tone, image.bytes, image.contentType)
          return { tone, url: stored.url, cost_usd: usage ? Number(usage.cost_usd) : null }
        } catch (e) {
          return { tone, error: e instanceof HttpError ? e.message : 'Storing the image failed' }
        }
      })
      await releaseDailyCalls(claim, unbilled)
      results.push(...overCap)
      return c.json({
        pack_id: id,
        generated: results.filter((r) => 'url' in r) as z.infer<typeof Generated>['generated'],
        failed: results.filter((r) => 'error' in r) as z.infer<typeof Generated>['failed'],
      })
    },
  )
  .openapi(
    endpoint({
      method: 'put', path: '/tone-packs/{id}/images/{tone}', tag, auth: 'bearer', params: ImageParams,
      multipart: ImageUpload, response: z.object({ image: Image }), errors: [403],
      summary: 'Upload the pack\'s image for one tone (owner only)',
      description: 'multipart/form-data with a `file` part: PNG, JPEG or WEBP (checked by its bytes), at most 5 MB. ' +
        'Stored as a new object in the bucket and mapped as the image for the tone (earlier buyers keep the image they ' +
        'bought; a replaced image nobody bought is deleted).',
    }),
    async (c) => {
      const { id, tone } = c.req.valid('param')
      if (!/^multipart\/form-data/i.test(c.req.header('content-type') ?? '')) {
        throw badRequest('file: send multipart/form-data with a file part')
      }
      const form = await c.req.parseBody().catch(() => {
        throw badRequest('file: malformed multipart body')
      })
      const file = form.file
      if (!(file instanceof File)) throw badRequest('file: required: a file part named file')
      if (file.size > PACK_LIMITS.imageBytes) throw new HttpError(413, 'file: must be at most 5 MB')
      const bytes = new Uint8Array(await file.arrayBuffer())
      const type = imageType(bytes)
      if (!type) throw badRequest('file: must be a PNG, JPEG or WEBP image')
      await ownedPack(c.var.db, id)
      const image = await storeImage(c.var.caller.id, id, tone, bytes, type)
      return c.json({ image: image as z.infer<typeof Image> })
    },
  )
  .openapi(
    endpoint({
      method: 'post', path: '/tone-packs/{id}/share', tag, auth: 'bearer', params: idParams('id'), body: ShareBody,
      response: z.object({ share: Share }), status: 201, errors: [403],
      summary: 'Share a pack with a user, by user_id or email (owner only)',
      description: 'Sharing again is harmless (`created: false`). Only the owner gets as far as looking the user up: ' +
        'an unknown user id or e-mail is 404 "user not found"; oneself is 400.',
    }),
    async (c) => {
      const { id } = c.req.valid('param')
      const body = c.req.valid('json')
      const share = unwrap(
        await c.var.db.rpc('share_tone_pack', { pack_id: id, user_id: body.user_id ?? null, email: body.email ?? null }),
      )
      return c.json({ share: share as z.infer<typeof Share> }, 201)
    },
  )
  .openapi(
    endpoint({
      method: 'delete', path: '/tone-packs/{id}/share/{userId}', tag, auth: 'bearer', params: idParams('id', 'userId'),
      response: Message, errors: [403], summary: 'Stop sharing a pack with a user (owner only)',
    }),
    async (c) => {
      const { id, userId } = c.req.valid('param')
      unwrap(await c.var.db.rpc('unshare_tone_pack', { pack_id: id, user_id: userId }))
      return c.json({ message: 'Share removed' })
    },
  )
  .openapi(
    endpoint({
      method: 'post', path: '/tone-packs/{id}/activate', tag, auth: 'bearer', params: idParams('id'), errors: [403],
      response: z.object({ active_tone_pack_id: z.string(), preferences: z.record(z.string(), z.unknown()) }),
      summary: 'Make a pack the caller\'s active pack',
      description: 'Sets preferences.active_tone_pack_id, for a pack the caller owns, was shared, bought, or that is ' +
        'public and free (a priced pack must be bought first: 403). Entries then carry `tone_icon_url`, the active ' +
        'pack\'s image for their mood. Deactivate with PUT /api/user/profile {preferences: {active_tone_pack_id: null}}.',
    }),
    async (c) => {
      const done = unwrap(await c.var.db.rpc('activate_tone_pack', { pack_id: c.req.valid('param').id }))
      return c.json(done as { active_tone_pack_id: string; preferences: Record<string, unknown> })
    },
  )
  .openapi(
    endpoint({
      method: 'post', path: '/tone-packs/{id}/purchase', tag, auth: 'bearer', params: idParams('id'), status: 201,
      body: PurchaseBody, bodyRequired: false,
      response: z.object({ purchase: Purchase, balance: z.number().int(), replayed: z.boolean() }), errors: [402, 409, 422],
      summary: 'Buy a pack with drops',
      description: 'One transaction: a `purchase` ledger row of -price_drops (none for a free pack) and the purchase. ' +
        'For a pack that is public or shared with the caller, not their own, not yet bought. Send the price shown to ' +
        'the buyer as `expected_price_drops`: a different price is 409 (the message names the current one); without ' +
        'it, the purchase is 409 once the price has ever changed since the pack was created (the buyer cannot have seen ' +
        'only the current price), naming the current price to confirm. The buyer keeps the pack\'s images as they ' +
        'are now. 402 when the balance is below the price (the message names both), 409 own or already bought; ' +
        'nothing is written then. Send an ' +
        '`Idempotency-Key` header (1..200 characters) to make retries safe: a repeat returns the first purchase ' +
        '(`replayed: true`) and charges nothing; the same key for another pack is 422.',
    }),
    async (c) => {
      const key = c.req.header('idempotency-key')
      if (key !== undefined && (key.trim().length < 1 || key.length > 200)) {
        throw badRequest('Idempotency-Key: must be 1 to 200 characters')
      }
      const expected = c.req.valid('json')?.expected_price_drops
      const done = unwrap(
        await c.var.db.rpc('purchase_tone_pack', {
          pack_id: c.req.valid('param').id, idempotency_key: key ?? null, expected_price_drops: expected ?? null,
        }),
      ) as { purchase: z.infer<typeof Purchase>; balance: number; replayed: boolean }
      const { purchase } = done
      return c.json({
        purchase: {
          id: purchase.id, pack_id: purchase.pack_id, pack_name: purchase.pack_name, price_drops: purchase.price_drops,
          transaction_id: purchase.transaction_id, created_at: purchase.created_at,
        },
        balance: done.balance,
        replayed: done.replayed,
      }, 201)
    },
  )
