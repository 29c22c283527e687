// The caller's daily 2-hour window (activity, start and end, time zone) and their private
// location, which the check-in review compares photos against.
import { z } from '@hono/zod-openapi'
import { badRequest, unwrap } from '../../../_shared/errors.ts'
import { endpoint, orNull, routeModule } from '../../openapi.ts'
import { ACTIVITY_TYPES, base, tag } from './shared.ts'

const hhmm = z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'must be a time HH:MM (00:00 to 23:59)')
export function isTimeZone(tz: string) {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz })
    return tz.length > 0 && !/^[+-]?\d/.test(tz)
  } catch {
    return false
  }
}
const timezone = z.string().trim().min(1).max(50).refine(
  isTimeZone,
  'must be an IANA time zone such as Europe/Paris',
)
const minutes = (t: string) => Number(t.slice(0, 2)) * 60 + Number(t.slice(3, 5))
/** At most 8 decimals: what numeric(10,8) / numeric(11,8) keep. */
const coordinate = (limit: number) =>
  z.number().min(-limit).max(limit).refine(
    (n) => Math.abs(n * 1e8 - Math.round(n * 1e8)) < 1e-4,
    'must have at most 8 decimals',
  )

const WindowSetup = z.object({
  activityType: z.enum(ACTIVITY_TYPES),
  customActivity: z.string().trim().min(1).max(100).optional(),
  windowStartTime: hhmm,
  windowEndTime: hhmm,
  timezone,
}).strict().superRefine((w, ctx) => {
  if ((minutes(w.windowEndTime) - minutes(w.windowStartTime) + 1440) % 1440 !== 120) {
    ctx.addIssue({
      code: 'custom',
      path: ['windowEndTime'],
      message: 'must be exactly 2 hours after windowStartTime',
    })
  }
  if (w.customActivity !== undefined && w.activityType !== 'other') {
    ctx.addIssue({ code: 'custom', path: ['customActivity'], message: 'only with activityType other' })
  }
}).openapi('WorkoutWindowSetup')

const LocationPatch = z.object({
  ipAddress: z.union([z.ipv4(), z.ipv6()]).optional(),
  latitude: coordinate(90).optional(),
  longitude: coordinate(180).optional(),
  city: z.string().trim().min(1).max(100).optional(),
  region: z.string().trim().min(1).max(100).optional(),
  country: z.string().regex(/^[A-Za-z]{2}$/, 'must be a two-letter country code').optional(),
  timezone: timezone.optional(),
}).strict().openapi('WorkoutLocationPatch')

const WindowRow = z.object({
  user_id: z.string(),
  activity_type: z.enum(ACTIVITY_TYPES),
  custom_activity: z.string().nullable(),
  window_start_time: z.string(),
  window_end_time: z.string(),
  timezone: z.string(),
  is_active: z.boolean(),
  created_at: z.string(),
  updated_at: z.string(),
}).openapi('WorkoutWindow')
const LocationRow = z.object({
  user_id: z.string(),
  ip_address: z.string().nullable(),
  latitude: z.number().nullable(),
  longitude: z.number().nullable(),
  city: z.string().nullable(),
  region: z.string().nullable(),
  country: z.string().nullable(),
  timezone: z.string().nullable(),
  last_updated: z.string(),
}).openapi('WorkoutLocation')

export const windowRoutes = routeModule()
  .openapi(
    endpoint({
      method: 'post',
      path: `${base}/setup`,
      tag,
      auth: 'bearer',
      body: WindowSetup,
      summary: "Set up (or replace) the caller's 2-hour daily window",
      response: z.object({ window: WindowRow, message: z.string() }),
    }),
    async (c) => {
      const b = c.req.valid('json')
      const window = unwrap(
        await c.var.db.rpc('setup_workout_window', {
          activity_type: b.activityType,
          custom_activity: b.customActivity ?? null,
          window_start_time: b.windowStartTime,
          window_end_time: b.windowEndTime,
          timezone: b.timezone,
        }),
      )
      return c.json({ window, message: 'Workout window saved' })
    },
  )
  .openapi(
    endpoint({
      method: 'get',
      path: `${base}/my-window`,
      tag,
      auth: 'bearer',
      summary: "The caller's window and location",
      response: z.object({ window: orNull(WindowRow), location: orNull(LocationRow) }),
    }),
    async (c) => {
      const me = c.var.caller.id
      const [window, location] = await Promise.all([
        c.var.db.from('workout_windows').select('*').eq('user_id', me).maybeSingle(),
        c.var.db.from('workout_locations').select('*').eq('user_id', me).maybeSingle(),
      ])
      return c.json({ window: unwrap(window), location: unwrap(location) })
    },
  )
  .openapi(
    endpoint({
      method: 'put',
      path: `${base}/update-location`,
      tag,
      auth: 'bearer',
      body: LocationPatch,
      summary: "Set the caller's location (fields given replace the stored ones); private to the caller",
      response: z.object({ message: z.string(), location: LocationRow }),
    }),
    async (c) => {
      const patch = c.req.valid('json')
      if (Object.keys(patch).length === 0) throw badRequest('body: give at least one location field')
      if (patch.country) patch.country = patch.country.toUpperCase()
      const location = unwrap(await c.var.db.rpc('update_workout_location', { patch }))
      return c.json({ message: 'Location updated', location })
    },
  )
