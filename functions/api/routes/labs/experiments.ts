// Experiments: classroom accounts, templates and the clones made of them, replication reports
// and the convergence they add up to, a template's safety level for classrooms, and the golden
// spec that makes a template curated.
import { z } from '@hono/zod-openapi'
import { unwrap } from '../../../_shared/errors.ts'
import { CALCULATOR_NAMES } from '../../../_shared/optimizer/calculators.ts'
import { decodeCursor, encodeCursor, pageQuery } from '../../../_shared/pagination.ts'
import { idParams } from '../../../_shared/validation.ts'
import { endpoint, NextCursor, routeModule } from '../../openapi.ts'
import { plausibleNumber, Row, tag, text } from './shared.ts'

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
    outputs: z.array(
      z.object({ label: text(200), value: plausibleNumber(), unit: z.string().max(50) }).strict(),
    ).min(1).max(50),
  }).strict(),
}).strict()
const Convergence = z.object({
  replications: z.number().int(),
  independent_confirmations: z.number().int(),
  mean: z.number().nullable(),
  stddev: z.number().nullable(),
  anomalies: z.number().int(),
  robust: z.boolean(),
}).openapi('LabsConvergence', {
  description:
    'Robust after 50 independent confirmations within 5 %; anomalies are > 2 standard deviations from the mean.',
})

export const experimentRoutes = routeModule()
  .openapi(
    endpoint({
      method: 'put',
      path: '/labs/admin/users/{id}/account-type',
      tag,
      auth: 'superAdmin',
      params: idParams('id'),
      body: z.object({ account_type: z.enum(['standard', 'classroom']) }).strict(),
      summary: "Set a user's account type: standard or classroom (super admin)",
      response: z.object({ user_id: z.string(), account_type: z.enum(['standard', 'classroom']) }),
    }),
    async (c) => {
      const id = c.req.valid('param').id
      const type = unwrap(
        await c.var.db.rpc('labs_set_account_type', {
          target_user_id: id,
          account_type: c.req.valid('json').account_type,
        }),
      )
      return c.json({ user_id: id, account_type: type as 'standard' | 'classroom' })
    },
  )
  .openapi(
    endpoint({
      method: 'get',
      path: '/labs/templates',
      tag,
      auth: 'bearer',
      query: z.object(pageQuery).strict(),
      summary:
        "Public templates (classroom accounts: classroom-safe ones only) and the caller's own, with convergence",
      response: z.object({ templates: z.array(Row), next_cursor: NextCursor }),
    }),
    async (c) => {
      const q = c.req.valid('query')
      const cursor = decodeCursor(q.before)
      const rows = unwrap(
        await c.var.db.rpc('labs_template_list', {
          page_size: q.limit + 1,
          before_time: cursor?.createdAt ?? null,
          before_id: cursor?.id ?? null,
        }),
      )
      const items = rows.slice(0, q.limit)
      return c.json({
        templates: items,
        next_cursor: rows.length > q.limit ? encodeCursor(items[items.length - 1]) : null,
      })
    },
  )
  .openapi(
    endpoint({
      method: 'post',
      path: '/labs/templates',
      tag,
      auth: 'bearer',
      body: NewTemplate,
      status: 201,
      summary: 'Create a template (adult_only; only super admins change its safety level)',
      response: z.object({ template: Row }),
    }),
    async (c) => {
      const row = unwrap(
        await c.var.db.from('labs_experiments').insert({ ...c.req.valid('json'), is_template: true }).select()
          .single(),
      )
      return c.json({ template: row }, 201)
    },
  )
  .openapi(
    endpoint({
      method: 'get',
      path: '/labs/templates/{id}',
      tag,
      auth: 'bearer',
      params: idParams('id'),
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
      method: 'post',
      path: '/labs/templates/{id}/clone',
      tag,
      auth: 'bearer',
      params: idParams('id'),
      status: 201,
      errors: [403],
      summary:
        "Clone a template into one's own experiment (classroom accounts: classroom-safe templates only)",
      response: z.object({ clone: Row }),
    }),
    async (c) => {
      const row = unwrap(await c.var.db.rpc('labs_clone_template', { template_id: c.req.valid('param').id }))
      return c.json({ clone: row }, 201)
    },
  )
  .openapi(
    endpoint({
      method: 'post',
      path: '/labs/clones/{id}/replications',
      tag,
      auth: 'bearer',
      params: idParams('id'),
      status: 201,
      body: z.object({ measured_value: plausibleNumber() }).strict(),
      summary:
        "Report a replication result (a measured value, magnitude at most 1e15) on one's own clone; confirmed when within 5 % of the prediction",
      description:
        'Scores in competitions (replication_confirmed or replication_refuted) only for the first replication a user ' +
        'reports on a template (deleting the clone keeps the report), and only after a scored clone of it (a curated public ' +
        'template of someone else: one a super admin gave a golden spec).',
      response: z.object({ replication: Row }),
    }),
    async (c) => {
      const row = unwrap(
        await c.var.db.rpc('labs_report_replication', {
          clone_id: c.req.valid('param').id,
          measured_value: c.req.valid('json').measured_value,
        }),
      )
      return c.json({ replication: row }, 201)
    },
  )
  .openapi(
    endpoint({
      method: 'delete',
      path: '/labs/admin/replications/{id}',
      tag,
      auth: 'superAdmin',
      params: idParams('id'),
      body: z.object({ reason: text(1000) }).strict(),
      summary:
        'Remove a replication (super admin) with a mandatory reason, recorded in labs_replication_removals',
      description:
        "The template's statistics and, from the next recompute, competition scores no longer count it. 404 unknown or already removed.",
      response: z.object({ removal: Row }),
    }),
    async (c) => {
      const removal = unwrap(
        await c.var.db.rpc('labs_remove_replication', {
          replication_id: c.req.valid('param').id,
          reason: c.req.valid('json').reason,
        }),
      )
      return c.json({ removal })
    },
  )
  .openapi(
    endpoint({
      method: 'post',
      path: '/labs/clones/{id}/complete',
      tag,
      auth: 'bearer',
      params: idParams('id'),
      errors: [409],
      body: z.object({ built: z.boolean().default(false) }).strict(),
      bodyRequired: false,
      summary: "Mark one's own clone completed (once); built: the kit was built too",
      description:
        'Competitions score a completion and a build once per user and template, on curated (golden-spec) public templates of someone else.',
      response: z.object({ clone: Row }),
    }),
    async (c) => {
      const row = unwrap(
        await c.var.db.rpc('labs_complete_clone', {
          clone_id: c.req.valid('param').id,
          built: c.req.valid('json')?.built ?? false,
        }),
      )
      return c.json({ clone: row })
    },
  )
  .openapi(
    endpoint({
      method: 'post',
      path: '/labs/admin/templates/{id}/promote-to-classroom',
      tag,
      auth: 'superAdmin',
      params: idParams('id'),
      body: z.object({ min_grade_band: GradeBand }).strict(),
      errors: [409],
      summary: "Set a template's safety_level to classroom_safe with its minimum grade band (super admin)",
      response: z.object({ template: Row }),
    }),
    async (c) => {
      const row = unwrap(
        await c.var.db.rpc('labs_set_template_safety', {
          template_id: c.req.valid('param').id,
          safety_level: 'classroom_safe',
          min_grade_band: c.req.valid('json').min_grade_band,
        }),
      )
      return c.json({ template: row })
    },
  )
  .openapi(
    endpoint({
      method: 'post',
      path: '/labs/admin/templates/{id}/reset-safety',
      tag,
      auth: 'superAdmin',
      params: idParams('id'),
      errors: [409],
      summary:
        'Reset a template to adult_only (super admin): new classroom clones are blocked, earlier reports stay',
      response: z.object({ template: Row }),
    }),
    async (c) => {
      const row = unwrap(
        await c.var.db.rpc('labs_set_template_safety', {
          template_id: c.req.valid('param').id,
          safety_level: 'adult_only',
        }),
      )
      return c.json({ template: row })
    },
  )
  .openapi(
    endpoint({
      method: 'post',
      path: '/labs/templates/{templateId}/golden-spec',
      tag,
      auth: 'superAdmin',
      params: idParams('templateId'),
      body: GoldenSpec,
      errors: [409],
      summary:
        "Store a golden spec as the template's predicted_values (super admin); its first output is the prediction",
      description:
        'The only way a template gets predicted_values, and what makes it curated: competitions score activity on curated templates only.',
      response: z.object({ template: Row }),
    }),
    async (c) => {
      const row = unwrap(
        await c.var.db.rpc('labs_set_golden_spec', {
          template_id: c.req.valid('param').templateId,
          spec: c.req.valid('json'),
        }),
      )
      return c.json({ template: row })
    },
  )
  .openapi(
    endpoint({
      method: 'get',
      path: '/labs/admin/anomalies',
      tag,
      auth: 'superAdmin',
      query: z.object(pageQuery).strict(),
      summary:
        'Flagged replications: more than 2 standard deviations from their template\'s mean, newest first (super admin)',
      description: 'Templates with at least 3 replications; each row names its template, the mean and the standard deviation it was judged by.',
      response: z.object({ anomalies: z.array(Row), next_cursor: NextCursor }),
    }),
    async (c) => {
      const q = c.req.valid('query')
      const cursor = decodeCursor(q.before)
      const rows = unwrap(
        await c.var.db.rpc('labs_flagged_anomalies', {
          page_size: q.limit + 1,
          before_time: cursor?.createdAt ?? null,
          before_id: cursor?.id ?? null,
        }),
      )
      const items = rows.slice(0, q.limit)
      return c.json({
        anomalies: items,
        next_cursor: rows.length > q.limit ? encodeCursor(items[items.length - 1]) : null,
      })
    },
  )
