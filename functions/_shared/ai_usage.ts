// Recording billed AI calls and the per-user daily caps, with their claims and give-backs (SQL:
// supabase/schemas/ai_usage.sql).
// The cost is computed in SQL from public.ai_prices; this only passes what the provider said.
import type { ImageUsage, TextUsage } from './ai.ts'
import { type Db, serviceDb } from './db.ts'
import { optionalEnv } from './env.ts'
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
    }).select('id, cost_usd::text'),
  )
  return row
}

/** Like recordUsage, but never throws: a failed write is logged (the call was still billed). */
export async function recordUsageQuietly(
  userId: string,
  type: UsageType,
  usage: TextUsage | ImageUsage,
  refs: UsageRefs = {},
) {
  try {
    return await recordUsage(userId, type, usage, refs)
  } catch (e) {
    console.error(`could not record ${type} usage for ${userId}`, e)
    return null
  }
}

/**
 * The daily cap the api applies to a usage type: AI_DAILY_CAP_<TYPE> (e.g.
 * AI_DAILY_CAP_TONE_PACK_IMAGE) when set to a whole number, 0 meaning no cap; otherwise null,
 * which leaves the default of private.ai_usage_types (SQL) in force.
 */
export function dailyCapOverride(type: UsageType): number | null {
  const name = `AI_DAILY_CAP_${type.toUpperCase()}`
  const raw = optionalEnv(name)
  if (raw === undefined) return null
  const n = Number(raw)
  if (Number.isInteger(n) && n >= 0) return n
  console.error(`${name}=${raw} is not a whole number: the default cap applies`)
  return null
}

/** Places claimed under a user's daily cap: give back the ones whose call failed. */
export interface DailyClaim {
  type: UsageType
  userId: string
  day: string
  granted: number
  counted: boolean
}

/**
 * Claims up to `wanted` calls (images) of the caller's daily cap at once (db: the caller's
 * client), atomically in SQL; `granted` says how many may go to the provider.
 */
export async function claimDailyCalls(
  db: Db,
  userId: string,
  type: UsageType,
  wanted: number,
): Promise<DailyClaim> {
  const claimed = unwrap(
    await db.rpc('claim_ai_calls', { usage_type: type, wanted, daily_cap: dailyCapOverride(type) }),
  )
  return { type, userId, ...claimed }
}

/** Counts one call against the caller's daily cap; 429 once reached. */
export async function claimDailyCall(
  db: Db,
  userId: string,
  type: UsageType,
  what: string,
): Promise<DailyClaim> {
  const claim = await claimDailyCalls(db, userId, type, 1)
  if (!claim.granted) throw tooManyRequests(`Daily limit for ${what} reached; try again tomorrow (UTC)`)
  return claim
}

/**
 * Gives `calls` claimed places back (service role), for calls the provider did not bill. A
 * billed call keeps its place whatever fails after it (SQL never goes below the calls recorded
 * in ai_usage that day). Never throws (logged).
 */
export async function releaseDailyCalls(claim: DailyClaim, calls = 1) {
  if (!claim.counted || calls < 1) return
  const { error } = await serviceDb().rpc('release_ai_calls', {
    user_id: claim.userId,
    usage_type: claim.type,
    day: claim.day,
    calls,
  })
  if (error) console.error(`could not give back ${calls} ${claim.type} call(s) of ${claim.userId}`, error)
}
