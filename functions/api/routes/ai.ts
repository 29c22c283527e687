// Tone analysis, entry backgrounds and token usage (SPEC "Tone analysis, images, tone packs",
// "Token tracking"). Each AI call is counted against the caller's daily cap in SQL first; a
// call the provider did not bill gives its place back, a billed one counts whatever fails
// after it; every billed call is recorded (cost computed in SQL) before the reply.
import { z } from '@hono/zod-openapi'
import { aiConfig, AiError, aiHttpError, generateImage, notConfigured } from '../../_shared/ai.ts'
import { claimDailyCall, recordUsageQuietly, releaseDailyCalls } from '../../_shared/ai_usage.ts'
import { serviceDb } from '../../_shared/db.ts'
import { forbidden, fromDb, HttpError, notFound, unwrap } from '../../_shared/errors.ts'
import { removeObjects, StorageError, uniqueStamp, uploadObject } from '../../_shared/storage.ts'
import { analyzeTone, TONES } from '../../_shared/tone.ts'
import { uuid } from '../../_shared/validation.ts'
import { endpoint, routeModule } from '../openapi.ts'
import { LIMITS } from './journal.ts'

export const BACKGROUND_BUCKET = 'entry-backgrounds'

const AnalyzeToneBody = z.object({
  content: z.string().trim().min(1).max(LIMITS.content),
  title: z.string().trim().max(LIMITS.title).optional(),
}).strict().openapi('AnalyzeToneRequest')

const ToneResultSchema = z.object({
  primaryTone: z.enum(TONES),
  tones: z.array(z.object({ tone: z.enum(TONES), score: z.number().min(0).max(1) })),
  sentiment: z.enum(['positive', 'negative', 'neutral']),
  confidence: z.number().min(0).max(1),
}).openapi('ToneAnalysis')

const BackgroundBody = z.object({
  entry_id: uuid(),
  style: z.string().trim().min(1).max(200).optional()
    .openapi({ description: 'How the image should look, e.g. "soft watercolor"; default: soft abstract' }),
  quality: z.enum(['standard', 'hd']).default('standard'),
}).strict().openapi('GenerateBackgroundRequest')

const BackgroundResult = z.object({
  entry_id: z.string(),
  background_url: z.string(),
  model: z.string(),
  quality: z.enum(['standard', 'hd']),
  cost_usd: z.number().nullable().openapi({
    description: 'What this image cost, as recorded in token usage',
  }),
}).openapi('EntryBackground')

const UsageQuery = z.object({
  year: z.coerce.number().int().min(2000).max(9999).optional().openapi({
    description: 'Default: this year (UTC)',
  }),
  month: z.coerce.number().int().min(1).max(12).optional().openapi({
    description: 'Default: this month (UTC)',
  }),
  user_id: uuid().optional().openapi({
    description: 'Another user (super admins only); default: the caller',
  }),
}).strict()

const Totals = z.object({
  calls: z.number().int(),
  tokens: z.number().int(),
  images: z.number().int(),
  cost: z.number(),
})
export const UsageSummary = z.object({
  total_tokens: z.number().int(),
  total_cost: z.number().openapi({ description: 'USD' }),
  calls: z.number().int(),
  breakdown: z.record(z.string(), Totals).openapi({
    description: 'Per category: Tone, Images, Packs (and any a later area adds)',
  }),
}).openapi('TokenUsageSummary')
const MonthlyUsage = z.object({ user_id: z.string(), year: z.number().int(), month: z.number().int() })
  .extend(UsageSummary.shape).openapi('MonthlyTokenUsage')

/** The prompt: the entry's title and mood only (metadata its owner sees), never its text. */
function backgroundPrompt(entry: { title: string; mood: string | null }, style?: string) {
  return [
    `A calm, abstract background image for a personal journal entry titled "${entry.title}".`,
    entry.mood ? `It should feel ${entry.mood}.` : '',
    `Style: ${style ?? 'soft abstract shapes and gentle gradients'}.`,
    'No text, letters, logos or faces; leave room for text to be read on top.',
  ].filter(Boolean).join(' ')
}

const EXTENSION = { 'image/png': 'png', 'image/jpeg': 'jpg', 'image/webp': 'webp' } as const

const tag = 'AI'

export const aiRoutes = routeModule()
  .openapi(
    endpoint({
      method: 'post',
      path: '/ai/analyze-tone',
      tag,
      auth: 'bearer',
      body: AnalyzeToneBody,
      response: ToneResultSchema,
      summary: 'Detect the tone of a text',
      errors: [429, 502, 504],
      description:
        "The primary tone, up to five scored tones (SPEC's 20), the sentiment of the primary tone's group " +
        'and the confidence. Counts against the daily tone-analysis cap; recorded in token usage.',
    }),
    async (c) => {
      const body = c.req.valid('json')
      if (!aiConfig()) throw aiHttpError(notConfigured())
      const claim = await claimDailyCall(c.var.db, c.var.caller.id, 'tone_analysis', 'tone analysis')
      try {
        const { result, usage } = await analyzeTone(body, { retries: 1 })
        await recordUsageQuietly(c.var.caller.id, 'tone_analysis', usage)
        return c.json(result)
      } catch (e) {
        // A billed reply we could not use counts (the text chose it); anything else is given back.
        if (e instanceof AiError && e.usage) {
          await recordUsageQuietly(c.var.caller.id, 'tone_analysis', e.usage)
        } else await releaseDailyCalls(claim)
        console.error('analyze-tone failed:', (e as Error).message)
        throw aiHttpError(e)
      }
    },
  )
  .openapi(
    endpoint({
      method: 'post',
      path: '/ai/generate-background',
      tag,
      auth: 'bearer',
      body: BackgroundBody,
      response: BackgroundResult,
      summary: "Generate a background image for one of the caller's entries",
      errors: [403, 404, 429, 502, 504],
      description:
        `The image is made from the entry's title and mood (AI_IMAGE_MODEL), stored in the public bucket ` +
        `\`${BACKGROUND_BUCKET}\` at \`{userId}/{entryId}-{timestamp}-{random}.png\` and its URL kept on the entry (background_url). ` +
        'The owner only. Counts against the daily background cap (given back only when the provider did not bill the ' +
        'call; a billed image counts even if storing it fails); recorded in token usage.',
    }),
    async (c) => {
      const body = c.req.valid('json')
      const caller = c.var.caller
      const entry = unwrap(
        await c.var.db.from('journal_entries').select('id, user_id, title, mood').eq('id', body.entry_id)
          .maybeSingle(),
      )
      if (!entry) throw notFound('Entry not found')
      if (entry.user_id !== caller.id) throw forbidden("Only the entry's owner may generate its background")
      if (!aiConfig()) throw aiHttpError(notConfigured())
      const claim = await claimDailyCall(c.var.db, caller.id, 'entry_background', 'background images')

      let image
      try {
        image = await generateImage({ prompt: backgroundPrompt(entry, body.style), quality: body.quality })
      } catch (e) {
        if (e instanceof AiError && e.usage) {
          await recordUsageQuietly(caller.id, 'entry_background', e.usage, { entryId: entry.id })
        } else await releaseDailyCalls(claim)
        console.error('generate-background failed:', (e as Error).message)
        throw aiHttpError(e)
      }
      // Billed either way: recorded before anything else can fail (a failed record is logged).
      // From here the place under the cap stays taken, whatever fails: the caller can make the
      // rest fail on purpose (deleting the entry mid-call), and the image was paid for.
      const usage = await recordUsageQuietly(caller.id, 'entry_background', image.usage, {
        entryId: entry.id,
      })

      const objectName = `${caller.id}/${entry.id}-${uniqueStamp()}.${EXTENSION[image.contentType]}`
      let url: string
      try {
        url = await uploadObject(BACKGROUND_BUCKET, objectName, image.bytes, image.contentType)
      } catch (e) {
        console.error('generate-background: storing the image failed:', (e as Error).message)
        throw new HttpError(
          502,
          e instanceof StorageError && e.status === 413
            ? 'The generated image is too large to store'
            : 'Storing the image failed',
        )
      }
      // Service role: the column other readers see is written only with an address the api stored.
      const stored = await serviceDb().rpc('set_entry_background', {
        owner_id: caller.id,
        entry_id: entry.id,
        object_name: objectName,
        url,
      })
      if (stored.error) {
        await removeObjects(BACKGROUND_BUCKET, [objectName])
        throw fromDb(stored.error)
      }
      const previous = (stored.data as { previous_object: string | null }).previous_object
      if (previous && previous !== objectName) await removeObjects(BACKGROUND_BUCKET, [previous])
      return c.json({
        entry_id: entry.id,
        background_url: url,
        model: image.usage.model,
        quality: image.usage.quality,
        cost_usd: usage ? Number(usage.cost_usd) : null,
      })
    },
  )
  .openapi(
    endpoint({
      method: 'get',
      path: '/ai/usage',
      tag,
      auth: 'bearer',
      query: UsageQuery,
      response: MonthlyUsage,
      errors: [403],
      summary: 'AI token usage and cost of a calendar month (UTC)',
      description:
        "The caller's own month, or (super admins) any user's: total tokens, total cost in USD, and the " +
        'breakdown by category (Tone, Images, Packs). Read from the monthly aggregate (SQL monthly_token_usage).',
    }),
    async (c) => {
      const q = c.req.valid('query')
      const now = new Date()
      const summary = unwrap(
        await c.var.db.rpc('monthly_token_usage', {
          user_id: q.user_id ?? c.var.caller.id,
          year: q.year ?? now.getUTCFullYear(),
          month: q.month ?? now.getUTCMonth() + 1,
        }),
      )
      return c.json(summary as z.infer<typeof MonthlyUsage>)
    },
  )
