// What the labs modules share: the tag, the loose row shape of labs replies, and the bounded
// text, e-mail and number fields the SQL bounds as well.
import { z } from '@hono/zod-openapi'

export const tag = 'Labs'
export const Row = z.record(z.string(), z.unknown())
export type Row = Record<string, unknown>
export const email = z.string().trim().toLowerCase().max(320).email()
export const text = (max: number) => z.string().trim().min(1).max(max)
/** A labs number: finite, magnitude at most 1e15 and, unless 0, at least 1e-300 (the database holds the same bounds). */
const MAX_MAGNITUDE = 1e15
const MIN_MAGNITUDE = 1e-300
export const plausibleNumber = () =>
  z.number().min(-MAX_MAGNITUDE, `must be at least -${MAX_MAGNITUDE}`).max(
    MAX_MAGNITUDE,
    `must be at most ${MAX_MAGNITUDE}`,
  )
    .refine(
      (v) => v === 0 || Math.abs(v) >= MIN_MAGNITUDE,
      `must be 0 or of magnitude at least ${MIN_MAGNITUDE}`,
    )
