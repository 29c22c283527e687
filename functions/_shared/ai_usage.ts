// Recording billed AI calls and the per-user daily caps (SQL: 20261122010000_ai_usage.sql).
// The cost is computed in SQL from public.ai_prices; this only passes what the provider said.
import type { ImageUsage, TextUsage } from './ai.ts'
import { type Db, serviceDb } from './db.ts'
import { tooManyRequests, unwrap } from './errors.ts'

/** The usage types SQL knows (private.ai_usage_types); other areas add theirs there. */
export type UsageType = 'tone_analysis' | 'entry_background' | 'tone_pack_image' | (string & {})

export interface UsageRefs {
  entryId?: string | null
  packId?: string | null
}

/**
 * Records one billed call for a user (service role: public.record_ai_usage) and returns its
 * cost in USD as Postgres computed it (a decimal string, exact). Throws when the database
 * refuses; callers on a path that must not fail catch and log.
 */
export async function recordUsage(
  userId: string,
  type: UsageType,
  usage: TextUsage | ImageUsage,
  refs: UsageRefs = {},
): Promise<{ id: number; cost_usd: string }> {
  const image = 'imageCount' in usage ? usage : undefined
  const row = unwrap(
    await serviceDb().rpc('record_ai_usage', {
      user_id: userId,
      usage_type: type,
      model: usage.model,
      input_tokens: usage.inputTokens,
      output_tokens: usage.outputTokens,
      image_count: image?.imageCount ?? 0,
      image_quality: image ? image.quality : null,
      entry_id: refs.entryId ?? null,
      pack_id: refs.packId ?? null,
    }).select('id, cost_usd::text').single(),
  ) as { id: number; cost_usd: string }
  return row
}

/** Like recordUsage, but never throws: a failed write is logged (the call was still billed). */
export async function recordUsageQuietly(userId: string, type: UsageType, usage: TextUsage | ImageUsage, refs: UsageRefs = {}) {
  try {
    return await recordUsage(userId, type, usage, refs)
  } catch (e) {
    console.error(`could not record ${type} usage for ${userId}`, e)
    return null
  }
}

/** Counts one call against the caller's daily cap (db: the caller's client); 429 once reached. */
export async function claimDailyCall(db: Db, type: UsageType, what: string) {
  const allowed = unwrap(await db.rpc('claim_ai_call', { usage_type: type })) as boolean
  if (!allowed) throw tooManyRequests(`Daily limit for ${what} reached; try again tomorrow (UTC)`)
}
