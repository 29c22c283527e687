// Labs (SPEC "Experiment-community admin and related", "Super-admin managed records", Other
// admin rules): submissions and their review, classroom accounts, experiment templates, clones
// and replications, the optimizer, competitions, step prompts, sponsor outreach, kit waitlist.
// Every rule (who sees what, state moves, caps) is in SQL (migration *_labs.sql); these routes
// validate, call it with the caller's token and shape the reply.
import { z } from '@hono/zod-openapi'
import { userDb } from '../../_shared/db.ts'
import { fromResend, resendClient, sendEmail } from '../../_shared/email.ts'
import { optionalEnv, requiredEnv } from '../../_shared/env.ts'
import { badRequest, unavailable, unwrap } from '../../_shared/errors.ts'
import { CALCULATOR_NAMES } from '../../_shared/optimizer/calculators.ts'
import { MAX_TOP_N, optimize } from '../../_shared/optimizer/sweep.ts'
import { decodeCursor, encodeCursor, newestFirstPage, pageQuery } from '../../_shared/pagination.ts'
import { idParams, isoDate } from '../../_shared/validation.ts'
import { endpoint, NextCursor, routeModule } from '../openapi.ts'

const tag = 'Labs'
const Row = z.record(z.string(), z.unknown())
type Row = Record<string, unknown>
/** The row of a single-row reply (these RPCs are not in types/database.ts yet). */
// deno-lint-ignore no-explicit-any
const rowOf = (reply: { data: any; error: any }) => unwrap(reply) as unknown as Row
const email = z.string().trim().toLowerCase().max(320).email()
const text = (max: number) => z.string().trim().min(1).max(max)
/** A labs number: finite, magnitude at most 1e15 and, unless 0, at least 1e-300 (the database holds the same bounds). */
const MAX_MAGNITUDE = 1e15
const MIN_MAGNITUDE = 1e-300
const plausibleNumber = () =>
  z.number().min(-MAX_MAGNITUDE, `must be at least -${MAX_MAGNITUDE}`).max(MAX_MAGNITUDE, `must be at most ${MAX_MAGNITUDE}`)
    .refine((v) => v === 0 || Math.abs(v) >= MIN_MAGNITUDE, `must be 0 or of magnitude at least ${MIN_MAGNITUDE}`)

// ---- Submissions -----------------------------------------------------------------------

const KINDS = {
  sponsors: { kind: 'sponsor', table: 'labs_sponsors', publicColumns: 'id, name, tier, applied_at' },
  opportunities: { kind: 'opportunity', table: 'labs_opportunities', publicColumns: 'id, kind, title, description, url, applied_at' },
  videos: { kind: 'video', table: 'labs_dream_videos', publicColumns: 'id, title, video_url, is_featured, applied_at' },
} as const
type Plural = keyof typeof KINDS

const NewSponsor = z.object({ name: text(200), tier: text(50), contact_email: email, contact_name: text(200) }).strict()
const NewOpportunity = z.object({
  kind: z.enum(['internship', 'scholarship', 'fellowship', 'mentorship']),
  title: text(200),
  description: z.string().max(4000).default(''),
  url: z.string().max(2048).regex(/^https?:\/\//i, 'must start with http:// or https://').optional(),
  contact_email: email,
  contact_name: text(200),
}).strict()
const NewVideo = z.object({ title: text(200), video_url: z.string().max(2048).regex(/^https:\/\//i, 'must be an https:// URL') }).strict()
const Decline = z.object({ reason: text(2000) }).strict()

/** A public page (anonymous PostgREST: RLS shows approved records only), newest first. */
async function publicPage(plural: Plural, q: { limit: number; before?: string; kind?: string }) {
  const k = KINDS[plural]
  const cursor = decodeCursor(q.before)
  let query = userDb(requiredEnv('SUPABASE_ANON_KEY')).from(k.table).select(k.publicColumns as string).eq('status', 'approved')
  if (q.kind) query = query.eq('kind', q.kind)
  if (cursor) {
    const t = JSON.stringify(cursor.createdAt)
    query = query.or(`applied_at.lt.${t},and(applied_at.eq.${t},id.lt.${cursor.id})`)
  }
  if (plural === 'videos') query = query.order('is_featured', { ascending: false })
  const rows = unwrap(await query.order('applied_at', { ascending: false }).order('id', { ascending: false }).limit(q.limit + 1)) as
    unknown as Array<{ id: string; applied_at: string }>
  const items = rows.slice(0, q.limit)
  const last = items[items.length - 1]
  return { items, next_cursor: rows.length > q.limit && last ? encodeCursor({ created_at: last.applied_at, id: last.id }) : null }
}

function submissionRoutes(plural: Plural, body: z.ZodType, rpc: (b: any) => [string, Record<string, unknown>], label: string) {
  const k = KINDS[plural]
  return routeModule()
    .openapi(
      endpoint({
        method: 'post', path: `/labs/${plural}`, tag, auth: 'bearer', body, status: 201, errors: plural === 'videos' ? [403] : [],
        summary: `Submit ${label} for review (pending until a super admin approves it)`,
        response: z.object({ [k.kind]: Row }),
      }),
      async (c) => {
        const [fn, args] = rpc(c.req.valid('json'))
        const row = rowOf(await c.var.db.rpc(fn, args).single())
        return c.json({ [k.kind]: row }, 201)
      },
    )
    .openapi(
      endpoint({
        method: 'get', path: `/labs/${plural}`, tag, auth: 'none',
        query: z.object({ ...pageQuery, ...(plural === 'opportunities' ? { kind: NewOpportunity.shape.kind.optional() } : {}) }).strict(),
        summary: `Approved ${plural}, newest first${plural === 'videos' ? ' (featured first)' : ''}; never contact fields or reasons`,
        response: z.object({ [plural]: z.array(Row), next_cursor: NextCursor }),
      }),
      async (c) => {
        const { items, next_cursor } = await publicPage(plural, c.req.valid('query') as { limit: number; before?: string; kind?: string })
        return c.json({ [plural]: items, next_cursor })
      },
    )
    .openapi(
      endpoint({
        method: 'get', path: `/labs/admin/${plural}/pending`, tag, auth: 'superAdmin', query: z.object(pageQuery).strict(),
        summary: `Pending ${plural} with their contact fields (super admin)`,
        response: z.object({ [plural]: z.array(Row), next_cursor: NextCursor }),
      }),
      async (c) => {
        const q = c.req.valid('query')
        const cursor = decodeCursor(q.before)
        const rows = unwrap(
          await c.var.db.rpc('labs_pending', {
            kind: k.kind, page_size: q.limit + 1, before_time: cursor?.createdAt ?? null, before_id: cursor?.id ?? null,
          }),
        ) as Array<{ id: string; record: Record<string, unknown>; created_at: string }>
        const items = rows.slice(0, q.limit)
        const next = rows.length > q.limit ? encodeCursor(items[items.length - 1]) : null
        return c.json({ [plural]: items.map((r) => r.record), next_cursor: next })
      },
    )
    .openapi(
      endpoint({
        method: 'post', path: `/labs/admin/${plural}/{id}/approve`, tag, auth: 'superAdmin', params: idParams('id'), errors: [409],
        summary: `Approve a pending ${k.kind} (super admin); it appears on the public listing`,
        response: z.object({ id: z.string(), status: z.literal('approved'), reviewed_at: z.string() }),
      }),
      async (c) => {
        const row = rowOf(await c.var.db.rpc('labs_review', { kind: k.kind, record_id: c.req.valid('param').id, decision: 'approve' }).single())
        return c.json(row as { id: string; status: 'approved'; reviewed_at: string })
      },
    )
    .openapi(
      endpoint({
        method: 'post', path: `/labs/admin/${plural}/{id}/decline`, tag, auth: 'superAdmin', params: idParams('id'), body: Decline,
        errors: [409],
        summary: `Decline a pending ${k.kind} with a reason (super admin); the reason is stored privately, the applicant is not notified`,
        response: z.object({ id: z.string(), status: z.literal('declined'), reviewed_at: z.string() }),
      }),
      async (c) => {
        const row = rowOf(
          await c.var.db.rpc('labs_review', {
            kind: k.kind, record_id: c.req.valid('param').id, decision: 'decline', reason: c.req.valid('json').reason,
          }).single(),
        )
        return c.json(row as { id: string; status: 'declined'; reviewed_at: string })
      },
    )
}

// ---- Experiments -----------------------------------------------------------------------

const calculator = z.enum(CALCULATOR_NAMES)
const NewTemplate = z.object({
  title: text(200),
  calculator,
  inputs: z.record(z.string().max(100), plausibleNumber()).default({}),
  is_public: z.boolean().default(false),
}).strict()
const GradeBand = z.enum(['K-5', '6-8', '9-12'])
const GoldenSpec = z.object({
  calculator,
  optimal_inputs: z.record(z.string().max(100), plausibleNumber()),
  calculator_outputs: z.object({
    outputs: z.array(z.object({ label: text(200), value: plausibleNumber(), unit: z.string().max(50) }).strict()).min(1).max(50),
  }).strict(),
}).strict()
const Convergence = z.object({
  replications: z.number().int(),
  independent_confirmations: z.number().int(),
  mean: z.number().nullable(),
  stddev: z.number().nullable(),
  anomalies: z.number().int(),
  robust: z.boolean(),
}).openapi('LabsConvergence', { description: 'Robust after 50 independent confirmations within 5 %; anomalies are > 2 standard deviations from the mean.' })

// ---- Optimizer -------------------------------------------------------------------------

const Range = z.object({
  min: plausibleNumber(),
  max: plausibleNumber(),
  steps: z.number().int().min(1).max(50_000),
  scale: z.enum(['linear', 'log']).optional(),
}).strict()
const OptimizeBody = z.object({
  calculator: z.string().max(50),
  top_n: z.number().int().min(1).max(MAX_TOP_N),
  ranges: z.record(z.string().max(100), Range).optional(),
}).strict()

// ---- Digest e-mail ---------------------------------------------------------------------

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`)
function digestEmail(d: { sponsor_name: string; contact_name: string; week_start: string; messages: Array<{ body: string; sent_at: string }> }) {
  const subject = `${d.messages.length} message${d.messages.length === 1 ? '' : 's'} for ${d.sponsor_name} this week`
  const text = `Hello ${d.contact_name},\n\nMessages sent to ${d.sponsor_name} in the week before ${d.week_start}:\n\n` +
    d.messages.map((m) => `— ${m.sent_at}\n${m.body}`).join('\n\n')
  const html = `<p>Hello ${escapeHtml(d.contact_name)},</p><p>Messages sent to ${escapeHtml(d.sponsor_name)} in the week before ${d.week_start}:</p>` +
    d.messages.map((m) => `<blockquote><small>${escapeHtml(m.sent_at)}</small><br>${escapeHtml(m.body)}</blockquote>`).join('')
  return { subject, text, html }
}

/** A competition weight: an integer from 0 to 1000. */
const weight = () => z.number().int().min(0).max(1000)

const JobResults = z.object({
  total: z.number().int(),
  prompted: z.number().int(),
  skipped: z.number().int(),
  failed: z.number().int(),
  errors: z.array(z.string()),
  remaining: z.number().int(),
})

export const labsRoutes = routeModule()
  .route('/', submissionRoutes('sponsors', NewSponsor, (b) => ['labs_submit_sponsor', b], 'a sponsor application'))
  .route('/', submissionRoutes('opportunities', NewOpportunity, (b) => ['labs_submit_opportunity', { ...b, url: b.url ?? null }], 'an opportunity'))
  .route('/', submissionRoutes('videos', NewVideo, (b) => ['labs_submit_dream_video', b], 'a dream video (not classroom accounts)'))
  .openapi(
    endpoint({
      method: 'get', path: '/labs/submissions', tag, auth: 'bearer',
      summary: 'The caller\'s own submissions and their status, newest first, 100 of each (never a decline reason)',
      response: z.object({ sponsors: z.array(Row), opportunities: z.array(Row), videos: z.array(Row) }),
    }),
    async (c) => {
      // Who submitted what is kept private (not a column of the public tables); the RPC lists the caller's own.
      const mine = unwrap(await c.var.db.rpc('labs_my_submissions')) as unknown as { sponsors: Row[]; opportunities: Row[]; videos: Row[] }
      return c.json(mine)
    },
  )
  .openapi(
    endpoint({
      method: 'post', path: '/labs/admin/videos/{id}/feature', tag, auth: 'superAdmin', params: idParams('id'), errors: [409],
      body: z.object({ is_featured: z.boolean() }).strict(),
      summary: 'Feature or unfeature an approved dream video (super admin); featured ones lead the public listing',
      response: z.object({ video: Row }),
    }),
    async (c) => {
      const row = rowOf(await c.var.db.rpc('labs_feature_video', { video_id: c.req.valid('param').id, is_featured: c.req.valid('json').is_featured }).single())
      return c.json({ video: row })
    },
  )
  .openapi(
    endpoint({
      method: 'put', path: '/labs/admin/users/{id}/account-type', tag, auth: 'superAdmin', params: idParams('id'),
      body: z.object({ account_type: z.enum(['standard', 'classroom']) }).strict(),
      summary: 'Set a user\'s account type: standard or classroom (super admin)',
      response: z.object({ user_id: z.string(), account_type: z.enum(['standard', 'classroom']) }),
    }),
    async (c) => {
      const id = c.req.valid('param').id
      const type = unwrap(await c.var.db.rpc('labs_set_account_type', { target_user_id: id, account_type: c.req.valid('json').account_type }))
      return c.json({ user_id: id, account_type: type as 'standard' | 'classroom' })
    },
  )
  // ---- Templates, clones, replications
  .openapi(
    endpoint({
      method: 'get', path: '/labs/templates', tag, auth: 'bearer', query: z.object(pageQuery).strict(),
      summary: 'Public templates (classroom accounts: classroom-safe ones only) and the caller\'s own, with convergence',
      response: z.object({ templates: z.array(Row), next_cursor: NextCursor }),
    }),
    async (c) => {
      const q = c.req.valid('query')
      const cursor = decodeCursor(q.before)
      const rows = unwrap(
        await c.var.db.rpc('labs_template_list', { page_size: q.limit + 1, before_time: cursor?.createdAt ?? null, before_id: cursor?.id ?? null }),
      ) as Array<{ id: string; created_at: string }>
      const items = rows.slice(0, q.limit)
      return c.json({ templates: items, next_cursor: rows.length > q.limit ? encodeCursor(items[items.length - 1]) : null })
    },
  )
  .openapi(
    endpoint({
      method: 'post', path: '/labs/templates', tag, auth: 'bearer', body: NewTemplate, status: 201,
      summary: 'Create a template (adult_only; only super admins change its safety level)',
      response: z.object({ template: Row }),
    }),
    async (c) => {
      const row = unwrap(await c.var.db.from('labs_experiments').insert({ ...c.req.valid('json'), is_template: true }).select().single())
      return c.json({ template: row }, 201)
    },
  )
  .openapi(
    endpoint({
      method: 'get', path: '/labs/templates/{id}', tag, auth: 'bearer', params: idParams('id'),
      summary: 'A template with its convergence and replications (each flagged when an anomaly)',
      response: z.object({ template: Row.and(z.object({ convergence: Convergence })) }),
    }),
    async (c) => {
      const t = unwrap(await c.var.db.rpc('labs_template_details', { template_id: c.req.valid('param').id }))
      return c.json({ template: t as Record<string, unknown> & { convergence: z.infer<typeof Convergence> } })
    },
  )
  .openapi(
    endpoint({
      method: 'post', path: '/labs/templates/{id}/clone', tag, auth: 'bearer', params: idParams('id'), status: 201, errors: [403],
      summary: 'Clone a template into one\'s own experiment (classroom accounts: classroom-safe templates only)',
      response: z.object({ clone: Row }),
    }),
    async (c) => {
      const row = rowOf(await c.var.db.rpc('labs_clone_template', { template_id: c.req.valid('param').id }).single())
      return c.json({ clone: row }, 201)
    },
  )
  .openapi(
    endpoint({
      method: 'post', path: '/labs/clones/{id}/replications', tag, auth: 'bearer', params: idParams('id'), status: 201,
      body: z.object({ measured_value: plausibleNumber() }).strict(),
      summary: 'Report a replication result (a measured value, magnitude at most 1e15) on one\'s own clone; confirmed when within 5 % of the prediction',
      description: 'Scores in competitions (replication_confirmed or replication_refuted) only for the first replication a user ' +
        'reports on a template (deleting the clone keeps the report), and only after a scored clone of it (a curated public ' +
        'template of someone else: one a super admin gave a golden spec).',
      response: z.object({ replication: Row }),
    }),
    async (c) => {
      const row = rowOf(
        await c.var.db.rpc('labs_report_replication', { clone_id: c.req.valid('param').id, measured_value: c.req.valid('json').measured_value }).single(),
      )
      return c.json({ replication: row }, 201)
    },
  )
  .openapi(
    endpoint({
      method: 'delete', path: '/labs/admin/replications/{id}', tag, auth: 'superAdmin', params: idParams('id'),
      body: z.object({ reason: text(1000) }).strict(),
      summary: 'Remove a replication (super admin) with a mandatory reason, recorded in labs_replication_removals',
      description: 'The template\'s statistics and, from the next recompute, competition scores no longer count it. 404 unknown or already removed.',
      response: z.object({ removal: Row }),
    }),
    async (c) => {
      const removal = rowOf(
        await c.var.db.rpc('labs_remove_replication', { replication_id: c.req.valid('param').id, reason: c.req.valid('json').reason }).single(),
      )
      return c.json({ removal })
    },
  )
  .openapi(
    endpoint({
      method: 'post', path: '/labs/clones/{id}/complete', tag, auth: 'bearer', params: idParams('id'), errors: [409],
      body: z.object({ built: z.boolean().default(false) }).strict(), bodyRequired: false,
      summary: 'Mark one\'s own clone completed (once); built: the kit was built too',
      description: 'Competitions score a completion and a build once per user and template, on curated (golden-spec) public templates of someone else.',
      response: z.object({ clone: Row }),
    }),
    async (c) => {
      const row = rowOf(
        await c.var.db.rpc('labs_complete_clone', { clone_id: c.req.valid('param').id, built: c.req.valid('json')?.built ?? false }).single(),
      )
      return c.json({ clone: row })
    },
  )
  .openapi(
    endpoint({
      method: 'post', path: '/labs/admin/templates/{id}/promote-to-classroom', tag, auth: 'superAdmin', params: idParams('id'),
      body: z.object({ min_grade_band: GradeBand }).strict(), errors: [409],
      summary: 'Set a template\'s safety_level to classroom_safe with its minimum grade band (super admin)',
      response: z.object({ template: Row }),
    }),
    async (c) => {
      const row = rowOf(
        await c.var.db.rpc('labs_set_template_safety', {
          template_id: c.req.valid('param').id, safety_level: 'classroom_safe', min_grade_band: c.req.valid('json').min_grade_band,
        }).single(),
      )
      return c.json({ template: row })
    },
  )
  .openapi(
    endpoint({
      method: 'post', path: '/labs/admin/templates/{id}/reset-safety', tag, auth: 'superAdmin', params: idParams('id'), errors: [409],
      summary: 'Reset a template to adult_only (super admin): new classroom clones are blocked, earlier reports stay',
      response: z.object({ template: Row }),
    }),
    async (c) => {
      const row = rowOf(
        await c.var.db.rpc('labs_set_template_safety', { template_id: c.req.valid('param').id, safety_level: 'adult_only' }).single(),
      )
      return c.json({ template: row })
    },
  )
  .openapi(
    endpoint({
      method: 'post', path: '/labs/templates/{templateId}/golden-spec', tag, auth: 'superAdmin', params: idParams('templateId'),
      body: GoldenSpec, errors: [409],
      summary: 'Store a golden spec as the template\'s predicted_values (super admin); its first output is the prediction',
      description: 'The only way a template gets predicted_values, and what makes it curated: competitions score activity on curated templates only.',
      response: z.object({ template: Row }),
    }),
    async (c) => {
      const row = rowOf(
        await c.var.db.rpc('labs_set_golden_spec', { template_id: c.req.valid('param').templateId, spec: c.req.valid('json') }).single(),
      )
      return c.json({ template: row })
    },
  )
  .openapi(
    endpoint({
      method: 'post', path: '/labs/optimize', tag, auth: 'none', body: OptimizeBody,
      summary: 'Top N parameter sets of a calculator by its objective (a grid sweep of at most 50,000 combinations)',
      description: `Calculators: ${CALCULATOR_NAMES.join(', ')}. Pure computation: no bearer, no database.`,
      response: z.object({
        calculator: z.string(), objective: z.string(), goal: z.enum(['maximize', 'minimize']), combinations: z.number().int(),
        evaluated: z.number().int(), ranges: z.record(z.string(), Range), results: z.array(Row),
      }),
    }),
    (c) => c.json(optimize(c.req.valid('json'))),
  )
  // ---- Competitions
  .openapi(
    endpoint({
      method: 'post', path: '/labs/admin/competitions', tag, auth: 'superAdmin', status: 201, errors: [409],
      body: z.object({
        slug: z.string().regex(/^[a-z0-9][a-z0-9-]{0,79}$/, 'lower-case letters, digits and dashes (at most 80)'),
        title: text(200),
        starts_at: z.iso.datetime({ offset: true }).optional(),
        ends_at: z.iso.datetime({ offset: true }).optional(),
        scoring_config: z.object({
          clone: weight(), completion: weight(), replication_confirmed: weight(), replication_refuted: weight(), build: weight(),
        }).partial().strict().optional(),
      }).strict(),
      summary: 'Create a competition (super admin); scoring_config defaults to clone 1, completion 5, replication_confirmed 25, replication_refuted 5, build 10',
      response: z.object({ competition: Row }),
    }),
    async (c) => {
      const b = c.req.valid('json')
      const row = rowOf(
        await c.var.db.rpc('labs_create_competition', {
          slug: b.slug, title: b.title, starts_at: b.starts_at ?? null, ends_at: b.ends_at ?? null, scoring_config: b.scoring_config ?? null,
        }).single(),
      )
      return c.json({ competition: row }, 201)
    },
  )
  .openapi(
    endpoint({
      method: 'patch', path: '/labs/admin/competitions/{slug}', tag, auth: 'superAdmin',
      params: z.object({ slug: z.string().max(80).openapi({ param: { name: 'slug', in: 'path' } }) }),
      body: z.object({ is_active: z.boolean().optional(), entry_open: z.boolean().optional() }).strict(),
      summary: 'Open, close, activate or retire a competition (super admin)',
      response: z.object({ competition: Row }),
    }),
    async (c) => {
      const b = c.req.valid('json')
      const row = rowOf(
        await c.var.db.rpc('labs_update_competition', { slug: c.req.valid('param').slug, is_active: b.is_active ?? null, entry_open: b.entry_open ?? null }).single(),
      )
      return c.json({ competition: row })
    },
  )
  .openapi(
    endpoint({
      method: 'post', path: '/labs/competitions/{slug}/join', tag, auth: 'bearer', errors: [409],
      params: z.object({ slug: z.string().max(80).openapi({ param: { name: 'slug', in: 'path' } }) }),
      summary: 'Enter an active competition while entries are open (again: no change)',
      response: z.object({ participant: Row }),
    }),
    async (c) => {
      const row = rowOf(await c.var.db.rpc('labs_join_competition', { slug: c.req.valid('param').slug }).single())
      return c.json({ participant: row })
    },
  )
  .openapi(
    endpoint({
      method: 'get', path: '/labs/competitions/{slug}/leaderboard', tag, auth: 'bearer',
      params: z.object({ slug: z.string().max(80).openapi({ param: { name: 'slug', in: 'path' } }) }),
      query: z.object({ limit: z.coerce.number().int().min(1).max(100).default(50) }).strict(),
      summary: 'Ranking of a competition as last scored (default 50)',
      response: z.object({
        slug: z.string(),
        leaderboard: z.array(z.object({ rank: z.number().int(), user_id: z.string(), full_name: z.string().nullable(), score: z.number().int() })),
      }),
    }),
    async (c) => {
      const slug = c.req.valid('param').slug
      const rows = unwrap(await c.var.db.rpc('labs_leaderboard', { slug, page_size: c.req.valid('query').limit })) as Array<
        { rank: number; user_id: string; full_name: string | null; score: number }
      >
      return c.json({ slug, leaderboard: rows.map((r) => ({ rank: Number(r.rank), user_id: r.user_id, full_name: r.full_name, score: r.score })) })
    },
  )
  .openapi(
    endpoint({
      method: 'post', path: '/cron/labs/recompute-competitions', tag, auth: { cronBearer: 'frontend' }, bodyRequired: false,
      summary: 'Rescore every active, open competition and set last_scored_at (Authorization: Bearer <CRON_SECRET>)',
      response: z.object({
        success: z.literal(true),
        competitions: z.array(z.object({ slug: z.string(), participants: z.number().int(), scored_at: z.string() })),
      }),
    }),
    async (c) => {
      console.log('labs recompute-competitions: start')
      const rows = unwrap(await c.var.db.rpc('labs_recompute_competitions')) as Array<{ slug: string; participants: number; scored_at: string }>
      console.log(`labs recompute-competitions: ${rows.length} competitions rescored`)
      return c.json({ success: true as const, competitions: rows })
    },
  )
  .openapi(
    endpoint({
      method: 'post', path: '/labs/cron/process-step-prompts', tag, auth: { cron: 'labs' }, bodyRequired: false,
      summary: 'Prompt users with an unfinished clone not prompted in 3 or more days (at most once per user per day)',
      response: z.object({ success: z.literal(true), message: z.string(), results: JobResults }),
    }),
    async (c) => {
      console.log('labs process-step-prompts: start')
      const results = unwrap(await c.var.db.rpc('labs_process_step_prompts', {})) as z.infer<typeof JobResults>
      console.log(`labs process-step-prompts: ${results.prompted} prompted, ${results.failed} failed, ${results.remaining} remaining`)
      return c.json({ success: true as const, message: `${results.prompted} users prompted`, results })
    },
  )
  // ---- Sponsor outreach
  .openapi(
    endpoint({
      method: 'post', path: '/labs/sponsors/{id}/messages', tag, auth: 'bearer', params: idParams('id'), status: 201, errors: [429],
      body: z.object({ body: text(4000) }).strict(),
      summary: 'Message an approved sponsor (at most 5 per 24 hours per sponsor); only sender and sponsor read it',
      response: z.object({ message: Row }),
    }),
    async (c) => {
      const row = rowOf(await c.var.db.rpc('labs_send_sponsor_message', { sponsor_id: c.req.valid('param').id, body: c.req.valid('json').body }).single())
      return c.json({ message: row }, 201)
    },
  )
  .openapi(
    endpoint({
      method: 'get', path: '/labs/messages', tag, auth: 'bearer', query: z.object(pageQuery).strict(),
      summary: 'Outreach messages the caller sent or received, newest first',
      response: z.object({ messages: z.array(Row), next_cursor: NextCursor }),
    }),
    async (c) => {
      const { items, next_cursor } = await newestFirstPage<{ id: string; created_at: string }>(
        c.var.db.from('labs_sponsor_messages').select('*'),
        c.req.valid('query'),
      )
      return c.json({ messages: items, next_cursor })
    },
  )
  .openapi(
    endpoint({
      method: 'post', path: '/cron/labs/sponsor-outreach-digest', tag, auth: { cronBearer: 'frontend' }, bodyRequired: false,
      summary: 'E-mail each sponsor the digest of last week\'s messages, once per sponsor per week (Authorization: Bearer <CRON_SECRET>)',
      description: 'Scheduled Mondays. Without RESEND_API_KEY and EMAIL_FROM: 503 and nothing claimed.',
      response: z.object({
        success: z.literal(true),
        results: z.object({ total: z.number().int(), sent: z.number().int(), failed: z.number().int(), errors: z.array(z.string()) }),
      }),
    }),
    async (c) => {
      if (!resendClient()) throw unavailable('E-mail is not configured (RESEND_API_KEY and EMAIL_FROM must be set)')
      console.log('labs sponsor-outreach-digest: start')
      const results = { total: 0, sent: 0, failed: 0, errors: [] as string[] }
      // Failed sends are released for the next run, not retried within this one.
      const failedSponsors: string[] = []
      for (let round = 0; round < 20; round++) {
        const due = unwrap(await c.var.db.rpc('labs_claim_outreach_digests', { batch_size: 50, skip_sponsors: failedSponsors })) as Array<{
          sponsor_id: string; week_start: string; sponsor_name: string; contact_email: string; contact_name: string
          messages: Array<{ body: string; sent_at: string }>
        }>
        if (due.length === 0) break
        for (const d of due) {
          results.total++
          const mail = digestEmail(d)
          let emailId: string | null = null
          try {
            const sent = await sendEmail({ to: d.contact_email, ...mail }, `labs-digest-${d.sponsor_id}-${d.week_start}`)
            if ('id' in sent) emailId = sent.id
            else results.errors.push(`${d.sponsor_id}: ${fromResend(sent.error).message}`)
          } catch (e) {
            results.errors.push(`${d.sponsor_id}: ${e instanceof Error ? e.message : String(e)}`)
          }
          unwrap(await c.var.db.rpc('labs_finish_outreach_digest', {
            sponsor_id: d.sponsor_id, week_start: d.week_start, email_id: emailId, message_count: d.messages.length,
          }))
          if (emailId) results.sent++
          else {
            results.failed++
            failedSponsors.push(d.sponsor_id)
          }
        }
      }
      console.log(`labs sponsor-outreach-digest: ${results.sent} sent, ${results.failed} failed`)
      return c.json({ success: true as const, results })
    },
  )
  // ---- Kit waitlist
  .openapi(
    endpoint({
      method: 'post', path: '/labs/kit-waitlist', tag, auth: 'none', status: 202, body: z.object({ email }).strict(),
      summary: 'Join the kit waitlist (one signup per address; the reply is the same either way)',
      response: z.object({ message: z.string() }),
    }),
    async (c) => {
      // A plain insert as anonymous, as any PostgREST client makes it: the table's trigger skips
      // an address already listed, so the answer is the same either way.
      unwrap(await userDb(requiredEnv('SUPABASE_ANON_KEY')).from('labs_kit_waitlist').insert({ email: c.req.valid('json').email }))
      return c.json({ message: 'You are on the kit waitlist' }, 202)
    },
  )
  .openapi(
    endpoint({
      method: 'get', path: '/labs/admin/kit-waitlist', tag, auth: 'superAdmin',
      query: z.object({
        ...pageQuery,
        launch_date: isoDate().optional().openapi({ description: 'Overrides LABS_KIT_LAUNCH_DATE (for what-if views)' }),
      }).strict(),
      summary: 'Kit waitlist signups and whether the gate is met: more than 200 signups within 30 days of launch (super admin)',
      response: z.object({
        signups: z.array(z.object({ id: z.string(), email: z.string(), created_at: z.string() })),
        next_cursor: NextCursor,
        total: z.number().int(),
        launch_date: z.string().nullable(),
        signups_within_30_days_of_launch: z.number().int().nullable(),
        gate_met: z.boolean().nullable(),
      }),
    }),
    async (c) => {
      const q = c.req.valid('query')
      const launch = q.launch_date ?? optionalEnv('LABS_KIT_LAUNCH_DATE') ?? null
      if (launch && !isoDate().safeParse(launch).success) throw badRequest('LABS_KIT_LAUNCH_DATE: not a date (YYYY-MM-DD)')
      const [gate, signups] = await Promise.all([
        c.var.db.rpc('labs_kit_waitlist_gate', { launch_date: launch }).single(),
        newestFirstPage<{ id: string; email: string; created_at: string }>(c.var.db.from('labs_kit_waitlist').select('id, email, created_at'), q),
      ])
      const g = unwrap(gate) as { total: number; within_launch_window: number | null; gate_met: boolean | null }
      return c.json({
        signups: signups.items, next_cursor: signups.next_cursor, total: g.total, launch_date: launch,
        signups_within_30_days_of_launch: g.within_launch_window, gate_met: g.gate_met,
      })
    },
  )
