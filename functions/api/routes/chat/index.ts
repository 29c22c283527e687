// Note analysis (SPEC "Note analysis", scheduled analyze-notes): the nightly job and the
// latest analysis for its user (supplied to the assistant when the user chats).
import { z } from '@hono/zod-openapi'
import { unwrap } from '../../../_shared/errors.ts'
import { analyzeNotes } from './note_analysis.ts'
import { endpoint, orNull, routeModule } from '../../openapi.ts'

const tag = 'Chat'

const Analysis = z.object({
  id: z.string(),
  user_id: z.string(),
  analysis_date: z.string(),
  summary: z.string(),
  mood_trends: z.record(z.string(), z.unknown()),
  topics: z.array(z.string()),
  patterns: z.array(z.string()),
  recommendations: z.array(z.string()),
  insights: z.object({
    gratitude: z.array(z.string()),
    challenges: z.array(z.string()),
    goals: z.array(z.string()),
    achievements: z.array(z.string()),
  }).partial(),
  entry_count: z.number().int(),
  created_at: z.string(),
}).openapi('NoteAnalysis')

const JobReply = z.object({
  success: z.boolean(),
  message: z.string(),
  results: z.object({
    total: z.number().int(),
    successful: z.number().int(),
    failed: z.number().int(),
    errors: z.array(z.string()),
    remaining: z.number().int().openapi({
      description: 'Due users left for later invocations (pg_cron calls again while > 0)',
    }),
  }),
}).openapi('AnalyzeNotesResult')

export const chatRoutes = routeModule()
  .openapi(
    endpoint({
      method: 'post',
      path: '/chat/cron/analyze-notes',
      tag,
      auth: { cron: 'chat' },
      summary:
        'Analyse recent notes of a chunk of due users (scheduled 0 2 * * *, repeated while users remain)',
      description:
        'Users with read_notes_enabled and entries in the last 7 days (at most 50 read), one analysis per user per UTC day. ' +
        'Per-user failures are listed in results.errors; the run itself succeeds.',
      response: JobReply,
    }),
    async (c) => {
      const results = await analyzeNotes()
      const message =
        `Analysed ${results.successful} of ${results.total} users (${results.failed} failed, ${results.remaining} remaining)`
      return c.json({ success: true, message, results })
    },
  )
  .openapi(
    endpoint({
      method: 'get',
      path: '/chat/analysis/latest',
      tag,
      auth: 'bearer',
      summary: "The caller's latest note analysis (null before the first)",
      response: z.object({ analysis: orNull(Analysis) }),
    }),
    async (c) => {
      const analysis = unwrap(
        await c.var.db.from('note_analyses').select('*').eq('user_id', c.var.caller.id)
          .order('analysis_date', { ascending: false }).limit(1).maybeSingle(),
      )
      return c.json({ analysis })
    },
  )
