// Scheduled AI jobs that call the provider once per user (note analysis, daily assistant
// drops). Each invocation claims a bounded chunk of today's due users in SQL
// (public.claim_ai_job_chunk: `for update skip locked`, a 10-minute lease), works through it in
// batches (SPEC: 5 users, 1 s between batches), and reports what remains; pg_cron calls again
// every minute while users remain, and several invocations may run side by side.
//   AI_JOB_CHUNK_SIZE        users per invocation (default 50, at most 500)
//   AI_JOB_BATCH_SIZE        users processed at once (default 5)
//   AI_JOB_BATCH_PAUSE_MS    pause between batches (default 1000)
// A chunk of 50 is 10 batches: about 10 x (one model call + 1 s), at worst 10 x 11 s = 110 s,
// inside an edge function's 150 s limit.
import { AiError } from './ai.ts'
import { recordUsageQuietly, type UsageType } from './ai_usage.ts'
import { serviceDb } from './db.ts'
import { optionalEnv } from './env.ts'
import { unwrap } from './errors.ts'

export type AiJob = 'analyze-notes' | 'generate-daily-drops'

function setting(name: string, fallback: number, min: number, max: number) {
  const n = Number(optionalEnv(name) ?? fallback)
  return Number.isInteger(n) && n >= min ? Math.min(n, max) : fallback
}

export function jobSettings() {
  return {
    chunkSize: setting('AI_JOB_CHUNK_SIZE', 50, 1, 500),
    batchSize: setting('AI_JOB_BATCH_SIZE', 5, 1, 100),
    pauseMs: setting('AI_JOB_BATCH_PAUSE_MS', 1000, 0, 60_000),
  }
}

/** Claims up to `chunkSize` due users of today's run; `remaining` counts them too. */
export async function claimChunk<U>(
  job: AiJob,
  chunkSize: number,
): Promise<{ users: U[]; remaining: number }> {
  const { users, remaining } = unwrap(
    await serviceDb().rpc('claim_ai_job_chunk', { job_name: job, chunk_size: chunkSize }),
  )
  return { users: users as U[], remaining } // the job's SQL builds its users' shape, which U names
}

/** Records a user's failure (the user is not retried today). Never throws. */
export async function failItem(job: AiJob, userId: string, error: string) {
  const { error: e } = await serviceDb().rpc('fail_ai_job_item', { job_name: job, user_id: userId, error })
  if (e) console.error(`${job}: could not record the failure of ${userId}`, e)
}

/** Runs `work` over the items, `batchSize` at a time, pausing between batches. */
export async function inBatches<T>(
  items: T[],
  batchSize: number,
  pauseMs: number,
  work: (item: T) => Promise<void>,
) {
  for (let i = 0; i < items.length; i += batchSize) {
    if (i > 0 && pauseMs > 0) await new Promise((r) => setTimeout(r, pauseMs))
    await Promise.all(items.slice(i, i + batchSize).map(work))
  }
}

/** Logs a run's start, outcome and remainder (SPEC Events 4): console and private.job_runs. */
export async function logRun(
  job: string,
  startedAt: Date,
  counts: { succeeded: number; failed: number; remaining: number },
  details: Record<string, unknown>,
) {
  console.log(
    `${job}: done in ${Date.now() - startedAt.getTime()} ms`,
    JSON.stringify({ ...counts, ...details }),
  )
  const { error } = await serviceDb().rpc('record_job_run', {
    job,
    started_at: startedAt.toISOString(),
    succeeded: counts.succeeded,
    failed: counts.failed,
    remaining: counts.remaining,
    details,
  })
  if (error) console.error(`${job}: could not log the run`, error)
}

export const errorText = (e: unknown) => (e instanceof Error ? e.message : String(e)).slice(0, 300)

/** What one invocation of a job came to. */
export interface ChunkResults {
  total: number
  succeeded: number
  skipped: number
  failed: number
  errors: string[]
  remaining: number
}

/**
 * One invocation of a per-user job: claims a chunk of due users, runs `work` on each in
 * batches, and logs the run. `work` answers 'done', or 'skipped' when there was nothing to do
 * for the user. A user whose work throws is failed: listed in `errors`, recorded so they are
 * not retried today, and the provider usage a failed call was billed for is recorded too.
 */
export async function runChunk<U extends { user_id: string }>(
  job: AiJob,
  usageType: UsageType,
  work: (user: U) => Promise<'done' | 'skipped'>,
): Promise<ChunkResults> {
  const startedAt = new Date()
  const { chunkSize, batchSize, pauseMs } = jobSettings()
  console.log(`${job}: start (chunk ${chunkSize}, batches of ${batchSize}, ${pauseMs} ms apart)`)
  const results: ChunkResults = { total: 0, succeeded: 0, skipped: 0, failed: 0, errors: [], remaining: 0 }
  const { users, remaining } = await claimChunk<U>(job, chunkSize)
  results.total = users.length
  await inBatches(users, batchSize, pauseMs, async (u) => {
    try {
      if ((await work(u)) === 'done') results.succeeded++
      else results.skipped++
    } catch (e) {
      if (e instanceof AiError && e.usage) await recordUsageQuietly(u.user_id, usageType, e.usage)
      results.failed++
      results.errors.push(`${u.user_id}: ${errorText(e)}`)
      await failItem(job, u.user_id, errorText(e))
    }
  })
  results.remaining = Math.max(0, remaining - users.length)
  await logRun(job, startedAt, results, { total: results.total, skipped: results.skipped })
  return results
}
