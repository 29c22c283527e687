// Workout windows (SPEC "the service", issue 11): windows and locations, daily chains, squads
// and teams, photo check-ins and chips, weekly battles, the daily mosaic and synthetic users.
// Every rule lives in SQL (supabase/migrations/*_workout.sql); a route validates, stores a
// photo or draws a PNG where needed, calls one function with the caller's token and shapes
// the reply.
import { z } from '@hono/zod-openapi'
import { type Db, serviceDb } from '../../_shared/db.ts'
import { badRequest, HttpError, unavailable, unwrap } from '../../_shared/errors.ts'
import { removeObjects, StorageError, uploadObject } from '../../_shared/storage.ts'
import { idParams, isoDate } from '../../_shared/validation.ts'
import { drawMosaic, layoutMosaic, type Participant } from '../../_shared/workout_mosaic.ts'
import {
  PHOTO_EXTENSIONS,
  PHOTO_LIMIT_BYTES,
  PHOTO_TYPES,
  preparePhoto,
  readPhotoFacts,
  sniffImageType,
  UnreadablePhoto,
} from '../../_shared/workout_photo.ts'
import { endpoint, Message, routeModule } from '../openapi.ts'

const tag = 'Workout windows'
const base = '/workout-window'
export const ACTIVITY_TYPES = ['cardio', 'strength', 'walk', 'meditation', 'reading', 'homework', 'other'] as const
export const CHECKIN_BUCKET = 'workout-checkins'
export const MOSAIC_BUCKET = 'workout-mosaics'

// ---- Schemas --------------------------------------------------------------------------------

const hhmm = z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'must be a time HH:MM (00:00 to 23:59)')
export function isTimeZone(tz: string) {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz })
    return tz.length > 0 && !/^[+-]?\d/.test(tz)
  } catch {
    return false
  }
}
const timezone = z.string().trim().min(1).max(50).refine(isTimeZone, 'must be an IANA time zone such as Europe/Paris')
const minutes = (t: string) => Number(t.slice(0, 2)) * 60 + Number(t.slice(3, 5))
/** At most 8 decimals: what numeric(10,8) / numeric(11,8) keep. */
const coordinate = (limit: number) =>
  z.number().min(-limit).max(limit).refine((n) => Math.abs(n * 1e8 - Math.round(n * 1e8)) < 1e-4, 'must have at most 8 decimals')

const WindowSetup = z.object({
  activityType: z.enum(ACTIVITY_TYPES),
  customActivity: z.string().trim().min(1).max(100).optional(),
  windowStartTime: hhmm,
  windowEndTime: hhmm,
  timezone,
}).strict().superRefine((w, ctx) => {
  if ((minutes(w.windowEndTime) - minutes(w.windowStartTime) + 1440) % 1440 !== 120) {
    ctx.addIssue({ code: 'custom', path: ['windowEndTime'], message: 'must be exactly 2 hours after windowStartTime' })
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

const UserCard = z.object({
  id: z.string(),
  name: z.string().nullable(),
  avatarUrl: z.string().nullable(),
  isAi: z.boolean(),
  window: z.object({
    activityType: z.string(),
    customActivity: z.string().nullable(),
    windowStartTime: z.string(),
    windowEndTime: z.string(),
    timezone: z.string(),
  }).nullable(),
}).openapi('WorkoutUser', { description: 'What others see of a participant: never a location.' })
const Checkin = z.object({
  id: z.string(),
  userId: z.string(),
  chainId: z.string().nullable(),
  date: z.string(),
  activityType: z.string(),
  photoUrl: z.string(),
  photoTimestamp: z.string(),
  locationLat: z.number().nullable(),
  locationLng: z.number().nullable(),
  status: z.enum(['pending', 'verified', 'rejected']),
  reviewReason: z.string().nullable(),
  chainContinued: z.boolean(),
  streakDays: z.number().int(),
  battleChipsEarned: z.number().int(),
  createdAt: z.string(),
}).openapi('WorkoutCheckin')
const Squad = z.object({
  id: z.string(),
  date: z.string(),
  teamColor: z.enum(['red', 'blue']),
  user1: UserCard,
  user2: UserCard,
  user3: UserCard.nullable(),
}).openapi('WorkoutSquad')
const TeamStats = z.object({
  totalMembers: z.number().int(),
  completed: z.number().int(),
  failed: z.number().int(),
  pending: z.number().int(),
  completionRate: z.number().describe('Percent of members completed, one decimal'),
  totalChips: z.number().int(),
})
const BattleTeam = z.object({
  totalChips: z.number().int(),
  robotPower: z.number().int().describe('floor(chips*10 + members*5 + (chips/members)*20)'),
  memberCount: z.number().int(),
  members: z.array(z.object({ userId: z.string(), chips: z.number().int(), name: z.string().nullable(), avatarUrl: z.string().nullable(), isAi: z.boolean() })),
})
const BattleResult = z.object({
  redRobotPower: z.number().int(),
  blueRobotPower: z.number().int(),
  badGuyPower: z.number().int(),
  rounds: z.array(z.object({ round: z.number().int(), redDamage: z.number().int(), blueDamage: z.number().int(), badGuyDamage: z.number().int() })),
  redTotalDamage: z.number().int(),
  blueTotalDamage: z.number().int(),
  finalOutcome: z.string(),
})
const Battle = z.object({
  id: z.string(),
  weekStartDate: z.string(),
  weekEndDate: z.string(),
  redTeamChips: z.number().int(),
  blueTeamChips: z.number().int(),
  redTeamRobotPower: z.number().int(),
  blueTeamRobotPower: z.number().int(),
  battleStatus: z.enum(['pending', 'in_progress', 'completed']),
  winner: z.enum(['red', 'blue', 'tie']).nullable(),
  battleResult: BattleResult.nullable(),
  createdAt: z.string(),
  executedAt: z.string().nullable(),
}).openapi('WorkoutBattle')
const Mosaic = z.object({
  imageUrl: z.string(),
  date: z.string(),
  sections: z.array(z.object({
    userId: z.string(),
    userName: z.string(),
    status: z.enum(['completed', 'failed', 'pending']),
    coordinates: z.object({ x: z.number().int(), y: z.number().int(), width: z.number().int(), height: z.number().int() }),
    teamColor: z.enum(['red', 'blue']),
  })),
  stats: z.object({ totalParticipants: z.number().int(), completed: z.number().int(), failed: z.number().int(), pending: z.number().int() }),
  updatedAt: z.string(),
}).openapi('WorkoutMosaic')
const AiUser = z.object({
  id: z.string(),
  fullName: z.string().nullable(),
  isAi: z.boolean(),
  isActive: z.boolean(),
  region: z.string(),
  city: z.string(),
  state: z.string().nullable(),
  timezone: z.string(),
  activityType: z.string(),
  windowStartTime: z.string(),
  windowEndTime: z.string(),
  checkInProbability: z.number(),
  createdAt: z.string(),
}).openapi('WorkoutAiUser')

const pathDate = (name: string) => isoDate().openapi({ param: { name, in: 'path' }, example: '2026-11-23' })
const DateParams = z.object({ date: pathDate('date') })
const WeekParams = z.object({ weekStartDate: pathDate('weekStartDate') })
const PageQuery = {
  limit: z.coerce.number().int().min(1).max(200).default(100).openapi({ description: 'Page size, 1..200' }),
  before: z.iso.datetime({ offset: true }).optional().openapi({ description: 'createdAt of the last item of the previous page' }),
}

const GenerateBody = z.object({ date: isoDate().optional() }).strict()
const ChainRun = z.object({
  date: z.string(),
  participants: z.number().int(),
  created: z.number().int(),
  relinked: z.number().int(),
  squadsCreated: z.number().int(),
}).openapi('WorkoutChainRun')

// Documents the form; the handler reads and checks it (files are not zod's to judge).
const CheckinForm = z.object({
  photo: z.unknown().openapi({
    type: 'string', format: 'binary',
    description: 'JPEG, PNG, GIF or WEBP (read from the bytes), at most 10 MB, 25 megapixels a frame, 40 in all, 50 frames',
  }),
  activityType: z.unknown().openapi({ type: 'string', description: '1..50 characters' }),
  latitude: z.unknown().optional().openapi({ type: 'number', description: 'Decimal degrees -90..90, at most 8 decimals' }),
  longitude: z.unknown().optional().openapi({ type: 'number', description: 'Decimal degrees -180..180, at most 8 decimals' }),
}).openapi('WorkoutCheckinForm')

const ReviewQuery = z.object({
  status: z.enum(['pending', 'verified', 'rejected']).default('pending'),
  ...PageQuery,
}).strict()
const VerifyBody = z.object({ reason: z.string().trim().min(1).max(500).optional() }).strict()
const RejectBody = z.object({ reason: z.string().trim().min(1).max(500) }).strict()

const Weights = z.record(z.string().max(50), z.number().min(0).max(1_000_000))
const AiGenerate = z.object({
  count: z.number().int().min(1).max(1000),
  config: z.object({
    regions: Weights.optional(),
    activities: Weights.optional(),
    windows: Weights.optional().describe('Start time HH:MM to weight; each window is 2 hours'),
    checkInProbability: z.number().min(0).max(1).optional(),
  }).strict().optional(),
}).strict().openapi('WorkoutAiGenerate')
const ToggleBody = z.object({ isActive: z.boolean() }).strict()

// ---- Helpers --------------------------------------------------------------------------------

const rpc = async <T>(db: Db, fn: string, args: Record<string, unknown>) => unwrap(await db.rpc(fn, args)) as T

async function form(c: { req: { formData(): Promise<FormData> } }): Promise<FormData> {
  try {
    return await c.req.formData()
  } catch {
    throw badRequest('body: must be multipart/form-data with a photo file')
  }
}

function optionalCoordinate(value: FormDataEntryValue | null, field: string, limit: number): number | null {
  if (value === null || value === '') return null
  if (typeof value !== 'string' || !/^-?\d{1,3}(\.\d{1,8})?$/.test(value.trim())) {
    throw badRequest(`${field}: must be a number with at most 8 decimals`)
  }
  const n = Number(value)
  if (Math.abs(n) > limit) throw badRequest(`${field}: must be between -${limit} and ${limit}`)
  return n
}

/** Reads and checks the multipart check-in; 400 naming the field before anything is stored. */
async function readCheckinForm(c: { req: { formData(): Promise<FormData> } }) {
  const data = await form(c)
  for (const key of data.keys()) {
    if (!['photo', 'activityType', 'latitude', 'longitude'].includes(key)) throw badRequest(`${key}: not an accepted field`)
  }
  const photo = data.get('photo')
  if (!(photo instanceof File)) throw badRequest('photo: is required (a file)')
  if (photo.size === 0) throw badRequest('photo: must not be empty')
  if (photo.size > PHOTO_LIMIT_BYTES) throw badRequest('photo: must be at most 10 MB')
  const activity = data.get('activityType')
  if (typeof activity !== 'string' || activity.trim() === '') throw badRequest('activityType: is required')
  if (activity.trim().length > 50) throw badRequest('activityType: must be at most 50 characters')
  const latitude = optionalCoordinate(data.get('latitude'), 'latitude', 90)
  const longitude = optionalCoordinate(data.get('longitude'), 'longitude', 180)
  if ((latitude === null) !== (longitude === null)) throw badRequest('latitude: give both latitude and longitude')
  const bytes = new Uint8Array(await photo.arrayBuffer())
  const type = sniffImageType(bytes)
  if (!type) throw badRequest(`photo: must be a ${PHOTO_TYPES.map((t) => t.slice(6).toUpperCase()).join(', ')} image`)
  const declared = photo.type.toLowerCase()
  if ((PHOTO_TYPES as readonly string[]).includes(declared) && declared !== type) {
    throw badRequest(`photo: the file is ${type}, not ${declared}`)
  }
  return { bytes, type, activityType: activity.trim(), latitude, longitude }
}

function storageFailure(e: unknown): never {
  if (e instanceof StorageError) {
    console.error(e.message)
    if (e.status === 413) throw badRequest('photo: must be at most 10 MB')
    throw unavailable('Photo storage is unavailable; try again shortly')
  }
  throw e
}

/** Draws, stores and records a date's mosaic; the image it replaces is deleted afterwards. */
async function generateMosaic(db: Db, date: string) {
  const participants = await rpc<Participant[]>(db, 'workout_mosaic_participants', { target: date })
  const layout = layoutMosaic(participants)
  const png = drawMosaic(layout)
  const name = `${date}/${crypto.randomUUID()}.png`
  const url = await uploadObject(MOSAIC_BUCKET, name, png, 'image/png').catch(storageFailure)
  const saved = await db.rpc('save_workout_mosaic', { target: date, image_url: url, object_name: name, sections: layout.sections })
  if (saved.error) {
    await removeObjects(MOSAIC_BUCKET, [name])
    throw unwrap(saved)
  }
  const { mosaic, replacedObject } = saved.data as { mosaic: unknown; replacedObject: string | null }
  if (replacedObject) await removeObjects(MOSAIC_BUCKET, [replacedObject])
  return mosaic
}

/** The stock image synthetic users check in with (stored once; a repeat is refused and ignored). */
async function ensureStockPhoto() {
  const participant: Participant = { userId: 'stock', userName: 'stock', teamColor: 'blue', status: 'completed' }
  const png = drawMosaic(layoutMosaic([participant]))
  await uploadObject(CHECKIN_BUCKET, 'stock/ai-checkin.png', png, 'image/png').catch((e) => {
    if (!(e instanceof StorageError) || (e.status !== 409 && e.status !== 400)) console.error('stock photo:', e)
  })
}

const logRun = (job: string, result: unknown) => console.log(JSON.stringify({ job, at: new Date().toISOString(), result }))

// ---- Routes ---------------------------------------------------------------------------------

export const workoutRoutes = routeModule()
  .openapi(
    endpoint({
      method: 'post', path: `${base}/setup`, tag, auth: 'bearer', body: WindowSetup,
      summary: 'Set up (or replace) the caller\'s 2-hour daily window',
      response: z.object({ window: WindowRow, message: z.string() }),
    }),
    async (c) => {
      const b = c.req.valid('json')
      const window = await rpc(c.var.db, 'setup_workout_window', {
        activity_type: b.activityType,
        custom_activity: b.customActivity ?? null,
        window_start_time: b.windowStartTime,
        window_end_time: b.windowEndTime,
        timezone: b.timezone,
      })
      return c.json({ window, message: 'Workout window saved' } as never)
    },
  )
  .openapi(
    endpoint({
      method: 'get', path: `${base}/my-window`, tag, auth: 'bearer', summary: 'The caller\'s window and location',
      response: z.object({ window: WindowRow.nullable(), location: LocationRow.nullable() }),
    }),
    async (c) => {
      const me = c.var.caller.id
      const [window, location] = await Promise.all([
        c.var.db.from('workout_windows').select('*').eq('user_id', me).maybeSingle(),
        c.var.db.from('workout_locations').select('*').eq('user_id', me).maybeSingle(),
      ])
      return c.json({ window: unwrap(window), location: unwrap(location) } as never)
    },
  )
  .openapi(
    endpoint({
      method: 'put', path: `${base}/update-location`, tag, auth: 'bearer', body: LocationPatch,
      summary: 'Set the caller\'s location (fields given replace the stored ones); private to the caller',
      response: z.object({ message: z.string(), location: LocationRow }),
    }),
    async (c) => {
      const patch = c.req.valid('json')
      if (Object.keys(patch).length === 0) throw badRequest('body: give at least one location field')
      if (patch.country) patch.country = patch.country.toUpperCase()
      const location = await rpc(c.var.db, 'update_workout_location', { patch })
      return c.json({ message: 'Location updated', location } as never)
    },
  )
  .openapi(
    endpoint({
      method: 'get', path: `${base}/chain/{date}`, tag, auth: 'bearer', params: DateParams,
      summary: 'The caller\'s chain on a date: neighbours, team, squad and their check-ins',
      response: z.object({
        chain: z.object({
          id: z.string(),
          date: z.string(),
          beforeUser: UserCard.nullable(),
          currentUser: UserCard,
          afterUser: UserCard.nullable(),
          teamColor: z.enum(['red', 'blue']),
          squad: Squad.nullable(),
        }),
        checkins: z.array(Checkin),
      }),
    }),
    async (c) => c.json(await rpc(c.var.db, 'workout_chain', { target: c.req.valid('param').date }) as never),
  )
  .openapi(
    endpoint({
      method: 'get', path: `${base}/squad/{date}`, tag, auth: 'bearer', params: DateParams,
      summary: 'The caller\'s squad on a date and its check-ins',
      response: z.object({ squad: Squad, checkins: z.array(Checkin) }),
    }),
    async (c) => c.json(await rpc(c.var.db, 'workout_squad', { target: c.req.valid('param').date }) as never),
  )
  .openapi(
    endpoint({
      method: 'get', path: `${base}/team-stats/{date}`, tag, auth: 'bearer', params: DateParams,
      summary: 'Red and blue team totals on a date',
      description: 'failed: the window has ended without a check-in; pending: not yet (or not started).',
      response: z.object({ redTeam: TeamStats, blueTeam: TeamStats }),
    }),
    async (c) => c.json(await rpc(c.var.db, 'workout_team_stats', { target: c.req.valid('param').date }) as never),
  )
  .openapi(
    endpoint({
      method: 'post', path: `${base}/checkin`, tag, auth: 'bearer', multipart: CheckinForm, status: 201,
      summary: 'Check in with a photo (one per user per day)',
      description: 'Chips: 1, +1 when the before user checked in earlier that day, +0.5 in the first 30 minutes ' +
        'of the window, +2 from the seventh consecutive day, floored. The photo is stored without its metadata ' +
        '(EXIF, XMP, IPTC, comments), turned upright. It verifies when its EXIF capture time is inside the window ' +
        '± 30 minutes, the server received it inside the window ± 30 minutes, at most 120 minutes (and not more than ' +
        '5 minutes before) the capture, within 50 km, and its picture (compared by a perceptual hash, so a ' +
        're-encoded copy counts) served no check-in before; otherwise it waits for review. 400 photo: unreadable, ' +
        'or larger than 25 megapixels a frame, 40 over all frames or 50 frames. 409: already checked in for the ' +
        'day (a time-zone change applies from the next local day).',
      errors: [409],
      response: z.object({
        checkin: Checkin,
        battleChipsEarned: z.number().int(),
        chainStatus: z.enum(['continued', 'broken']),
        nextUserNotified: z.boolean(),
      }),
    }),
    async (c) => {
      const input = await readCheckinForm(c)
      // What the review needs is read from the original; what is stored carries no metadata.
      const facts = await readPhotoFacts(input.bytes, input.type)
      const { stored, dhash, dhashAsSent } = await preparePhoto(input.bytes, input.type).catch((e) => {
        throw e instanceof UnreadablePhoto ? badRequest(`photo: ${e.message}`) : e
      })
      const name = `${c.var.caller.id}/${crypto.randomUUID()}.${PHOTO_EXTENSIONS[input.type]}`
      const url = await uploadObject(CHECKIN_BUCKET, name, stored, input.type).catch(storageFailure)
      // The facts go to a table only the service role writes; the check-in RPC reads them there.
      const registered = await serviceDb().rpc('register_workout_photo', {
        object_name: name,
        owner_id: c.var.caller.id,
        photo_url: url,
        dhash,
        dhash_as_sent: dhashAsSent,
        taken_local: facts.takenLocal,
        offset_minutes: facts.offsetMinutes,
        latitude: facts.latitude,
        longitude: facts.longitude,
      })
      const result = registered.error ? registered : await c.var.db.rpc('workout_checkin', {
        activity_type: input.activityType,
        photo_object: name,
        latitude: input.latitude,
        longitude: input.longitude,
      })
      if (result.error) {
        await removeObjects(CHECKIN_BUCKET, [name]) // a refused check-in keeps no photo
        unwrap(result)
      }
      return c.json(result.data as never, 201)
    },
  )
  .openapi(
    endpoint({
      method: 'get', path: `${base}/checkin/{date}`, tag, auth: 'bearer', params: DateParams,
      summary: 'The caller\'s check-in on a date and the day status',
      response: z.object({ checkin: Checkin.nullable(), status: z.enum(['pending', 'completed', 'failed', 'not_started']) }),
    }),
    async (c) => c.json(await rpc(c.var.db, 'my_workout_checkin', { target: c.req.valid('param').date }) as never),
  )
  .openapi(
    endpoint({
      method: 'get', path: `${base}/checkins/{date}`, tag, auth: 'bearer', params: DateParams,
      query: z.object(PageQuery).strict(),
      summary: 'A page of the date\'s check-ins (newest first) and the day\'s participant stats',
      response: z.object({
        checkins: z.array(Checkin.extend({ user: UserCard })),
        stats: z.object({ total: z.number().int(), completed: z.number().int(), failed: z.number().int() }),
      }),
    }),
    async (c) => {
      const q = c.req.valid('query')
      return c.json(await rpc(c.var.db, 'workout_day_checkins', {
        target: c.req.valid('param').date, page_size: q.limit, before_created_at: q.before ?? null,
      }) as never)
    },
  )
  .openapi(
    endpoint({
      method: 'post', path: `${base}/generate-chains`, tag, auth: 'bearer', body: GenerateBody, bodyRequired: false,
      summary: 'Generate (or complete) the chains of a date, today in the caller\'s window\'s zone by default',
      description: 'Repeatable: adds users who set up since, keeps links a check-in counted on, never duplicates. ' +
        'Users: today and tomorrow in their window\'s time zone (403 otherwise); super admins: any date within a ' +
        'year of today (400 beyond).',
      errors: [403],
      response: ChainRun,
    }),
    async (c) => {
      const { date } = c.req.valid('json') ?? {}
      return c.json(await rpc(c.var.db, 'generate_workout_chains', { target: date ?? null }) as never)
    },
  )
  .openapi(
    endpoint({
      method: 'post', path: `${base}/cron/generate-chains`, tag, auth: { cron: 'workout-window' },
      summary: 'Daily chain generation (0 0 * * *)', response: ChainRun,
    }),
    async (c) => {
      console.log(JSON.stringify({ job: 'workout-generate-chains', event: 'start' }))
      const result = await rpc(c.var.db, 'generate_workout_chains', { target: null })
      logRun('workout-generate-chains', result)
      return c.json(result as never)
    },
  )
  .openapi(
    endpoint({
      method: 'get', path: `${base}/mosaic/{date}`, tag, auth: 'bearer', params: DateParams,
      summary: 'The mosaic of a date', response: z.object({ mosaic: Mosaic }),
    }),
    async (c) => {
      const { date } = c.req.valid('param')
      const row = unwrap(await c.var.db.from('workout_mosaics').select('*').eq('date', date).maybeSingle()) as
        | Record<string, any>
        | null
      if (!row) throw new HttpError(404, `No mosaic for ${date} yet`)
      return c.json({
        mosaic: {
          imageUrl: row.image_url,
          date: row.date,
          sections: row.sections,
          stats: { totalParticipants: row.total_participants, completed: row.completed_count, failed: row.failed_count, pending: row.pending_count },
          updatedAt: row.updated_at,
        },
      } as never)
    },
  )
  .openapi(
    endpoint({
      method: 'post', path: `${base}/mosaic/generate/{date}`, tag, auth: { adminOrCron: 'workout-window' }, params: DateParams,
      summary: 'Draw (or redraw) a date\'s mosaic PNG and store it', response: z.object({ mosaic: Mosaic, message: z.string() }),
    }),
    async (c) => {
      const { date } = c.req.valid('param')
      const mosaic = await generateMosaic(c.var.db, date)
      logRun('workout-mosaic', { date })
      return c.json({ mosaic, message: `Mosaic for ${date} generated` } as never)
    },
  )
  .openapi(
    endpoint({
      method: 'get', path: `${base}/battle/week/{weekStartDate}`, tag, auth: 'bearer', params: WeekParams,
      summary: 'A week\'s battle with live team totals (weekStartDate must be a Monday)',
      response: z.object({
        battle: Battle.nullable(),
        redTeam: BattleTeam,
        blueTeam: BattleTeam,
        dailyStats: z.array(z.object({ date: z.string(), redTeamChips: z.number().int(), blueTeamChips: z.number().int() })),
      }),
    }),
    async (c) => c.json(await rpc(c.var.db, 'workout_battle_week', { week_start: c.req.valid('param').weekStartDate }) as never),
  )
  .openapi(
    endpoint({
      method: 'post', path: `${base}/battle/execute/{weekStartDate}`, tag, auth: { adminOrCron: 'workout-window' },
      params: WeekParams, summary: 'Run a week\'s battle (once; deterministic, seeded by the week)',
      response: z.object({ battle: Battle, winner: z.enum(['red', 'blue', 'tie']), battleResult: BattleResult, alreadyExecuted: z.boolean() }),
    }),
    async (c) => {
      const result = await rpc(c.var.db, 'execute_workout_battle', { week_start: c.req.valid('param').weekStartDate })
      logRun('workout-execute-battle', { week: c.req.valid('param').weekStartDate })
      return c.json(result as never)
    },
  )
  .openapi(
    endpoint({
      method: 'get', path: `${base}/battle/history`, tag, auth: 'bearer',
      query: z.object({ limit: z.coerce.number().int().min(1).max(104).default(52) }).strict(),
      summary: 'Battles, newest first, and the caller\'s stats',
      response: z.object({
        battles: z.array(Battle),
        userStats: z.object({ totalChipsContributed: z.number().int(), battlesWon: z.number().int(), longestChain: z.number().int() }),
      }),
    }),
    async (c) => c.json(await rpc(c.var.db, 'workout_battle_history', { page_size: c.req.valid('query').limit }) as never),
  )
  .openapi(
    endpoint({
      method: 'post', path: `${base}/battle/cron/generate-weekly`, tag, auth: { cron: 'workout-window' },
      summary: 'Weekly battle generation (0 0 * * 1)', response: z.object({ battle: Battle, created: z.boolean() }),
    }),
    async (c) => {
      console.log(JSON.stringify({ job: 'workout-weekly-battle', event: 'start' }))
      const result = await rpc(c.var.db, 'generate_weekly_battle', { week_start: null })
      logRun('workout-weekly-battle', result)
      return c.json(result as never)
    },
  )
  // ---- Super admins: check-in review ----
  .openapi(
    endpoint({
      method: 'get', path: `${base}/admin/checkins`, tag, auth: 'superAdmin', query: ReviewQuery,
      summary: 'Check-ins by review status (pending by default), newest first',
      response: z.object({ checkins: z.array(Checkin.extend({ user: UserCard })) }),
    }),
    async (c) => {
      const q = c.req.valid('query')
      const checkins = await rpc(c.var.db, 'workout_review_queue', {
        review_status: q.status, page_size: q.limit, before_created_at: q.before ?? null,
      })
      return c.json({ checkins } as never)
    },
  )
  .openapi(
    endpoint({
      method: 'post', path: `${base}/admin/checkins/{id}/verify`, tag, auth: 'superAdmin', params: idParams('id'),
      body: VerifyBody, bodyRequired: false, summary: 'Verify a check-in', response: z.object({ checkin: Checkin }),
    }),
    async (c) => {
      const checkin = await rpc(c.var.db, 'review_workout_checkin', {
        checkin_id: c.req.valid('param').id, verdict: 'verified', reason: c.req.valid('json')?.reason ?? null,
      })
      return c.json({ checkin } as never)
    },
  )
  .openapi(
    endpoint({
      method: 'post', path: `${base}/admin/checkins/{id}/reject`, tag, auth: 'superAdmin', params: idParams('id'),
      body: RejectBody, summary: 'Reject a check-in (its chips stop counting)', response: z.object({ checkin: Checkin }),
    }),
    async (c) => {
      const checkin = await rpc(c.var.db, 'review_workout_checkin', {
        checkin_id: c.req.valid('param').id, verdict: 'rejected', reason: c.req.valid('json').reason,
      })
      return c.json({ checkin } as never)
    },
  )
  // ---- Super admins: synthetic users ----
  .openapi(
    endpoint({
      method: 'post', path: `${base}/admin/ai-users/generate`, tag, auth: 'superAdmin', body: AiGenerate, status: 201,
      summary: 'Create 1..1000 synthetic users in bulk (SPEC rule 5 distributions unless config says otherwise)',
      response: z.object({ created: z.number().int(), failed: z.number().int(), users: z.array(AiUser), errors: z.array(z.string()) }),
    }),
    async (c) => {
      const b = c.req.valid('json')
      const result = await rpc(c.var.db, 'generate_ai_users', { how_many: b.count, config: b.config ?? null })
      await ensureStockPhoto()
      return c.json(result as never, 201)
    },
  )
  .openapi(
    endpoint({
      method: 'get', path: `${base}/admin/ai-users`, tag, auth: 'superAdmin',
      query: z.object({ limit: z.coerce.number().int().min(1).max(1000).default(1000), after: z.guid().optional() }).strict(),
      summary: 'Synthetic users with their profiles (by id; pass the last id as after for more)',
      response: z.object({ users: z.array(AiUser) }),
    }),
    async (c) => {
      const q = c.req.valid('query')
      return c.json({ users: await rpc(c.var.db, 'list_ai_users', { page_size: q.limit, after_id: q.after ?? null }) } as never)
    },
  )
  .openapi(
    endpoint({
      method: 'delete', path: `${base}/admin/ai-users/{id}`, tag, auth: 'superAdmin', params: idParams('id'),
      summary: 'Remove a synthetic user and all their data (a real user is 404 and untouched)', response: Message,
    }),
    async (c) => {
      await rpc(c.var.db, 'delete_ai_user', { target_user: c.req.valid('param').id })
      return c.json({ message: 'AI user deleted' })
    },
  )
  .openapi(
    endpoint({
      method: 'put', path: `${base}/admin/ai-users/{id}/toggle`, tag, auth: 'superAdmin', params: idParams('id'),
      body: ToggleBody, summary: 'Activate or pause a synthetic user', response: z.object({ user: AiUser }),
    }),
    async (c) => {
      const user = await rpc(c.var.db, 'toggle_ai_user', { target_user: c.req.valid('param').id, active: c.req.valid('json').isActive })
      return c.json({ user } as never)
    },
  )
  .openapi(
    endpoint({
      method: 'get', path: `${base}/admin/teams/{date}`, tag, auth: 'superAdmin', params: DateParams,
      summary: 'A date\'s red and blue teams and squads, AI versus real members',
      response: z.object({ redTeam: z.unknown(), blueTeam: z.unknown() }),
    }),
    async (c) => c.json(await rpc(c.var.db, 'admin_workout_teams', { target: c.req.valid('param').date }) as never),
  )
