// Encouragement drops and badges (SPEC "Encouragement drops and badges", rules 1-4). Every
// rule lives in SQL (20261122040000_encouragement.sql): the send is one function that locks
// the day's allowance; engagement processing is one set-based function; badges are
// recalculated by one function. Routes validate, call the database as the caller, and shape.
import { z } from '@hono/zod-openapi'
import { generateDailyDrops } from '../../_shared/assistant_drops.ts'
import { badRequest, notFound, unwrap } from '../../_shared/errors.ts'
import { decodeCursor, encodeCursor, newestFirstPage, pageQuery } from '../../_shared/pagination.ts'
import { idParams, uuid } from '../../_shared/validation.ts'
import { endpoint, Message, NextCursor, routeModule } from '../openapi.ts'

const tag = 'Encouragement drops'
const DROP_TYPES = ['encouragement', 'media', 'science_tidbit'] as const
const MEDIA_TYPES = ['image', 'video', 'audio', 'link'] as const
const dropType = z.enum(DROP_TYPES)

// ---- Schemas

const DailyDrops = z.object({
  day: z.string().openapi({ description: 'The UTC day these counts belong to' }),
  daily_allowance: z.number().int(),
  drops_used: z.number().int(),
  bonus_drops_earned: z.number().int(),
  total_available: z.number().int().openapi({ description: 'allowance + bonus - used' }),
  custom_used: z.number().int(),
  custom_remaining: z.number().int(),
}).openapi('EncouragementDailyDrops')

const Config = z.object({
  daily_allowance: z.number().int(),
  bonus_per_engagement: z.number().int(),
  engagement_window_hours: z.number().int(),
  max_custom_per_day: z.number().int(),
}).openapi('EncouragementConfig')
const CONFIG_COLUMNS = 'daily_allowance, bonus_per_engagement, engagement_window_hours, max_custom_per_day'

const configValue = (max: number) => z.number().int().min(1).max(max)
const ConfigPatch = z.object({
  daily_allowance: configValue(100).optional(),
  bonus_per_engagement: configValue(100).optional(),
  engagement_window_hours: configValue(168).optional(),
  max_custom_per_day: configValue(100).optional(),
}).strict().openapi('EncouragementConfigPatch')

const Template = z.object({
  id: z.string(),
  type: dropType,
  title: z.string(),
  content: z.string(),
  media_type: z.enum(MEDIA_TYPES).nullable(),
  thumbnail_url: z.string().nullable(),
  is_approved: z.boolean(),
  usage_count: z.number().int(),
  created_at: z.string(),
  updated_at: z.string(),
}).openapi('EncouragementTemplate')
const TEMPLATE_COLUMNS = 'id, type, title, content, media_type, thumbnail_url, is_approved, usage_count, created_at, updated_at'

const templateFields = {
  type: dropType,
  title: z.string().trim().min(1).max(200),
  content: z.string().trim().min(1).max(2000),
  media_type: z.enum(MEDIA_TYPES).nullable(),
  thumbnail_url: z.url({ protocol: /^https?$/ }).max(2048).nullable(),
  is_approved: z.boolean(),
}
const NewTemplate = z.object({
  ...templateFields,
  media_type: templateFields.media_type.optional(),
  thumbnail_url: templateFields.thumbnail_url.optional(),
  is_approved: templateFields.is_approved.default(false),
}).strict().superRefine((t, ctx) => {
  if (t.type === 'media' && !t.media_type) ctx.addIssue({ code: 'custom', path: ['media_type'], message: 'required for media templates' })
  if (t.type !== 'media' && (t.media_type || t.thumbnail_url)) {
    ctx.addIssue({ code: 'custom', path: [t.media_type ? 'media_type' : 'thumbnail_url'], message: 'only for media templates' })
  }
}).openapi('NewEncouragementTemplate')
const TemplatePatch = z.object(templateFields).partial().strict().openapi('EncouragementTemplatePatch')

const TemplateQuery = z.object({ ...pageQuery, type: dropType.optional() }).strict()
const AdminTemplateQuery = z.object({
  ...pageQuery,
  type: dropType.optional(),
  approved: z.enum(['true', 'false']).optional().openapi({ description: 'Only approved (true) or unapproved (false) ones' }),
}).strict()

const SendBody = z.object({
  recipient_id: uuid(),
  drop_type: dropType,
  template_id: uuid().optional(),
  content: z.string().trim().min(1).max(1000).optional(),
  entry_id: uuid().optional().openapi({ description: 'An entry the sender may see, the drop is about' }),
}).strict().superRefine((b, ctx) => {
  if ((b.template_id === undefined) === (b.content === undefined)) {
    ctx.addIssue({ code: 'custom', path: ['template_id'], message: 'give exactly one of template_id and content' })
  }
}).openapi('SendEncouragementDrop')

const SentDrop = z.object({
  id: z.string(),
  sender_id: z.string(),
  recipient_id: z.string(),
  drop_type: dropType,
  template_id: z.string().nullable(),
  content: z.string(),
  entry_id: z.string().nullable(),
  is_custom: z.boolean(),
  date_sent: z.string(),
  read_at: z.string().nullable(),
}).openapi('SentEncouragementDrop')

const ReceivedDrop = z.object({
  id: z.string(),
  sender_id: z.string(),
  sender_name: z.string().nullable(),
  sender_avatar_url: z.string().nullable(),
  is_system: z.boolean().openapi({ description: 'The daily assistant drop' }),
  drop_type: dropType,
  content: z.string(),
  template_id: z.string().nullable(),
  entry_id: z.string().nullable(),
  date_sent: z.string(),
  read_at: z.string().nullable(),
}).openapi('ReceivedEncouragementDrop')
const ReceivedQuery = z.object({
  ...pageQuery,
  unread: z.enum(['true', 'false']).optional().openapi({ description: 'true: unread drops only' }),
}).strict()

const Badge = z.object({
  user_id: z.string(),
  full_name: z.string().nullable(),
  avatar_url: z.string().nullable(),
  level: z.number().int(),
  name: z.string(),
  emoji: z.string(),
  color: z.string(),
  total_sent: z.number().int(),
  engagement_increases: z.number().int().openapi({ description: 'Successful drops: the recipient engaged within the window' }),
  success_rate: z.number().openapi({ description: 'Percent of sent drops that were successful' }),
  bonus_earned: z.number().int(),
  consecutive_days: z.number().int(),
  progress_to_next: z.number().openapi({ description: 'Percent of the way to the next level (100 at the top)' }),
  next_level: z.number().int().nullable(),
  next_level_name: z.string().nullable(),
  next_level_min_successful_drops: z.number().int().nullable(),
  updated_at: z.string().nullable(),
}).openapi('EncouragementBadge')

const Definition = z.object({
  level: z.number().int(),
  name: z.string(),
  emoji: z.string(),
  color: z.string(),
  min_successful_drops: z.number().int(),
  min_success_rate: z.number().nullable(),
  min_consecutive_days: z.number().int().nullable(),
}).openapi('EncouragementBadgeDefinition')

const Milestone = z.object({
  id: z.number().int(),
  user_id: z.string(),
  level: z.number().int(),
  achieved_at: z.string(),
  stats: z.record(z.string(), z.unknown()),
}).openapi('EncouragementBadgeMilestone')

const LeaderboardRow = z.object({
  rank: z.number().int(),
  user_id: z.string(),
  full_name: z.string().nullable(),
  avatar_url: z.string().nullable(),
  level: z.number().int(),
  name: z.string(),
  emoji: z.string(),
  color: z.string(),
  engagement_increases: z.number().int(),
  success_rate: z.number(),
  total_sent: z.number().int(),
  bonus_earned: z.number().int(),
}).openapi('EncouragementLeaderboardRow')

const Engagement = z.object({
  judged: z.number().int(),
  engaged: z.number().int(),
  bonuses_awarded: z.number().int(),
  badges_recalculated: z.number().int(),
  remaining: z.number().int().openapi({ description: 'Drops whose window closed that are still unjudged (a larger backlog than one run takes)' }),
  bonus_pairs_pruned: z.number().int().openapi({ description: 'Old one-bonus-per-pair-and-day records deleted by this run (at most 50,000)' }),
  duration_ms: z.number(),
}).openapi('EngagementProcessing')

const DailyDropsReply = z.object({
  success: z.boolean(),
  message: z.string(),
  results: z.object({
    total: z.number().int(),
    generated: z.number().int(),
    skipped: z.number().int(),
    failed: z.number().int(),
    errors: z.array(z.string()),
    remaining: z.number().int().openapi({ description: 'Due users left for later invocations (pg_cron calls again while > 0)' }),
  }),
}).openapi('GenerateDailyDropsResult')

// ---- Helpers

type BadgeRow = z.infer<typeof Badge>
const numeric = (b: BadgeRow) => ({ ...b, success_rate: Number(b.success_rate), progress_to_next: Number(b.progress_to_next) })

async function badgesOf(db: import('../../_shared/db.ts').Db, ids: string[]) {
  return (unwrap(await db.rpc('encouragement_badges_of', { user_ids: ids })) as BadgeRow[]).map(numeric)
}

async function runEngagement(db: import('../../_shared/db.ts').Db) {
  const r = unwrap(await db.rpc('process_encouragement_engagement', {})) as z.infer<typeof Engagement>
  console.log('process-engagement:', JSON.stringify(r))
  return r
}

// ---- Routes

export const encouragementRoutes = routeModule()
  .openapi(
    endpoint({
      method: 'get', path: '/encouragement-drops/my-drops', tag, auth: 'bearer',
      summary: 'The caller\'s drops today (UTC day)', response: DailyDrops,
    }),
    async (c) => c.json(unwrap(await c.var.db.rpc('my_encouragement_drops'))),
  )
  .openapi(
    endpoint({
      method: 'get', path: '/encouragement-drops/templates', tag, auth: 'bearer', query: TemplateQuery,
      summary: 'Approved templates, newest first, optionally of one type',
      response: z.object({ templates: z.array(Template), next_cursor: NextCursor }),
    }),
    async (c) => {
      const q = c.req.valid('query')
      let query = c.var.db.from('encouragement_templates').select(TEMPLATE_COLUMNS).eq('is_approved', true)
      if (q.type) query = query.eq('type', q.type)
      const { items, next_cursor } = await newestFirstPage(query, q)
      return c.json({ templates: items, next_cursor })
    },
  )
  .openapi(
    endpoint({
      method: 'post', path: '/encouragement-drops/send', tag, auth: 'bearer', body: SendBody, status: 201,
      summary: 'Send a drop (one of today\'s allowance; custom content also counts against the custom cap)',
      description: '429 when no drop or no custom drop is left today (the message says which); nothing is written then. ' +
        '404 for an unknown or inactive recipient, a template that is not approved or not of drop_type, or an entry the sender cannot see.',
      response: z.object({ drop: SentDrop }), errors: [404, 429],
    }),
    async (c) => {
      const b = c.req.valid('json')
      const drop = unwrap(
        await c.var.db.rpc('send_encouragement_drop', {
          recipient_id: b.recipient_id,
          drop_type: b.drop_type,
          template_id: b.template_id ?? null,
          content: b.content ?? null,
          entry_id: b.entry_id ?? null,
        }).select('id, sender_id, recipient_id, drop_type, template_id, content, entry_id, is_custom, date_sent, read_at').single(),
      )
      return c.json({ drop }, 201)
    },
  )
  .openapi(
    endpoint({
      method: 'get', path: '/encouragement-drops/received', tag, auth: 'bearer', query: ReceivedQuery,
      summary: 'Drops received by the caller, newest first, with the sender\'s name and avatar',
      response: z.object({ drops: z.array(ReceivedDrop), unread_count: z.number().int(), next_cursor: NextCursor }),
    }),
    async (c) => {
      const q = c.req.valid('query')
      const cursor = decodeCursor(q.before)
      const [rows, unread] = await Promise.all([
        c.var.db.rpc('received_encouragement_drops', {
          unread_only: q.unread === 'true',
          before_date_sent: cursor?.createdAt ?? null,
          before_id: cursor?.id ?? null,
          page_size: q.limit + 1,
        }),
        c.var.db.from('encouragement_sent_drops').select('id', { count: 'exact', head: true })
          .eq('recipient_id', c.var.caller.id).is('read_at', null),
      ])
      const drops = unwrap(rows) as z.infer<typeof ReceivedDrop>[]
      if (unread.error) unwrap(unread)
      const items = drops.slice(0, q.limit)
      const last = items[items.length - 1]
      const next_cursor = drops.length > q.limit ? encodeCursor({ created_at: last.date_sent, id: last.id }) : null
      return c.json({ drops: items, unread_count: unread.count ?? 0, next_cursor })
    },
  )
  .openapi(
    endpoint({
      method: 'post', path: '/encouragement-drops/received/{id}/read', tag, auth: 'bearer', params: idParams('id'),
      summary: 'Mark a received drop read (read_at keeps the first time)',
      response: z.object({ id: z.string(), read_at: z.string() }),
    }),
    async (c) => {
      const { id } = c.req.valid('param')
      const row = unwrap(await c.var.db.rpc('mark_encouragement_drop_read', { drop_id: id }).select('id, read_at').single())
      return c.json(row)
    },
  )
  .openapi(
    endpoint({
      method: 'get', path: '/encouragement-drops/config', tag, auth: 'bearer',
      summary: 'The configuration (allowance, bonus, engagement window, custom cap)', response: Config,
    }),
    async (c) => c.json(unwrap(await c.var.db.from('encouragement_config').select(CONFIG_COLUMNS).single())),
  )
  // ---- Super admins
  .openapi(
    endpoint({
      method: 'get', path: '/encouragement-drops/admin/templates', tag, auth: 'superAdmin', query: AdminTemplateQuery,
      summary: 'All templates, approved or not, newest first',
      response: z.object({ templates: z.array(Template), next_cursor: NextCursor }),
    }),
    async (c) => {
      const q = c.req.valid('query')
      let query = c.var.db.from('encouragement_templates').select(TEMPLATE_COLUMNS)
      if (q.type) query = query.eq('type', q.type)
      if (q.approved) query = query.eq('is_approved', q.approved === 'true')
      const { items, next_cursor } = await newestFirstPage(query, q)
      return c.json({ templates: items, next_cursor })
    },
  )
  .openapi(
    endpoint({
      method: 'post', path: '/encouragement-drops/admin/templates', tag, auth: 'superAdmin', body: NewTemplate, status: 201,
      summary: 'Create a template (unapproved unless is_approved)', response: z.object({ template: Template }),
    }),
    async (c) => {
      const template = unwrap(await c.var.db.from('encouragement_templates').insert(c.req.valid('json')).select(TEMPLATE_COLUMNS).single())
      return c.json({ template }, 201)
    },
  )
  .openapi(
    endpoint({
      method: 'put', path: '/encouragement-drops/admin/templates/{id}', tag, auth: 'superAdmin', params: idParams('id'),
      body: TemplatePatch, summary: 'Change or approve a template', response: z.object({ template: Template }),
    }),
    async (c) => {
      const { id } = c.req.valid('param')
      const patch = c.req.valid('json')
      if (Object.keys(patch).length === 0) throw badRequest('body: nothing to update')
      const rows = unwrap(await c.var.db.from('encouragement_templates').update(patch).eq('id', id).select(TEMPLATE_COLUMNS)) as unknown[]
      if (!rows.length) throw notFound('Template not found')
      return c.json({ template: rows[0] })
    },
  )
  .openapi(
    endpoint({
      method: 'delete', path: '/encouragement-drops/admin/templates/{id}', tag, auth: 'superAdmin', params: idParams('id'),
      summary: 'Delete a template (sent drops keep their text)', response: Message,
    }),
    async (c) => {
      const { id } = c.req.valid('param')
      const rows = unwrap(await c.var.db.from('encouragement_templates').delete().eq('id', id).select('id')) as unknown[]
      if (!rows.length) throw notFound('Template not found')
      return c.json({ message: 'Template deleted' })
    },
  )
  .openapi(
    endpoint({
      method: 'get', path: '/encouragement-drops/admin/config', tag, auth: 'superAdmin',
      summary: 'The configuration and its latest changes (who, when, before, after)',
      response: z.object({
        config: Config.extend({ updated_at: z.string(), updated_by: z.string().nullable() }),
        changes: z.array(z.object({
          id: z.number().int(),
          changed_by: z.string().nullable(),
          changed_at: z.string(),
          old_values: Config,
          new_values: Config,
        })),
      }),
    }),
    async (c) => {
      const [config, changes] = await Promise.all([
        c.var.db.from('encouragement_config').select(`${CONFIG_COLUMNS}, updated_at, updated_by`).single(),
        c.var.db.from('encouragement_config_changes').select('id, changed_by, changed_at, old_values, new_values')
          .order('changed_at', { ascending: false }).order('id', { ascending: false }).limit(20),
      ])
      return c.json({ config: unwrap(config), changes: unwrap(changes) })
    },
  )
  .openapi(
    endpoint({
      method: 'put', path: '/encouragement-drops/admin/config', tag, auth: 'superAdmin', body: ConfigPatch,
      summary: 'Change some configuration values (each a bounded positive integer); the change is recorded',
      response: Config,
    }),
    async (c) => {
      const patch = c.req.valid('json')
      if (Object.keys(patch).length === 0) throw badRequest('body: name at least one configuration value')
      const row = unwrap(await c.var.db.rpc('update_encouragement_config', { patch }).select(CONFIG_COLUMNS).single())
      return c.json(row)
    },
  )
  .openapi(
    endpoint({
      method: 'post', path: '/encouragement-drops/admin/process-engagement', tag, auth: 'superAdmin',
      summary: 'Run engagement processing now', response: Engagement,
    }),
    async (c) => c.json(await runEngagement(c.var.db)),
  )
  // ---- Scheduled
  .openapi(
    endpoint({
      method: 'post', path: '/encouragement-drops/cron/process-engagement', tag,
      auth: { cron: 'encouragement-drops/process-engagement' },
      summary: 'Engagement and bonus drops (scheduled 0 * * * *; pg_cron runs the SQL directly)', response: Engagement,
    }),
    async (c) => c.json(await runEngagement(c.var.db)),
  )
  .openapi(
    endpoint({
      method: 'post', path: '/encouragement-drops/cron/generate-daily-drops', tag, auth: { cron: 'encouragement-drops' },
      summary: 'Daily assistant drops for a chunk of due users (scheduled 0 9 * * *, repeated while users remain)',
      description: 'Users with read_notes_enabled and check_in_enabled; one per user per UTC day; batches of 5 with 1 s between. ' +
        'Per-user failures are listed in results.errors; the run itself succeeds.',
      response: DailyDropsReply,
    }),
    async (c) => {
      const results = await generateDailyDrops()
      const message = `Generated ${results.generated} of ${results.total} daily drops (${results.skipped} skipped, ` +
        `${results.failed} failed, ${results.remaining} remaining)`
      return c.json({ success: true, message, results })
    },
  )
  // ---- Badges
  .openapi(
    endpoint({
      method: 'get', path: '/encouragement-drops/badge', tag, auth: 'bearer',
      summary: 'The caller\'s badge', response: z.object({ badge: Badge }),
    }),
    async (c) => c.json({ badge: (await badgesOf(c.var.db, [c.var.caller.id]))[0] }),
  )
  .openapi(
    endpoint({
      method: 'get', path: '/encouragement-drops/badge/milestones', tag, auth: 'bearer',
      summary: 'The caller\'s milestones, newest first', response: z.object({ milestones: z.array(Milestone) }),
    }),
    async (c) => {
      const milestones = unwrap(
        await c.var.db.from('encouragement_badge_milestones').select('id, user_id, level, achieved_at, stats')
          .eq('user_id', c.var.caller.id).order('level', { ascending: false }),
      )
      return c.json({ milestones })
    },
  )
  .openapi(
    endpoint({
      method: 'get', path: '/encouragement-drops/badge/{userId}', tag, auth: 'bearer', params: idParams('userId'),
      summary: 'A user\'s badge', response: z.object({ badge: Badge }),
    }),
    async (c) => {
      const [badge] = await badgesOf(c.var.db, [c.req.valid('param').userId])
      if (!badge) throw notFound('User not found')
      return c.json({ badge })
    },
  )
  .openapi(
    endpoint({
      method: 'post', path: '/encouragement-drops/badge/update', tag, auth: 'bearer',
      summary: 'Recalculate the caller\'s badge', response: z.object({ badge: Badge }),
    }),
    async (c) => {
      unwrap(await c.var.db.rpc('update_my_encouragement_badge'))
      return c.json({ badge: (await badgesOf(c.var.db, [c.var.caller.id]))[0] })
    },
  )
  .openapi(
    endpoint({
      method: 'post', path: '/encouragement-drops/badges/bulk', tag, auth: 'bearer',
      body: z.object({ user_ids: z.array(uuid()).min(1).max(100) }).strict().openapi('BulkBadgesRequest'),
      summary: 'Badges of up to 100 users (unknown ids are left out)', response: z.object({ badges: z.array(Badge) }),
    }),
    async (c) => c.json({ badges: await badgesOf(c.var.db, c.req.valid('json').user_ids) }),
  )
  .openapi(
    endpoint({
      method: 'get', path: '/encouragement-drops/leaderboard', tag, auth: 'bearer',
      query: z.object({ limit: z.coerce.number().int().min(1).max(100).default(50) }).strict(),
      summary: 'Top encouragers: engagement increases, then success rate (both descending; ties by user id)',
      response: z.object({ leaderboard: z.array(LeaderboardRow) }),
    }),
    async (c) => {
      const rows = unwrap(await c.var.db.rpc('encouragement_leaderboard', { max_rows: c.req.valid('query').limit })) as
        z.infer<typeof LeaderboardRow>[]
      return c.json({ leaderboard: rows.map((r) => ({ ...r, success_rate: Number(r.success_rate) })) })
    },
  )
  .openapi(
    endpoint({
      method: 'get', path: '/encouragement-drops/badge-definitions', tag, auth: 'bearer',
      summary: 'The badge ladder', response: z.object({ definitions: z.array(Definition) }),
    }),
    async (c) => {
      const rows = unwrap(await c.var.db.from('encouragement_badge_definitions').select('*').order('level')) as z.infer<typeof Definition>[]
      return c.json({
        definitions: rows.map((d) => ({ ...d, min_success_rate: d.min_success_rate === null ? null : Number(d.min_success_rate) })),
      })
    },
  )
