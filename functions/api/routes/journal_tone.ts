// The tone analysis worker's endpoint (docs/ai.md "Tone analysis on every write path"): requested
// by the database when a write queues an entry, and by pg_cron every minute.
import { z } from '@hono/zod-openapi'
import { runToneWorker } from '../../_shared/tone_queue.ts'
import { scheduledRunFields } from '../../_shared/validation.ts'
import { endpoint, routeModule } from '../openapi.ts'

const RunRequest = z.object({
  ...scheduledRunFields,
  requested_at: z.string().max(100).optional().describe('When a write asked for this run'),
}).strict()

const RunReply = z.object({
  analysed: z.number().int().describe('Entries analysed (failures included)'),
  moods_set: z.number().int(),
  failed: z.number().int(),
  skipped_not_configured: z.number().int().describe('Queued entries dropped because AI_API_KEY is unset'),
}).openapi('ToneAnalysisRun')

export const journalToneRoutes = routeModule()
  .openapi(
    endpoint({
      method: 'post',
      path: '/journal/cron/analyze-tone',
      tag: 'Journal',
      auth: { cron: 'chat' },
      body: RunRequest,
      summary: 'Analyse the queued entries (requested on write; scheduled * * * * * as the safety net)',
      description: 'Runs until the queue is empty (at most about 50 s); failures are logged, never retried.',
      response: RunReply,
    }),
    async (c) => c.json(await runToneWorker()),
  )
