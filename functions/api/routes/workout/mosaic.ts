// The daily mosaic: one PNG of every participant's section (completed, failed, pending), drawn
// and stored by the api, recorded in SQL.
import { z } from '@hono/zod-openapi'
import type { Db } from '../../../_shared/db.ts'
import { fromDb, HttpError, unwrap } from '../../../_shared/errors.ts'
import { removeObjects, uploadObject } from '../../../_shared/storage.ts'
import { drawMosaic, layoutMosaic } from './mosaic_image.ts'
import { endpoint, routeModule } from '../../openapi.ts'
import { base, DateParams, logRun, MOSAIC_BUCKET, storageFailure, tag } from './shared.ts'

const Mosaic = z.object({
  imageUrl: z.string(),
  date: z.string(),
  sections: z.array(z.object({
    userId: z.string(),
    userName: z.string(),
    status: z.enum(['completed', 'failed', 'pending']),
    coordinates: z.object({
      x: z.number().int(),
      y: z.number().int(),
      width: z.number().int(),
      height: z.number().int(),
    }),
    teamColor: z.enum(['red', 'blue']),
  })),
  stats: z.object({
    totalParticipants: z.number().int(),
    completed: z.number().int(),
    failed: z.number().int(),
    pending: z.number().int(),
  }),
  updatedAt: z.string(),
}).openapi('WorkoutMosaic')

/** Draws, stores and records a date's mosaic; the image it replaces is deleted afterwards. */
async function generateMosaic(db: Db, date: string) {
  const participants = unwrap(await db.rpc('workout_mosaic_participants', { target: date }))
  const layout = layoutMosaic(participants)
  const png = drawMosaic(layout)
  const name = `${date}/${crypto.randomUUID()}.png`
  const url = await uploadObject(MOSAIC_BUCKET, name, png, 'image/png').catch(storageFailure)
  const saved = await db.rpc('save_workout_mosaic', {
    target: date,
    image_url: url,
    object_name: name,
    sections: layout.sections,
  })
  if (saved.error) {
    await removeObjects(MOSAIC_BUCKET, [name])
    throw fromDb(saved.error)
  }
  const { mosaic, replacedObject } = saved.data
  if (replacedObject) await removeObjects(MOSAIC_BUCKET, [replacedObject])
  return mosaic
}

export const mosaicRoutes = routeModule()
  .openapi(
    endpoint({
      method: 'get',
      path: `${base}/mosaic/{date}`,
      tag,
      auth: 'bearer',
      params: DateParams,
      summary: 'The mosaic of a date',
      response: z.object({ mosaic: Mosaic }),
    }),
    async (c) => {
      const { date } = c.req.valid('param')
      const row = unwrap(await c.var.db.from('workout_mosaics').select('*').eq('date', date).maybeSingle())
      if (!row) throw new HttpError(404, `No mosaic for ${date} yet`)
      return c.json({
        mosaic: {
          imageUrl: row.image_url,
          date: row.date,
          sections: row.sections,
          stats: {
            totalParticipants: row.total_participants,
            completed: row.completed_count,
            failed: row.failed_count,
            pending: row.pending_count,
          },
          updatedAt: row.updated_at,
        },
      })
    },
  )
  .openapi(
    endpoint({
      method: 'post',
      path: `${base}/mosaic/generate/{date}`,
      tag,
      auth: { adminOrCron: 'workout-window' },
      params: DateParams,
      summary: "Draw (or redraw) a date's mosaic PNG and store it",
      response: z.object({ mosaic: Mosaic, message: z.string() }),
    }),
    async (c) => {
      const { date } = c.req.valid('param')
      const mosaic = await generateMosaic(c.var.db, date)
      logRun('workout-mosaic', { date })
      return c.json({ mosaic, message: `Mosaic for ${date} generated` })
    },
  )
