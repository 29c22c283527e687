// Creates safe to retry (docs/journal.md "Retrying a create"): a client may choose the id of what it
// creates, so a create repeated after an ambiguous failure answers with the row already made.
// The rule lives in the database (private.refuse_reused_id, supabase/schemas/conventions.sql):
// an id in use is refused with hint already_created (the caller's row with the same content)
// or id_conflict (anything else, 409).
import type { Database } from './database.ts'
import type { Db } from './db.ts'
import { fromDb, unwrap } from './errors.ts'

type Table = keyof Database['public']['Tables']

/** The row inserted (made: true), or, for a retry of a create with the same id and content, the
 *  row its first attempt made (made: false). */
export async function insertOnce(
  db: Db,
  table: Table,
  row: { id?: string } & Record<string, unknown>,
  columns: string,
): Promise<{ row: Record<string, unknown>; made: boolean }> {
  // Twice at most: a concurrent create of the same id commits between the trigger's look and
  // the key's check (a bare unique violation); asked again, the trigger sees its row.
  for (let attempt = 1;; attempt++) {
    const reply = await db.from(table).insert(row as never).select(columns).single()
    if (!reply.error) return { row: reply.data as unknown as Record<string, unknown>, made: true }
    const raceLost = reply.error.code === '23505' && !reply.error.hint && attempt === 1
    if (row.id && reply.error.hint === 'already_created') {
      const made = unwrap(await db.from(table).select(columns).eq('id', row.id).single())
      return { row: made as unknown as Record<string, unknown>, made: false }
    }
    if (!(row.id && raceLost)) throw fromDb(reply.error, reply.status)
  }
}
