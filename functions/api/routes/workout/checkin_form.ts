// The multipart check-in: the photo, its activity and an optional position, read and checked
// before anything is stored (400 naming the field).
import { z } from '@hono/zod-openapi'
import { badRequest } from '../../../_shared/errors.ts'
import { sniffImageType } from '../../../_shared/image_frames.ts'
import { PHOTO_LIMIT_BYTES, PHOTO_TYPES } from './photo.ts'

// Documents the form; the handler reads and checks it (files are not zod's to judge).
export const CheckinForm = z.object({
  photo: z.unknown().openapi({
    type: 'string',
    format: 'binary',
    description:
      'JPEG, PNG, GIF or WEBP (read from the bytes), at most 10 MB, 25 megapixels a frame, 40 in all, 50 frames',
  }),
  activityType: z.unknown().openapi({ type: 'string', description: '1..50 characters' }),
  latitude: z.unknown().optional().openapi({
    type: 'number',
    description: 'Decimal degrees -90..90, at most 8 decimals',
  }),
  longitude: z.unknown().optional().openapi({
    type: 'number',
    description: 'Decimal degrees -180..180, at most 8 decimals',
  }),
}).openapi('WorkoutCheckinForm')

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
export async function readCheckinForm(c: { req: { formData(): Promise<FormData> } }) {
  const data = await form(c)
  for (const key of data.keys()) {
    if (!['photo', 'activityType', 'latitude', 'longitude'].includes(key)) {
      throw badRequest(`${key}: not an accepted field`)
    }
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
  if ((latitude === null) !== (longitude === null)) {
    throw badRequest('latitude: give both latitude and longitude')
  }
  const bytes = new Uint8Array(await photo.arrayBuffer())
  const type = sniffImageType(bytes)
  if (!type) {
    throw badRequest(`photo: must be a ${PHOTO_TYPES.map((t) => t.slice(6).toUpperCase()).join(', ')} image`)
  }
  const declared = photo.type.toLowerCase()
  if ((PHOTO_TYPES as readonly string[]).includes(declared) && declared !== type) {
    throw badRequest(`photo: the file is ${type}, not ${declared}`)
  }
  return { bytes, type, activityType: activity.trim(), latitude, longitude }
}
