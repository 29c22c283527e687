// The tone analysis worker (POST /api/journal/cron/analyze-tone): analyses the entries the
// database queued (supabase/schemas/journal/tone_queue.sql) and stores their moods. Requested by
// the first write that queues work while no worker runs, and by pg_cron every minute.
//
// One run keeps up to TONE_WORKER_CONCURRENCY analyses in flight, claiming more every
// TONE_WORKER_POLL_MS as places free up, so an entry written while a run is busy is picked up
// within a poll, not after the run. It stops when nothing is queued, or after
// TONE_WORKER_BUDGET_MS (an edge function's wall-clock limit is 150 s), handing what remains
// to a fresh run; the database keeps it going (polling) until min_request_gap after the last
// request, so writes meanwhile need no request of their own. Failures are logged and the entry
// keeps its mood (SPEC rule 3); only a killed run's claims are retried (after 60 s). A run that
// claimed nothing is logged to the console only, not in job_runs: writes (and pg_cron's
// minute) start runs, and a log row each would grow with them.
import { AiError, type TextUsage } from './ai.ts'
import { dailyCapOverride, releaseDailyCalls } from './ai_usage.ts'
import { logRun } from './ai_jobs.ts'
import { serviceDb } from './db.ts'
import { optionalEnv } from './env.ts'
import { unwrap } from './errors.ts'
import { analyzeTone, CONFIDENCE_THRESHOLD, toneAnalysisConfigured } from './tone.ts'

export const TONE_JOB = 'journal-tone-analysis'

interface QueuedEntry {
  entry_id: string
  version: number
  user_id: string
  title: string
  content: string
  content_sha256: string
  /** The UTC day the call was counted on; null when no cap applied. */
  cap_day: string | null
}

export interface ToneRunResults {
  analysed: number
  moods_set: number
  failed: number
  skipped_not_configured: number
}

function setting(name: string, fallback: number, min: number, max: number) {
  const n = Number(optionalEnv(name) ?? fallback)
  return Number.isInteger(n) && n >= min ? Math.min(n, max) : fallback
}

function workerSettings() {
  return {
    concurrency: setting('TONE_WORKER_CONCURRENCY', 20, 1, 100),
    pollMs: setting('TONE_WORKER_POLL_MS', 100, 10, 5000),
    budgetMs: setting('TONE_WORKER_BUDGET_MS', 50_000, 1000, 120_000),
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Analyses one claimed entry and stores the outcome. Never throws. */
async function analyseOne(item: QueuedEntry, results: ToneRunResults) {
  let mood: string | null = null
  let usage: TextUsage | undefined
  try {
    const analysis = await analyzeTone({ title: item.title, content: item.content }, { retries: 1 })
    usage = analysis.usage
    if (analysis.result.confidence > CONFIDENCE_THRESHOLD) mood = analysis.result.primaryTone
  } catch (e) {
    results.failed++
    usage = e instanceof AiError ? e.usage : undefined
    console.error(`tone analysis of ${item.entry_id} failed; it keeps its mood:`, (e as Error).message)
    if (!usage && item.cap_day) {
      // Not billed: the place under the cap goes back.
      await releaseDailyCalls({
        type: 'tone_analysis',
        userId: item.user_id,
        day: item.cap_day,
        granted: 1,
        counted: true,
      })
    }
  }
  const { data, error } = await serviceDb().rpc('finish_tone_analysis', {
    entry_id: item.entry_id,
    version: item.version,
    user_id: item.user_id,
    detected_mood: mood,
    content_sha256: item.content_sha256,
    model: usage?.model ?? null,
    input_tokens: usage?.inputTokens ?? 0,
    output_tokens: usage?.outputTokens ?? 0,
  })
  if (error) console.error(`could not store the tone analysis of ${item.entry_id}`, error)
  else {
    results.analysed++
    if ((data as unknown as { mood_applied: boolean }).mood_applied) results.moods_set++
  }
}

/** One run of the worker. */
export async function runToneWorker(): Promise<ToneRunResults> {
  const startedAt = new Date()
  const results: ToneRunResults = { analysed: 0, moods_set: 0, failed: 0, skipped_not_configured: 0 }
  const db = serviceDb()
  if (!toneAnalysisConfigured()) {
    // SPEC: nothing without AI_API_KEY. The queue is dropped and writes stop queueing until a
    // run with a key (pg_cron's, within a minute) turns analysis back on.
    results.skipped_not_configured = unwrap(await db.rpc('disable_tone_analysis', {}))
    if (results.skipped_not_configured > 0) {
      await logRun(TONE_JOB, startedAt, { succeeded: 0, failed: 0, remaining: 0 }, { ...results })
    } else console.log(`${TONE_JOB}: AI_API_KEY is unset; nothing was queued`)
    return results
  }
  const { concurrency, pollMs, budgetMs } = workerSettings()
  const inFlight = new Set<Promise<void>>()
  const dailyCap = dailyCapOverride('tone_analysis')
  let claimFailures = 0
  while (true) {
    const timeLeft = Date.now() - startedAt.getTime() < budgetMs
    let claimed: QueuedEntry[] = []
    if (timeLeft && inFlight.size < concurrency) {
      const reply = await db.rpc('claim_tone_analyses', { max_items: concurrency - inFlight.size, daily_cap: dailyCap })
      if (reply.error) {
        console.error('tone analysis: could not claim', reply.error)
        claimFailures++
        await sleep(pollMs)
      } else claimed = reply.data as unknown as QueuedEntry[] // the SQL builds this shape
      for (const item of claimed) {
        const work: Promise<void> = analyseOne(item, results).finally(() => inFlight.delete(work))
        inFlight.add(work)
      }
    }
    if (inFlight.size === 0 && claimed.length === 0) {
      // Nothing claimable: end the run, unless work arrived while the mark was being cleared.
      const more = await db.rpc('release_tone_worker', { hand_over: !timeLeft })
      if (more.error) console.error('tone analysis: could not end the run', more.error)
      if (!more.data || !timeLeft) break
      await sleep(pollMs) // staying for the request gap, or a write just queued: claim again
      continue
    }
    await Promise.race([sleep(pollMs), ...inFlight])
  }
  if (results.analysed === 0 && results.failed === 0 && claimFailures === 0) {
    console.log(`${TONE_JOB}: nothing to analyse (${Date.now() - startedAt.getTime()} ms)`)
    return results
  }
  await logRun(TONE_JOB, startedAt, { succeeded: results.analysed - results.failed, failed: results.failed, remaining: 0 }, {
    ...results,
    claim_failures: claimFailures,
  })
  return results
}
