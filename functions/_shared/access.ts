// Telling "not yours" from "not there" after a write that changed no row: a row the caller
// may see is a 403, one they may not see is a 404 (the same as an id that does not exist).
import type { Database } from './database.ts'
import type { Db } from './db.ts'
import { forbidden, notFound } from './errors.ts'

export async function refuseWrite(
  db: Db,
  table: keyof Database['public']['Tables'],
  match: Record<string, string>,
  what: string,
): Promise<never> {
  const { data } = await db.from(table).select(Object.keys(match).join(',')).match(match).limit(1)
  if (data && data.length) throw forbidden(`You may not change this ${what}`)
  throw notFound(`${what[0].toUpperCase()}${what.slice(1)} not found`)
}
