// How the caller wants to be told: per type and channel on/off, quiet hours, a daily cap, the
// e-mail digest. One row per user (made with the profile), read and changed with the caller's
// token; the database checks every field (supabase/schemas/notifications/preferences.sql),
// PostgREST alike.
import { z } from '@hono/zod-openapi'
import { unwrap } from '../../../_shared/errors.ts'
import { endpoint, routeModule } from '../../openapi.ts'

const tag = 'Notifications'

const Channels = z.object({ push: z.boolean().optional(), email: z.boolean().optional() }).strict()
const TYPE = /^[a-z][a-z_]*(\.[a-z][a-z_]*)+$/
const HHMM = z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'must be a time HH:MM')

const Preferences = z.object({
  push_enabled: z.boolean(),
  types: z.record(z.string(), Channels).describe(
    'Per type overrides, e.g. {"workout.battle_update": {"push": false}}; unnamed types and channels are on',
  ),
  quiet_hours: z.object({ start: z.string(), end: z.string() }).nullable().describe(
    'Local HH:MM; pushes in between wait until the end (a reminder whose moment passes is dropped)',
  ),
  timezone: z.string().nullable().describe("IANA zone; null: the workout window's zone, else UTC"),
  daily_cap: z.number().int().describe('At most this many notifications pushed per local day'),
  email_digest: z.boolean().describe('A daily e-mail of unread notifications'),
  digest_hour: z.number().int().describe('Local hour (0-23) the digest goes out'),
  updated_at: z.string(),
}).openapi('NotificationPreferences')

const PreferencesPatch = z.object({
  push_enabled: z.boolean().optional(),
  types: z.record(z.string().max(100).regex(TYPE, 'must be a notification type (area.event)'), Channels)
    .optional()
    .describe('Replaces the stored overrides'),
  quiet_hours: z.object({ start: HHMM, end: HHMM }).strict().nullable().optional().describe(
    'null: no quiet hours',
  ),
  timezone: z.string().min(1).max(50).nullable().optional(),
  daily_cap: z.number().int().min(1).max(500).optional(),
  email_digest: z.boolean().optional(),
  digest_hour: z.number().int().min(0).max(23).optional(),
}).strict()

const COLUMNS =
  'push_enabled, types, quiet_hours_start, quiet_hours_end, timezone, daily_cap, email_digest, digest_hour, updated_at'
const hhmm = (t: string) => t.slice(0, 5)
// deno-lint-ignore no-explicit-any
const shape = (p: any): z.infer<typeof Preferences> => ({
  push_enabled: p.push_enabled,
  types: p.types ?? {},
  quiet_hours: p.quiet_hours_start && p.quiet_hours_end
    ? { start: hhmm(p.quiet_hours_start), end: hhmm(p.quiet_hours_end) }
    : null,
  timezone: p.timezone,
  daily_cap: p.daily_cap,
  email_digest: p.email_digest,
  digest_hour: p.digest_hour,
  updated_at: p.updated_at,
})

export const preferenceRoutes = routeModule()
  .openapi(
    endpoint({
      method: 'get',
      path: '/notifications/preferences',
      tag,
      auth: 'bearer',
      response: z.object({ preferences: Preferences }),
      summary: "The caller's notification preferences",
    }),
    async (c) => {
      const row = unwrap(
        await c.var.db.from('notification_preferences').select(COLUMNS).eq('user_id', c.var.caller.id)
          .single(),
      )
      return c.json({ preferences: shape(row) })
    },
  )
  .openapi(
    endpoint({
      method: 'put',
      path: '/notifications/preferences',
      tag,
      auth: 'bearer',
      body: PreferencesPatch,
      response: z.object({ preferences: Preferences }),
      summary: "Change the caller's notification preferences",
      description:
        'Fields left out stay as they are. Defaults for a new user: push on, every type on, quiet hours ' +
        '22:00-07:00, daily cap 20, no e-mail digest (digest hour 8).',
    }),
    async (c) => {
      const b = c.req.valid('json')
      const patch: Record<string, unknown> = {}
      for (
        const k of ['push_enabled', 'types', 'timezone', 'daily_cap', 'email_digest', 'digest_hour'] as const
      ) {
        if (b[k] !== undefined) patch[k] = b[k]
      }
      if (b.quiet_hours !== undefined) {
        patch.quiet_hours_start = b.quiet_hours?.start ?? null
        patch.quiet_hours_end = b.quiet_hours?.end ?? null
      }
      const query = Object.keys(patch).length
        ? c.var.db.from('notification_preferences').update(patch).eq('user_id', c.var.caller.id).select(
          COLUMNS,
        ).single()
        : c.var.db.from('notification_preferences').select(COLUMNS).eq('user_id', c.var.caller.id).single()
      return c.json({ preferences: shape(unwrap(await query)) })
    },
  )
