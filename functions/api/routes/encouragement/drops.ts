// Sending and receiving drops: the caller's allowance today, the approved templates, a send
// (one function that locks the day's allowance), the drops received and marking them read,
// and the configuration.
import { z } from '@hono/zod-openapi'
import { unwrap } from '../../../_shared/errors.ts'
import { decodeCursor, encodeCursor, newestFirstPage, pageQuery } from '../../../_shared/pagination.ts'
import { idParams, uuid } from '../../../_shared/validation.ts'
import { endpoint, NextCursor, routeModule } from '../../openapi.ts'
import { Config, CONFIG_COLUMNS, dropType, tag, Template, TEMPLATE_COLUMNS } from './shared.ts'

const DailyDrops = z.object({
  day: z.string().openapi({ description: 'The UTC day these counts belong to' }),
  daily_allowance: z.number().int(),
  drops_used: z.number().int(),
  bonus_drops_earned: z.number().int(),
  total_available: z.number().int().openapi({ description: 'allowance + bonus - used' }),
  custom_used: z.number().int(),
  custom_remaining: z.number().int(),
}).openapi('EncouragementDailyDrops')

const TemplateQuery = z.object({ ...pageQuery, type: dropType.optional() }).strict()

const SendBody = z.object({
  recipient_id: uuid(),
  drop_type: dropType,
  template_id: uuid().optional(),
  content: z.string().trim().min(1).max(1000).optional(),
  entry_id: uuid().optional().openapi({ description: 'An entry the sender may see, the drop is about' }),
}).strict().superRefine((b, ctx) => {
  if ((b.template_id === undefined) === (b.content === undefined)) {
    ctx.addIssue({
      code: 'custom',
      path: ['template_id'],
      message: 'give exactly one of template_id and content',
    })
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
  sender_id: z.string().nullable().openapi({
    description: 'null once the sender deleted their account (sender_name: "Deleted user")',
  }),
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

export const dropRoutes = routeModule()
  .openapi(
    endpoint({
      method: 'get',
      path: '/encouragement-drops/my-drops',
      tag,
      auth: 'bearer',
      summary: "The caller's drops today (UTC day)",
      response: DailyDrops,
    }),
    async (c) => c.json(unwrap(await c.var.db.rpc('my_encouragement_drops'))),
  )
  .openapi(
    endpoint({
      method: 'get',
      path: '/encouragement-drops/templates',
      tag,
      auth: 'bearer',
      query: TemplateQuery,
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
      method: 'post',
      path: '/encouragement-drops/send',
      tag,
      auth: 'bearer',
      body: SendBody,
      status: 201,
      summary: "Send a drop (one of today's allowance; custom content also counts against the custom cap)",
      description:
        '429 when no drop or no custom drop is left today (the message says which); nothing is written then. ' +
        '404 for an unknown or inactive recipient, a template that is not approved or not of drop_type, or an entry the sender cannot see.',
      response: z.object({ drop: SentDrop }),
      errors: [404, 429],
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
        }).select(
          'id, sender_id, recipient_id, drop_type, template_id, content, entry_id, is_custom, date_sent, read_at',
        ),
      )
      return c.json({ drop }, 201)
    },
  )
  .openapi(
    endpoint({
      method: 'get',
      path: '/encouragement-drops/received',
      tag,
      auth: 'bearer',
      query: ReceivedQuery,
      summary: "Drops received by the caller, newest first, with the sender's name and avatar",
      response: z.object({
        drops: z.array(ReceivedDrop),
        unread_count: z.number().int(),
        next_cursor: NextCursor,
      }),
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
      const drops = unwrap(rows)
      if (unread.error) unwrap(unread)
      const items = drops.slice(0, q.limit)
      const last = items[items.length - 1]
      const next_cursor = drops.length > q.limit
        ? encodeCursor({ created_at: last.date_sent, id: last.id })
        : null
      return c.json({ drops: items, unread_count: unread.count ?? 0, next_cursor })
    },
  )
  .openapi(
    endpoint({
      method: 'post',
      path: '/encouragement-drops/received/{id}/read',
      tag,
      auth: 'bearer',
      params: idParams('id'),
      summary: 'Mark a received drop read (read_at keeps the first time)',
      response: z.object({ id: z.string(), read_at: z.string() }),
    }),
    async (c) => {
      const { id } = c.req.valid('param')
      const row = unwrap(
        await c.var.db.rpc('mark_encouragement_drop_read', { drop_id: id }).select('id, read_at'),
      )
      return c.json(row)
    },
  )
  .openapi(
    endpoint({
      method: 'get',
      path: '/encouragement-drops/config',
      tag,
      auth: 'bearer',
      summary: 'The configuration (allowance, bonus, engagement window, custom cap)',
      response: Config,
    }),
    async (c) => c.json(unwrap(await c.var.db.from('encouragement_config').select(CONFIG_COLUMNS).single())),
  )
