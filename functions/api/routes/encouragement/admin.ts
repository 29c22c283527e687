// Super admins: the templates (approved or not) and the configuration, whose every change is
// recorded, and running engagement processing by hand.
import { z } from '@hono/zod-openapi'
import { badRequest, notFound, unwrap } from '../../../_shared/errors.ts'
import { newestFirstPage, pageQuery } from '../../../_shared/pagination.ts'
import { idParams } from '../../../_shared/validation.ts'
import { endpoint, Message, NextCursor, routeModule } from '../../openapi.ts'
import {
  Config,
  CONFIG_COLUMNS,
  dropType,
  Engagement,
  MEDIA_TYPES,
  runEngagement,
  tag,
  Template,
  TEMPLATE_COLUMNS,
} from './shared.ts'

const configValue = (max: number) => z.number().int().min(1).max(max)
const ConfigPatch = z.object({
  daily_allowance: configValue(100).optional(),
  bonus_per_engagement: configValue(100).optional(),
  engagement_window_hours: configValue(168).optional(),
  max_custom_per_day: configValue(100).optional(),
}).strict().openapi('EncouragementConfigPatch')

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
  if (t.type === 'media' && !t.media_type) {
    ctx.addIssue({ code: 'custom', path: ['media_type'], message: 'required for media templates' })
  }
  if (t.type !== 'media' && (t.media_type || t.thumbnail_url)) {
    ctx.addIssue({
      code: 'custom',
      path: [t.media_type ? 'media_type' : 'thumbnail_url'],
      message: 'only for media templates',
    })
  }
}).openapi('NewEncouragementTemplate')
const TemplatePatch = z.object(templateFields).partial().strict().openapi('EncouragementTemplatePatch')

const AdminTemplateQuery = z.object({
  ...pageQuery,
  type: dropType.optional(),
  approved: z.enum(['true', 'false']).optional().openapi({
    description: 'Only approved (true) or unapproved (false) ones',
  }),
}).strict()

export const adminRoutes = routeModule()
  .openapi(
    endpoint({
      method: 'get',
      path: '/encouragement-drops/admin/templates',
      tag,
      auth: 'superAdmin',
      query: AdminTemplateQuery,
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
      method: 'post',
      path: '/encouragement-drops/admin/templates',
      tag,
      auth: 'superAdmin',
      body: NewTemplate,
      status: 201,
      summary: 'Create a template (unapproved unless is_approved)',
      response: z.object({ template: Template }),
    }),
    async (c) => {
      const template = unwrap(
        await c.var.db.from('encouragement_templates').insert(c.req.valid('json')).select(TEMPLATE_COLUMNS)
          .single(),
      )
      return c.json({ template }, 201)
    },
  )
  .openapi(
    endpoint({
      method: 'put',
      path: '/encouragement-drops/admin/templates/{id}',
      tag,
      auth: 'superAdmin',
      params: idParams('id'),
      body: TemplatePatch,
      summary: 'Change or approve a template',
      response: z.object({ template: Template }),
    }),
    async (c) => {
      const { id } = c.req.valid('param')
      const patch = c.req.valid('json')
      if (Object.keys(patch).length === 0) throw badRequest('body: nothing to update')
      const rows = unwrap(
        await c.var.db.from('encouragement_templates').update(patch).eq('id', id).select(TEMPLATE_COLUMNS),
      )
      if (!rows.length) throw notFound('Template not found')
      return c.json({ template: rows[0] })
    },
  )
  .openapi(
    endpoint({
      method: 'delete',
      path: '/encouragement-drops/admin/templates/{id}',
      tag,
      auth: 'superAdmin',
      params: idParams('id'),
      summary: 'Delete a template (sent drops keep their text)',
      response: Message,
    }),
    async (c) => {
      const { id } = c.req.valid('param')
      const rows = unwrap(await c.var.db.from('encouragement_templates').delete().eq('id', id).select('id'))
      if (!rows.length) throw notFound('Template not found')
      return c.json({ message: 'Template deleted' })
    },
  )
  .openapi(
    endpoint({
      method: 'get',
      path: '/encouragement-drops/admin/config',
      tag,
      auth: 'superAdmin',
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
        c.var.db.from('encouragement_config_changes').select(
          'id, changed_by, changed_at, old_values, new_values',
        )
          .order('changed_at', { ascending: false }).order('id', { ascending: false }).limit(20),
      ])
      return c.json({ config: unwrap(config), changes: unwrap(changes) })
    },
  )
  .openapi(
    endpoint({
      method: 'put',
      path: '/encouragement-drops/admin/config',
      tag,
      auth: 'superAdmin',
      body: ConfigPatch,
      summary: 'Change some configuration values (each a bounded positive integer); the change is recorded',
      response: Config,
    }),
    async (c) => {
      const patch = c.req.valid('json')
      if (Object.keys(patch).length === 0) throw badRequest('body: name at least one configuration value')
      const row = unwrap(await c.var.db.rpc('update_encouragement_config', { patch }).select(CONFIG_COLUMNS))
      return c.json(row)
    },
  )
  .openapi(
    endpoint({
      method: 'post',
      path: '/encouragement-drops/admin/process-engagement',
      tag,
      auth: 'superAdmin',
      summary: 'Run engagement processing now',
      response: Engagement,
    }),
    async (c) => c.json(await runEngagement(c.var.db)),
  )
