// What the sync tests share: a client of GET/POST /api/sync that follows WatermelonDB's protocol
// to the letter (docs/sync.md), with its own copy of the records.
import { strict as assert } from 'node:assert'
import { api, type ApiResponse, sql, type TestUser } from './_helpers.ts'

export type RawRecord = Record<string, string | number | boolean | null>
export type TableChanges = { created: RawRecord[]; updated: RawRecord[]; deleted: string[] }
export type Changes = Record<string, TableChanges>
export type Pull = { changes: Changes; timestamp: number; experimentalStrategy?: 'replacement' }

export function pullQuery(lastPulledAt: number | null, schemaVersion = 2, migration: unknown = null): string {
  const q = new URLSearchParams({ last_pulled_at: String(lastPulledAt), schema_version: String(schemaVersion) })
  if (migration !== null) q.set('migration', JSON.stringify(migration))
  return `/api/sync?${q}`
}

export async function pull(u: TestUser, lastPulledAt: number | null, schemaVersion = 2, migration: unknown = null) {
  const res = await api<Pull>(pullQuery(lastPulledAt, schemaVersion, migration), { token: u.token })
  assert.equal(res.status, 200, JSON.stringify(res.body))
  return res.body
}

export function push(u: TestUser, lastPulledAt: number, changes: Record<string, Partial<TableChanges>>) {
  return api(`/api/sync?last_pulled_at=${lastPulledAt}`, { token: u.token, body: changes })
}

/**
 * Pulls from `since` on, following the cursors, until `done` holds for what came (or 5 s pass):
 * a change waits while an older transaction is open (docs/sync.md), so a test that needs one
 * keeps pulling. Fails if any id comes twice in the same list.
 */
export async function pullUntil(u: TestUser, since: number | null, done: (p: Pull) => boolean): Promise<Pull> {
  const acc: Pull = { changes: {}, timestamp: since ?? 0 }
  const deadline = Date.now() + 5000
  let cursor = since
  for (;;) {
    const p = await pull(u, cursor)
    for (const [table, t] of Object.entries(p.changes)) {
      const a = acc.changes[table] ??= { created: [], updated: [], deleted: [] }
      a.created.push(...t.created)
      a.updated.push(...t.updated)
      a.deleted.push(...t.deleted)
      for (const list of ['created', 'updated', 'deleted'] as const) {
        const ids = a[list].map((r) => typeof r === 'string' ? r : String(r.id))
        assert.equal(new Set(ids).size, ids.length, `${table}.${list} named an id twice`)
      }
    }
    acc.timestamp = p.timestamp
    cursor = p.timestamp
    if (done(acc) || Date.now() > deadline) return acc
    await new Promise((r) => setTimeout(r, 100))
  }
}

/** Waits until every change of the user's is below the cursor a pull would hand out now (a
 *  background job's transaction, such as tone analysis, can hold it back for a moment). */
export async function settled(u: TestUser): Promise<void> {
  const deadline = Date.now() + 5000
  while (Date.now() < deadline) {
    const [r] = await sql`
      select pg_snapshot_xmin(pg_current_snapshot())::text::bigint > coalesce(greatest(
        (select max(row_version::text::bigint) from public.journal_entries where user_id = ${u.id}),
        (select max(row_version::text::bigint) from public.notebooks where user_id = ${u.id}),
        (select max(row_version::text::bigint) from public.goals where user_id = ${u.id}),
        (select max(row_version::text::bigint) from public.goal_check_ins where user_id = ${u.id}),
        (select max(row_version::text::bigint) from private.sync_tombstones where user_id = ${u.id})), 0) as done`
    if (r.done) return
    await new Promise((r) => setTimeout(r, 50))
  }
}

/** Every id a pull names, by table and list. */
export function idsOf(p: Pull, table: string): { created: string[]; updated: string[]; deleted: string[] } {
  const t = p.changes[table] ?? { created: [], updated: [], deleted: [] }
  return {
    created: t.created.map((r) => String(r.id)).sort(),
    updated: t.updated.map((r) => String(r.id)).sort(),
    deleted: [...t.deleted].sort(),
  }
}

/** A device: its copy of the records, its cursor, and its pending (unpushed) changes. */
export class Device {
  records = new Map<string, Map<string, RawRecord>>()
  pending: Record<string, TableChanges> = {}
  lastPulledAt: number | null = null
  constructor(readonly user: TestUser) {}

  table(name: string) {
    let t = this.records.get(name)
    if (!t) this.records.set(name, t = new Map())
    return t
  }
  private pendingOf(name: string) {
    return this.pending[name] ??= { created: [], updated: [], deleted: [] }
  }
  create(name: string, record: RawRecord) {
    this.table(name).set(String(record.id), record)
    this.pendingOf(name).created.push(record)
  }
  update(name: string, id: string, fields: RawRecord) {
    const merged = { ...this.table(name).get(id)!, ...fields }
    this.table(name).set(id, merged)
    const p = this.pendingOf(name)
    const created = p.created.findIndex((r) => r.id === id)
    if (created >= 0) p.created[created] = merged
    else p.updated = [...p.updated.filter((r) => r.id !== id), merged]
  }
  delete(name: string, id: string) {
    this.table(name).delete(id)
    const p = this.pendingOf(name)
    p.created = p.created.filter((r) => r.id !== id)
    p.updated = p.updated.filter((r) => r.id !== id)
    p.deleted.push(id)
  }

  /** Applies a pull: server records win except the fields this device changed and has not pushed. */
  applyPull(p: Pull) {
    for (const [name, t] of Object.entries(p.changes)) {
      const mine = this.table(name)
      const pending = this.pending[name]
      if (p.experimentalStrategy === 'replacement') {
        const keep = new Set([...t.created, ...t.updated].map((r) => String(r.id)))
        for (const id of [...mine.keys()]) {
          if (!keep.has(id) && !pending?.created.some((r) => r.id === id)) mine.delete(id)
        }
      }
      for (const r of [...t.created, ...t.updated]) {
        const local = pending?.updated.find((x) => x.id === r.id) ?? pending?.created.find((x) => x.id === r.id)
        mine.set(String(r.id), local ? { ...r, ...local } : r)
        if (local) Object.assign(local, { ...r, ...local })
      }
      for (const id of t.deleted) mine.delete(id)
    }
    this.lastPulledAt = p.timestamp
  }

  /** synchronize(): pull, then push what is pending; a 409 is answered by pulling and pushing again.
   *  `afterFirstPull` runs between the first pull and its push (another device getting in between). */
  async sync(afterFirstPull?: () => Promise<unknown>): Promise<ApiResponse[]> {
    const replies: ApiResponse[] = []
    for (let attempt = 0; attempt < 3; attempt++) {
      this.applyPull(await pull(this.user, this.lastPulledAt))
      if (attempt === 0) await afterFirstPull?.()
      if (Object.keys(this.pending).length === 0) return replies
      const res = await push(this.user, this.lastPulledAt!, this.pending)
      replies.push(res)
      if (res.status === 200) {
        this.pending = {}
        return replies
      }
      assert.equal(res.status, 409, JSON.stringify(res.body))
    }
    throw new Error('sync did not converge in 3 attempts')
  }
}
