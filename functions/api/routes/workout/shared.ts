// What the workout modules share: the tag and base path, the buckets, the reply shapes of a
// participant and a check-in, date and page parameters, and the log and storage-failure helpers.
import { z } from '@hono/zod-openapi'
import { badRequest, unavailable } from '../../../_shared/errors.ts'
import { StorageError } from '../../../_shared/storage.ts'
import { isoDate } from '../../../_shared/validation.ts'
import { Constants } from '../../../_shared/database_enums.ts'
import { orNull } from '../../openapi.ts'

export const tag = 'Workout windows'
export const base = '/workout-window'
/** The activities a window may name: the database's enum public.workout_activity_type. */
export const ACTIVITY_TYPES = Constants.public.Enums.workout_activity_type
export const CHECKIN_BUCKET = 'workout-checkins'
export const MOSAIC_BUCKET = 'workout-mosaics'

export const UserCard = z.object({
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
export const Checkin = z.object({
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
export const Squad = z.object({
  id: z.string(),
  date: z.string(),
  teamColor: z.enum(['red', 'blue']),
  user1: UserCard,
  user2: UserCard,
  user3: orNull(UserCard),
}).openapi('WorkoutSquad')

export const pathDate = (name: string) =>
  isoDate().openapi({ param: { name, in: 'path' }, example: '2026-11-23' })
export const DateParams = z.object({ date: pathDate('date') })
export const PageQuery = {
  limit: z.coerce.number().int().min(1).max(200).default(100).openapi({ description: 'Page size, 1..200' }),
  before: z.iso.datetime({ offset: true }).optional().openapi({
    description: 'createdAt of the last item of the previous page',
  }),
}

/** A storage failure as the reply: 400 for a photo over the limit, else 503 (logged). */
export function storageFailure(e: unknown): never {
  if (e instanceof StorageError) {
    console.error(e.message)
    if (e.status === 413) throw badRequest('photo: must be at most 10 MB')
    throw unavailable('Photo storage is unavailable; try again shortly')
  }
  throw e
}

export const logRun = (job: string, result: unknown) =>
  console.log(JSON.stringify({ job, at: new Date().toISOString(), result }))
