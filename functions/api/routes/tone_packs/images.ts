// A pack's images, one per tone: generated through the AI client (under the daily cap, usage
// recorded) or uploaded. Only the api writes them (service role) into the public bucket, once
// their bytes are known to be an image: no client may write there.
import { z } from '@hono/zod-openapi'
import {
  aiConfig,
  AiError,
  aiHttpError,
  generateImage,
  imageType,
  notConfigured,
} from '../../../_shared/ai.ts'
import { claimDailyCalls, recordUsageQuietly, releaseDailyCalls } from '../../../_shared/ai_usage.ts'
import { type Db, serviceDb } from '../../../_shared/db.ts'
import { optionalEnv } from '../../../_shared/env.ts'
import { badRequest, fromDb, HttpError, tooManyRequests } from '../../../_shared/errors.ts'
import { checkImageSize, type ImageSizeLimits, UnreadableImage } from '../../../_shared/image_size.ts'
import { removeObjects, StorageError, uniqueStamp, uploadObject } from '../../../_shared/storage.ts'
import { TONES } from '../../../_shared/tone.ts'
import { idParams, uuid } from '../../../_shared/validation.ts'
import { endpoint, routeModule } from '../../openapi.ts'
import { Image, ownedPack, PACK_LIMITS, tag, TONE_PACK_BUCKET } from './shared.ts'

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

const ImageParams = z.object({
  id: uuid().openapi({ param: { name: 'id', in: 'path' } }),
  tone: z.enum(TONES).openapi({ param: { name: 'tone', in: 'path' } }),
})
const ImageUpload = z.object({
  file: z.custom<File>((v) => v instanceof File, 'required: a file part named file')
    .openapi({
      type: 'string',
      format: 'binary',
      description: 'PNG, JPEG or WEBP, at most 5 MB and 2048x2048 pixels',
    }),
})

const EXTENSION = { 'image/png': 'png', 'image/jpeg': 'jpg', 'image/webp': 'webp' } as const

/**
 * What a pack image may ask of whoever decodes it (every client showing the icon): generated
 * images are 1024x1024 (SPEC), uploaded art up to 2048 a side; an animation's frames together
 * no more than one such image. Judged from the headers before anything decodes it.
 */
export const PACK_IMAGE_LIMITS: ImageSizeLimits = {
  maxSide: 2048,
  maxPixels: 2048 * 2048,
  maxFrames: 50,
  maxTotalPixels: 2048 * 2048,
}

/** Bytes known to be a PNG, JPEG or WEBP within PACK_IMAGE_LIMITS: only packImage makes one. */
interface PackImage {
  bytes: Uint8Array
  type: keyof typeof EXTENSION
  readonly checked: unique symbol
}

/** The bytes as a pack image, or why they cannot be one (UnreadableImage). */
function packImage(bytes: Uint8Array): PackImage {
  const type = imageType(bytes)
  if (!type) throw new UnreadableImage('must be a PNG, JPEG or WEBP image')
  checkImageSize(bytes, type, PACK_IMAGE_LIMITS)
  return { bytes, type } as PackImage
}

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
  const row = await db.from('tone_packs').select('id').eq('id', id).eq('owner_id', ownerId).is(
    'retired_at',
    null,
  ).maybeSingle()
  if (row.error) console.error(`tone pack ${id}: checking it still exists failed:`, row.error.message)
  return !row.error && row.data !== null
}

/**
 * Stores a checked image (packImage) as a new object of the owner's folder, and maps it to the
 * tone. The replaced object is deleted unless a buyer holds it. Service role: no client writes
 * into the bucket (its policies allow none), so every image there passed packImage.
 */
async function storeImage(userId: string, packId: string, tone: string, { bytes, type }: PackImage) {
  const objectName = `${userId}/${packId}/${tone}-${uniqueStamp()}.${EXTENSION[type]}`
  let url: string
  try {
    url = await uploadObject(TONE_PACK_BUCKET, objectName, bytes, type)
  } catch (e) {
    if (e instanceof StorageError && e.status === 413) throw new HttpError(413, 'file: must be at most 5 MB')
    if (e instanceof StorageError && e.status === 415) {
      throw badRequest('file: must be a PNG, JPEG or WEBP image')
    }
    console.error('tone pack image: storing failed:', (e as Error).message)
    throw new HttpError(502, 'Storing the image failed')
  }
  // Mapped by the service role for this owner: only the api decides which address an icon has.
  const mapped = await serviceDb().rpc('set_tone_pack_image', {
    owner_id: userId,
    pack_id: packId,
    tone,
    object_name: objectName,
    url,
  })
  if (mapped.error) {
    await removeObjects(TONE_PACK_BUCKET, [objectName])
    throw fromDb(mapped.error)
  }
  const done = mapped.data as {
    tone: string
    url: string
    updated_at: string
    previous_object: string | null
  }
  if (done.previous_object) await removeObjects(TONE_PACK_BUCKET, [done.previous_object])
  // The reply's documented fields; which object was replaced is the api's business.
  return { tone: done.tone, url: done.url, updated_at: done.updated_at }
}

export const imageRoutes = routeModule()
  .openapi(
    endpoint({
      method: 'post',
      path: '/tone-packs/{id}/generate-images',
      tag,
      auth: 'bearer',
      params: idParams('id'),
      body: GenerateBody,
      response: Generated,
      errors: [403, 429, 503],
      summary: "Generate the pack's images for some tones (owner only)",
      description:
        `One 1024x1024 image per tone from the pack's theme and name (AI_IMAGE_MODEL), stored in the public ` +
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
      if (!claim.granted) {
        throw tooManyRequests('Daily limit for tone pack images reached; try again tomorrow (UTC)')
      }
      const allowed = body.tones.slice(0, claim.granted)
      const overCap = body.tones.slice(claim.granted)
        .map((tone) => ({
          tone,
          error: 'Daily limit for tone pack images reached; try again tomorrow (UTC)',
        }))

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
          return {
            tone,
            error: "Not attempted: the request's time budget was spent; ask again for this tone",
          }
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
          if (e instanceof AiError && e.usage) {
            await recordUsageQuietly(caller.id, 'tone_pack_image', e.usage, { packId: id })
          } else unbilled++
          console.error(`tone pack ${id} ${tone}: generation failed:`, (e as Error).message)
          return { tone, error: aiHttpError(e).message }
        }
        const usage = await recordUsageQuietly(caller.id, 'tone_pack_image', image.usage, { packId: id })
        let checked: PackImage
        try {
          checked = packImage(image.bytes)
        } catch (e) {
          if (!(e instanceof UnreadableImage)) throw e
          return { tone, error: `the generated image was unusable: ${e.message}` }
        }
        try {
          const stored = await storeImage(caller.id, id, tone, checked)
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
      method: 'put',
      path: '/tone-packs/{id}/images/{tone}',
      tag,
      auth: 'bearer',
      params: ImageParams,
      multipart: ImageUpload,
      response: z.object({ image: Image }),
      errors: [403],
      summary: "Upload the pack's image for one tone (owner only)",
      description:
        'multipart/form-data with a `file` part: PNG, JPEG or WEBP (checked by its bytes), at most 5 MB and ' +
        '2048x2048 pixels (judged from its headers; an animation\'s frames together no more). ' +
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
      let checked: PackImage
      try {
        checked = packImage(new Uint8Array(await file.arrayBuffer()))
      } catch (e) {
        throw e instanceof UnreadableImage ? badRequest(`file: ${e.message}`) : e
      }
      await ownedPack(c.var.db, id)
      const image = await storeImage(c.var.caller.id, id, tone, checked)
      return c.json({ image: image as z.infer<typeof Image> })
    },
  )
