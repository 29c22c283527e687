// A day's chains: each participant's place in one (the users before and after, team and
// squad), the red and blue team totals, the photo check-ins that continue a chain, and the
// generation that builds (or completes) a day's chains, on demand and every night.
import { z } from '@hono/zod-openapi'
import { serviceDb } from '../../../_shared/db.ts'
import { badRequest, fromDb, unwrap } from '../../../_shared/errors.ts'
import { removeObjects, uploadObject } from '../../../_shared/storage.ts'
import { isoDate } from '../../../_shared/validation.ts'
import { UnreadableImage } from '../../../_shared/image_size.ts'
import { endpoint, orNull, routeModule } from '../../openapi.ts'
import { CheckinForm, readCheckinForm } from './checkin_form.ts'
import { PHOTO_EXTENSIONS, preparePhoto, readPhotoFacts } from './photo.ts'
import {
  base,
  Checkin,
  CHECKIN_BUCKET,
  DateParams,
  logRun,
  PageQuery,
  Squad,
  storageFailure,
  tag,
  UserCard,
} from './shared.ts'

const TeamStats = z.object({
  totalMembers: z.number().int(),
  completed: z.number().int(),
  failed: z.number().int(),
  pending: z.number().int(),
  completionRate: z.number().describe('Percent of members completed, one decimal'),
  totalChips: z.number().int(),
})

const GenerateBody = z.object({ date: isoDate().optional() }).strict()
const ChainRun = z.object({
  date: z.string(),
  participants: z.number().int(),
  created: z.number().int(),
  relinked: z.number().int(),
  squadsCreated: z.number().int(),
}).openapi('WorkoutChainRun')

// The replies below are the jsonb results of the day's SQL functions, passed on as they are.
const ChainDay = z.object({
  chain: z.object({
    id: z.string(),
    date: z.string(),
    beforeUser: orNull(UserCard),
    currentUser: UserCard,
    afterUser: orNull(UserCard),
    teamColor: z.enum(['red', 'blue']),
    squad: orNull(Squad),
  }),
  checkins: z.array(Checkin),
})
const SquadDay = z.object({ squad: Squad, checkins: z.array(Checkin) })
const TeamDay = z.object({ redTeam: TeamStats, blueTeam: TeamStats })
const CheckinDone = z.object({
  checkin: Checkin,
  battleChipsEarned: z.number().int(),
  chainStatus: z.enum(['continued', 'broken']),
  nextUserNotified: z.boolean(),
})
const MyCheckin = z.object({
  checkin: orNull(Checkin),
  status: z.enum(['pending', 'completed', 'failed', 'not_started']),
})
const DayCheckins = z.object({
  checkins: z.array(Checkin.extend({ user: UserCard })),
  stats: z.object({ total: z.number().int(), completed: z.number().int(), failed: z.number().int() }),
})

export const chainRoutes = routeModule()
  .openapi(
    endpoint({
      method: 'get',
      path: `${base}/chain/{date}`,
      tag,
      auth: 'bearer',
      params: DateParams,
      summary: "The caller's chain on a date: neighbours, team, squad and their check-ins",
      response: ChainDay,
    }),
    async (c) => c.json(unwrap(await c.var.db.rpc('workout_chain', { target: c.req.valid('param').date }))),
  )
  .openapi(
    endpoint({
      method: 'get',
      path: `${base}/squad/{date}`,
      tag,
      auth: 'bearer',
      params: DateParams,
      summary: "The caller's squad on a date and its check-ins",
      response: SquadDay,
    }),
    async (c) => c.json(unwrap(await c.var.db.rpc('workout_squad', { target: c.req.valid('param').date }))),
  )
  .openapi(
    endpoint({
      method: 'get',
      path: `${base}/team-stats/{date}`,
      tag,
      auth: 'bearer',
      params: DateParams,
      summary: 'Red and blue team totals on a date',
      description: 'failed: the window has ended without a check-in; pending: not yet (or not started).',
      response: TeamDay,
    }),
    async (c) =>
      c.json(unwrap(await c.var.db.rpc('workout_team_stats', { target: c.req.valid('param').date }))),
  )
  .openapi(
    endpoint({
      method: 'post',
      path: `${base}/checkin`,
      tag,
      auth: 'bearer',
      multipart: CheckinForm,
      status: 201,
      summary: 'Check in with a photo (one per user per day)',
      description:
        'Chips: 1, +1 when the before user checked in earlier that day, +0.5 in the first 30 minutes ' +
        'of the window, +2 from the seventh consecutive day, floored. The photo is stored without its metadata ' +
        '(EXIF, XMP, IPTC, comments), turned upright. It verifies when its EXIF capture time is inside the window ' +
        '± 30 minutes, the server received it inside the window ± 30 minutes, at most 120 minutes (and not more than ' +
        '5 minutes before) the capture, within 50 km, and its picture (compared by a perceptual hash, so a ' +
        're-encoded copy counts) served no check-in before; otherwise it waits for review. 400 photo: unreadable, ' +
        'or larger than 25 megapixels a frame, 40 over all frames or 50 frames. 409: already checked in for the ' +
        'day (a time-zone change applies from the next local day).',
      errors: [409],
      response: CheckinDone,
    }),
    async (c) => {
      const input = await readCheckinForm(c)
      // What the review needs is read from the original; what is stored carries no metadata.
      const facts = await readPhotoFacts(input.bytes, input.type)
      const { stored, dhash, dhashAsSent } = await preparePhoto(input.bytes, input.type).catch((e) => {
        throw e instanceof UnreadableImage ? badRequest(`photo: ${e.message}`) : e
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
        throw fromDb(result.error)
      }
      return c.json(result.data, 201)
    },
  )
  .openapi(
    endpoint({
      method: 'get',
      path: `${base}/checkin/{date}`,
      tag,
      auth: 'bearer',
      params: DateParams,
      summary: "The caller's check-in on a date and the day status",
      response: MyCheckin,
    }),
    async (c) =>
      c.json(unwrap(await c.var.db.rpc('my_workout_checkin', { target: c.req.valid('param').date }))),
  )
  .openapi(
    endpoint({
      method: 'get',
      path: `${base}/checkins/{date}`,
      tag,
      auth: 'bearer',
      params: DateParams,
      query: z.object(PageQuery).strict(),
      summary: "A page of the date's check-ins (newest first) and the day's participant stats",
      response: DayCheckins,
    }),
    async (c) => {
      const q = c.req.valid('query')
      return c.json(unwrap(
        await c.var.db.rpc('workout_day_checkins', {
          target: c.req.valid('param').date,
          page_size: q.limit,
          before_created_at: q.before ?? null,
        }),
      ))
    },
  )
  .openapi(
    endpoint({
      method: 'post',
      path: `${base}/generate-chains`,
      tag,
      auth: 'bearer',
      body: GenerateBody,
      bodyRequired: false,
      summary: "Generate (or complete) the chains of a date, today in the caller's window's zone by default",
      description:
        'Repeatable: adds users who set up since, keeps links a check-in counted on, never duplicates. ' +
        "Users: today and tomorrow in their window's time zone (403 otherwise); super admins: any date within a " +
        'year of today (400 beyond).',
      errors: [403],
      response: ChainRun,
    }),
    async (c) => {
      const { date } = c.req.valid('json') ?? {}
      return c.json(unwrap(await c.var.db.rpc('generate_workout_chains', { target: date ?? null })))
    },
  )
  .openapi(
    endpoint({
      method: 'post',
      path: `${base}/cron/generate-chains`,
      tag,
      auth: { cron: 'workout-window' },
      summary:
        'Daily chain generation (0 0 * * *): WORKOUT_CHAIN_PARTS (default 2) parts of the groups side by side',
      response: ChainRun,
    }),
    async (c) => {
      console.log(JSON.stringify({ job: 'workout-generate-chains', event: 'start' }))
      // Each part is its own call and transaction (groups never share neighbours, teams or squads).
      const parts = Math.min(64, Math.max(1, Number(Deno.env.get('WORKOUT_CHAIN_PARTS') ?? 2)))
      const runs = await Promise.all(
        Array.from({ length: parts }, async (_, part) =>
          unwrap(
            await c.var.db.rpc('generate_workout_chains_part', {
              target: null as unknown as string,
              part,
              parts,
            }),
          ) as {
            date: string
            participants: number
            created: number
            relinked: number
            squadsCreated: number
          }),
      )
      const result = {
        date: runs[0].date,
        participants: runs.reduce((n, r) => n + r.participants, 0),
        created: runs.reduce((n, r) => n + r.created, 0),
        relinked: runs.reduce((n, r) => n + r.relinked, 0),
        squadsCreated: runs.reduce((n, r) => n + r.squadsCreated, 0),
      }
      logRun('workout-generate-chains', result)
      return c.json(result)
    },
  )
