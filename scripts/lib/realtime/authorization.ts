// Realtime Authorization as hosted Realtime runs it (lib/realtime/tenants/authorization.ex):
// what a private channel may do is decided by the project's RLS policies on realtime.messages,
// probed as the caller inside a transaction that is always rolled back.
// - read (join): a probe row per extension is inserted by the service itself, then selected as
//   the caller with `realtime.topic` set; the join needs broadcast or presence read.
// - write (broadcast, presence track): the caller inserts a probe row; a refused insert (42501)
//   is "not allowed".
import type postgres from 'postgres'
import type { Claims } from './auth.ts'

export type Extension = 'broadcast' | 'presence'

export interface ReadPolicies {
  broadcast: boolean
  presence: boolean
}

/** Rolls back whatever the probe did and hands its answer out of the transaction. */
class Probe<T> extends Error {
  constructor(readonly answer: T) {
    super('realtime authorization probe')
  }
}

async function probe<T>(sql: postgres.Sql, body: (tx: postgres.TransactionSql) => Promise<T>): Promise<T> {
  try {
    await sql.begin(async (tx) => {
      throw new Probe(await body(tx))
    })
  } catch (e) {
    if (e instanceof Probe) return e.answer as T
    throw e
  }
  throw new Error('unreachable')
}

/** Acts as the caller for the rest of the transaction, as Realtime's set_conn_config. */
async function actAs(tx: postgres.TransactionSql, topic: string, claims: Claims) {
  await tx`select set_config('role', ${claims.role}, true), set_config('realtime.topic', ${topic}, true),
                  set_config('request.jwt.claims', ${JSON.stringify(claims)}, true),
                  set_config('request.jwt.claim.sub', ${String(claims.sub ?? '')}, true),
                  set_config('request.jwt.claim.role', ${claims.role}, true)`
}

/** Which extensions the caller may read on `topic` (the channel's name without `realtime:`). */
export function readPolicies(sql: postgres.Sql, topic: string, claims: Claims): Promise<ReadPolicies> {
  return probe(sql, async (tx) => {
    const ids = { broadcast: crypto.randomUUID(), presence: crypto.randomUUID() }
    await tx`insert into realtime.messages (id, topic, extension)
             values (${ids.broadcast}, ${topic}, 'broadcast'), (${ids.presence}, ${topic}, 'presence')`
    await actAs(tx, topic, claims)
    const seen = new Set(
      (await tx`select id from realtime.messages where id in (${ids.broadcast}, ${ids.presence})`).map((r) => r.id),
    )
    return { broadcast: seen.has(ids.broadcast), presence: seen.has(ids.presence) }
  })
}

/** Whether the caller may send `extension` messages on `topic`. */
export function mayWrite(sql: postgres.Sql, topic: string, claims: Claims, extension: Extension): Promise<boolean> {
  return probe(sql, async (tx) => {
    await actAs(tx, topic, claims)
    try {
      await tx.savepoint((sp) => sp`insert into realtime.messages (topic, extension) values (${topic}, ${extension})`)
      return true
    } catch (e) {
      if ((e as { code?: string }).code === '42501') return false
      throw e
    }
  })
}
