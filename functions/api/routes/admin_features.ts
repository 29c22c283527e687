// Super admins: what is switched on and how it is set (the admin console's Features page). Each
// provider configured or not (by the same checks the features use; never a value, only whether
// each variable is set), each daily cap and limit with where it is set (an environment variable,
// a database row, or a constant in the code) and its value, and the audited changes of the write
// budgets (private.setting_changes). The encouragement configuration has its own endpoints
// (/encouragement-drops/admin/config).
import { z } from '@hono/zod-openapi'
import { aiConfig } from '../../_shared/ai.ts'
import { dailyCapOverride } from '../../_shared/ai_usage.ts'
import { resendClient } from '../../_shared/email.ts'
import { optionalEnv } from '../../_shared/env.ts'
import { badRequest, unwrap } from '../../_shared/errors.ts'
import { expoConfigured } from '../../_shared/expo_push.ts'
import { musicConfig } from '../../_shared/music.ts'
import { MAX_TOP_N } from '../../_shared/optimizer/sweep.ts'
import { pageQuery } from '../../_shared/pagination.ts'
import { stripeClient } from '../../_shared/payments.ts'
import { webPushConfigured } from '../../_shared/web_push.ts'
import { endpoint, NextCursor, routeModule } from '../openapi.ts'

const tag = 'Admin'

const Provider = z.object({
  id: z.enum(['ai', 'stripe', 'resend', 'expo', 'web_push', 'music']),
  name: z.string(),
  configured: z.boolean(),
  variables: z.array(z.object({ name: z.string(), set: z.boolean(), required: z.boolean() }))
    .openapi({ description: 'The environment variables it reads: whether each is set (never the value)' }),
}).openapi('FeatureProvider')

const Limit = z.object({
  id: z.string(),
  area: z.string(),
  name: z.string(),
  value: z.number().nullable().openapi({ description: 'null: no limit' }),
  unit: z.string(),
  source: z.enum(['env', 'database', 'constant']),
  where: z.string().openapi({
    description: 'The variable, table (and row) or file that sets it: what to change',
  }),
  editable: z.boolean().openapi({ description: 'Changeable from the console (an audited endpoint)' }),
}).openapi('FeatureLimit')

const WriteRateLimit = z.object({
  subject_kind: z.enum(['user', 'address']),
  subject: z.string(),
  max_writes: z.number().int(),
  window_seconds: z.number().int(),
}).openapi('WriteRateLimit')

const SettingChange = z.object({
  id: z.number().int(),
  changed_by: z.string().nullable(),
  changed_by_email: z.string().nullable(),
  changed_at: z.string(),
  setting: z.string(),
  old_value: z.unknown().nullable(),
  new_value: z.unknown().nullable(),
}).openapi('SettingChange')

const NewWriteLimit = z.object({
  subject_kind: z.enum(['user', 'address']),
  subject: z.string().trim().min(1).max(100).default('*').openapi({
    description: "'*' (the default of its kind), a user id or an address",
  }),
  max_writes: z.number().int().min(0).max(1_000_000_000),
  window_seconds: z.number().int().min(1).max(86_400),
}).strict()

const set = (name: string) => !!optionalEnv(name)
const vars = (required: string[], optional: string[] = []) => [
  ...required.map((name) => ({ name, set: set(name), required: true })),
  ...optional.map((name) => ({ name, set: set(name), required: false })),
]

/** Each provider, configured by the very check its feature makes. */
export function providers(): z.infer<typeof Provider>[] {
  return [
    { id: 'ai', name: 'AI (OpenAI-compatible)', configured: aiConfig() !== null, variables: vars(['AI_API_KEY'], ['AI_BASE_URL', 'AI_TEXT_MODEL', 'AI_IMAGE_MODEL']) },
    {
      id: 'stripe',
      name: 'Stripe (payments)',
      configured: stripeClient() !== null,
      variables: vars(['STRIPE_SECRET_KEY'], ['STRIPE_WEBHOOK_SECRET', 'STRIPE_PRICE_IDS']),
    },
    { id: 'resend', name: 'Resend (e-mail)', configured: resendClient() !== null, variables: vars(['RESEND_API_KEY', 'EMAIL_FROM'], ['RESEND_WEBHOOK_SECRET']) },
    { id: 'expo', name: 'Expo (mobile push)', configured: expoConfigured(), variables: vars(['EXPO_ACCESS_TOKEN']) },
    {
      id: 'web_push',
      name: 'Web Push (VAPID)',
      configured: webPushConfigured(),
      variables: vars(['WEB_PUSH_VAPID_PUBLIC_KEY', 'WEB_PUSH_VAPID_PRIVATE_KEY', 'WEB_PUSH_SUBJECT']),
    },
    {
      id: 'music',
      name: 'Music (Spotify)',
      configured: musicConfig() !== null,
      variables: vars(['MUSIC_CLIENT_ID', 'MUSIC_REDIRECT_URI'], ['MUSIC_CLIENT_SECRET']),
    },
  ]
}

interface LimitRows {
  write_rate_limits: z.infer<typeof WriteRateLimit>[]
  ai_usage_types: { usage_type: string; category: string; daily_cap_per_user: number | null }[]
  email_daily_cap: number | null
}

function limits(rows: LimitRows): z.infer<typeof Limit>[] {
  const out: z.infer<typeof Limit>[] = []
  for (const t of rows.ai_usage_types) {
    const env = `AI_DAILY_CAP_${t.usage_type.toUpperCase()}`
    const override = dailyCapOverride(t.usage_type)
    out.push(
      override === null
        ? {
          id: `ai_daily_cap:${t.usage_type}`,
          area: 'AI',
          name: `AI calls per user per day: ${t.usage_type} (${t.category})`,
          value: t.daily_cap_per_user,
          unit: 'calls per user per UTC day',
          source: 'database',
          where: `private.ai_usage_types (usage_type '${t.usage_type}', daily_cap_per_user); ${env} overrides it`,
          editable: false,
        }
        : {
          id: `ai_daily_cap:${t.usage_type}`,
          area: 'AI',
          name: `AI calls per user per day: ${t.usage_type} (${t.category})`,
          value: override === 0 ? null : override,
          unit: 'calls per user per UTC day',
          source: 'env',
          where: env,
          editable: false,
        },
    )
  }
  for (const l of rows.write_rate_limits) {
    out.push({
      id: `write_rate_limits:${l.subject_kind}:${l.subject}`,
      area: 'Write rate limit',
      name: `Writes per ${l.window_seconds} s: ${l.subject === '*' ? `every ${l.subject_kind === 'user' ? 'signed-in user' : 'anonymous address'} (default)` : `${l.subject_kind} ${l.subject}`}`,
      value: l.max_writes,
      unit: `writes per ${l.window_seconds} seconds`,
      source: 'database',
      where: `private.write_rate_limits (${l.subject_kind}, '${l.subject}')`,
      editable: true,
    })
  }
  out.push(
    {
      id: 'email_daily_cap',
      area: 'E-mail',
      name: 'E-mails a user may send in any 24 hours',
      value: rows.email_daily_cap,
      unit: 'e-mails per user per 24 h',
      source: 'database',
      where: 'private.email_settings.daily_cap',
      editable: false,
    },
    {
      id: 'notification_daily_cap',
      area: 'Notifications',
      name: 'Push notifications per user per day (default; each user may set 1 to 500)',
      value: 20,
      unit: 'pushes per user per day',
      source: 'constant',
      where: 'public.notification_preferences.daily_cap default (supabase/schemas/notifications/preferences.sql)',
      editable: false,
    },
    {
      id: 'labs_outreach',
      area: 'Labs',
      name: 'Messages to one sponsor per sender',
      value: 5,
      unit: 'messages per 24 h',
      source: 'constant',
      where: 'private.labs_send_sponsor_message (supabase/schemas/labs/outreach.sql)',
      editable: false,
    },
    {
      id: 'labs_leaderboard',
      area: 'Labs',
      name: 'Competition leaderboard size (default)',
      value: 50,
      unit: 'rows',
      source: 'constant',
      where: 'GET /api/labs/competitions/{slug}/leaderboard (functions/api/routes/labs/competitions.ts)',
      editable: false,
    },
    {
      id: 'labs_optimizer_top_n',
      area: 'Labs',
      name: 'Optimizer: most results (top_n) and combinations per sweep',
      value: MAX_TOP_N,
      unit: 'results (50,000 combinations)',
      source: 'constant',
      where: 'functions/_shared/optimizer/sweep.ts (MAX_TOP_N)',
      editable: false,
    },
  )
  return out
}

const encouragementNote =
  'The encouragement configuration (daily allowance, bonus, window, custom per day) is read and changed ' +
  'through GET and PUT /api/encouragement-drops/admin/config, which records its own history.'

export const adminFeatureRoutes = routeModule()
  .openapi(
    endpoint({
      method: 'get',
      path: '/admin/features',
      tag,
      auth: 'superAdmin',
      summary: 'What is switched on and how it is set: providers, daily caps and limits (super admin)',
      description:
        'Each provider configured or not (and which of its variables are set, never their values); each cap ' +
        'and limit with its value and where it is set (env, database or constant). ' + encouragementNote,
      response: z.object({
        providers: z.array(Provider),
        limits: z.array(Limit),
        write_rate_limits: z.array(WriteRateLimit),
        kit_launch_date: z.string().nullable().openapi({ description: 'LABS_KIT_LAUNCH_DATE' }),
      }),
    }),
    async (c) => {
      const rows = unwrap(await c.var.db.rpc('admin_limit_settings')) as unknown as LimitRows
      return c.json({
        providers: providers(),
        limits: limits(rows),
        write_rate_limits: rows.write_rate_limits,
        kit_launch_date: optionalEnv('LABS_KIT_LAUNCH_DATE') ?? null,
      })
    },
  )
  .openapi(
    endpoint({
      method: 'put',
      path: '/admin/features/write-rate-limits',
      tag,
      auth: 'superAdmin',
      body: NewWriteLimit,
      summary: "Set a write budget: a kind's default (subject '*') or one user's or address's (super admin)",
      description:
        'Creates or changes the row of private.write_rate_limits; the change is audited (who, when, old and ' +
        'new value) and the audit row is the reply. In force from the next write.',
      response: z.object({ change: SettingChange }),
    }),
    async (c) => {
      const b = c.req.valid('json')
      const [row] = unwrap(await c.var.db.rpc('admin_set_write_rate_limit', b))
      return c.json({ change: { ...row, changed_by_email: c.var.caller.email } })
    },
  )
  .openapi(
    endpoint({
      method: 'get',
      path: '/admin/features/changes',
      tag,
      auth: 'superAdmin',
      query: z.object(pageQuery).strict(),
      summary: 'Settings changed from the console, newest first: who, when, old and new value (super admin)',
      response: z.object({ changes: z.array(SettingChange), next_cursor: NextCursor }),
    }),
    async (c) => {
      const q = c.req.valid('query')
      let before: { time: string; id: number } | null = null
      if (q.before) {
        try {
          const [time, id] = JSON.parse(atob(q.before))
          if (typeof time === 'string' && !isNaN(Date.parse(time)) && Number.isInteger(id)) before = { time, id }
        } catch { /* below */ }
        if (!before) throw badRequest('before: not a valid cursor')
      }
      const rows = unwrap(
        await c.var.db.rpc('admin_setting_changes', {
          page_size: q.limit + 1,
          before_time: before?.time ?? null,
          before_id: before?.id ?? null,
        }),
      )
      const changes = rows.slice(0, q.limit)
      const last = changes[changes.length - 1]
      return c.json({
        changes,
        next_cursor: rows.length > q.limit ? btoa(JSON.stringify([last.changed_at, last.id])) : null,
      })
    },
  )
