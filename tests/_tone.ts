// Tone analysis through the queue (supabase/schemas/journal/tone_queue.sql): waiting until the
// worker has dealt with an entry's queued text.
import { sql } from './_helpers.ts'

/** Waits until the entry's text is no longer queued (analysed, failed or dropped); returns its
 *  stored mood and the ms waited. */
export async function toneSettled(entryId: string, timeoutMs = 20_000) {
  const started = Date.now()
  while (Date.now() - started < timeoutMs) {
    const [row] = await sql`select e.mood, e.mood_detected,
                                   exists (select 1 from private.tone_analysis_queue q where q.entry_id = e.id) as queued
                              from public.journal_entries e where e.id = ${entryId}`
    if (!row) throw new Error(`entry ${entryId} is gone`)
    if (!row.queued) return { mood: row.mood as string | null, moodDetected: row.mood_detected as boolean, ms: Date.now() - started }
    await new Promise((r) => setTimeout(r, 25))
  }
  throw new Error(`the tone analysis of ${entryId} did not finish within ${timeoutMs} ms`)
}
