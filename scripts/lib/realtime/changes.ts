// postgres_changes: each change read from the publication is checked for each subscriber as
// Supabase Realtime's realtime.apply_rls does it, then pushed to those who may see it:
// - the subscriber's role must be granted SELECT on the primary key (else "Error 401");
// - its filter must hold (both values cast to the column's type, in Postgres);
// - on a table with row-level security, an INSERT or UPDATE is delivered only if the row, looked
//   up by its primary key as the subscriber (role + request.jwt.claims), is visible to it;
//   a DELETE is not checked (its old record is reduced to the primary key, as on hosted);
// - only columns the role may select are sent.
// One subscriber cannot stop delivery to the others: filters are checked deduplicated and in
// bounded statements (a failing one is retried filter by filter), the visibility check is made
// once per change for each distinct set of claims, and each subscriber's errors stay its own.
import postgres from 'postgres'
import type { Claims } from './auth.ts'
import { type Action, type ChangeParams, describe, ParamsError, SQL_OPS } from './filters.ts'
import { type Change, type Relation, startReplication, type Tuple } from './replication.ts'

export const PUBLICATION = 'supabase_realtime'

export interface Binding {
  id: number
  params: ChangeParams
}

export interface Subscriber {
  claims: Claims
  bindings: Binding[]
  /** Pushes a postgres_changes message: the ids of the bindings it answers and the change. */
  push(ids: number[], data: Record<string, unknown>): void
}

export interface ColumnMeta {
  name: string
  type: string // pg_type.typname, as Realtime names it in `columns`
  sqlType: string // format_type(): what a value is cast to
  isPk: boolean
}

const ident = (s: string) => `"${s.replaceAll('"', '""')}"`

/** Distinct filters checked in one statement (two parameters each). */
export const FILTERS_PER_STATEMENT = 200

/** A filter as checked against one change: the value it compares and how. */
export interface FilterCheck {
  column: ColumnMeta
  op: keyof typeof SQL_OPS
  value: string
  actual: string
}

export class ChangeFeed {
  private subscribers = new Set<Subscriber>()
  private meta = new Map<number, Promise<ColumnMeta[]>>()
  private replication?: ReturnType<typeof startReplication>
  private queue: Promise<void> = Promise.resolve()
  private idleStop?: ReturnType<typeof setTimeout>
  private closed = false
  private sql: postgres.Sql

  constructor(private dbUrl: string) {
    this.sql = postgres(dbUrl, { max: 2, onnotice: () => {}, idle_timeout: 60 })
  }

  /** Checks the bindings against the publication (as Realtime's subscription insert does) and
   *  starts delivering. Throws ParamsError with Realtime's message when a binding cannot be served. */
  async subscribe(sub: Subscriber) {
    for (const b of sub.bindings) await this.validate(b.params)
    clearTimeout(this.idleStop)
    await this.ensureReplication()
    this.subscribers.add(sub)
  }

  /** The last subscriber gone, decoding stops after a while (nothing is decoded for nobody). */
  unsubscribe(sub: Subscriber) {
    this.subscribers.delete(sub)
    if (this.subscribers.size || !this.replication) return
    clearTimeout(this.idleStop)
    this.idleStop = setTimeout(() => {
      if (this.subscribers.size || !this.replication) return
      const r = this.replication
      this.replication = undefined
      r.stop()
    }, 30_000)
  }

  /** False for a token of an ended impersonation session (the project's private.impersonation_live(),
   *  run as the token's role with its claims); true where the project has no such function. */
  async impersonationLive(claims: Claims): Promise<boolean> {
    if (!('impersonation_session' in claims)) return true
    try {
      return await this.sql.begin(async (tx) => {
        await tx`select set_config('role', ${claims.role}, true), set_config('request.jwt.claims', ${
          JSON.stringify(claims)
        }, true)`
        const [r] = await tx`select private.impersonation_live() as live`
        return r.live !== false
      })
    } catch (e) {
      if ((e as { code?: string }).code === '42883' || (e as { code?: string }).code === '3F000') return true
      throw e
    }
  }

  async close() {
    this.closed = true
    clearTimeout(this.idleStop)
    await this.replication?.stop()
    await this.sql.end({ timeout: 1 })
  }

  private async validate(p: ChangeParams) {
    const like = (s: string) => (s === '*' ? '%' : s.replace(/[\\%_]/g, '\\$&'))
    const tables = await this.sql`
      select format('%I.%I', schemaname, tablename)::regclass::oid as oid
        from pg_publication_tables
       where pubname = ${PUBLICATION} and schemaname like ${like(p.schema)} and tablename like ${
      like(p.table)
    }`
    if (!tables.length) {
      throw new ParamsError(
        `Unable to subscribe to changes with given parameters. Please check Realtime is enabled for the given connect parameters: [${
          describe(p)
        }]`,
      )
    }
    if (!p.filter) return
    for (const { oid } of tables) {
      const col = (await this.columns(Number(oid))).find((c) => c.name === p.filter!.column)
      const fail = (why: string) =>
        new ParamsError(
          `Unable to subscribe to changes with given parameters. An exception happened so please check your connect parameters: [${
            describe(p)
          }]. Exception: ${why}`,
        )
      if (!col) throw fail(`ERROR P0001 (raise_exception) invalid column for filter ${p.filter.column}`)
      const cast = p.filter.op === 'in' ? `${col.sqlType}[]` : col.sqlType
      try {
        await this.sql.unsafe(`select $1::text::${cast}`, [p.filter.value])
      } catch (e) {
        throw fail(`ERROR ${(e as { code?: string }).code ?? ''} ${(e as Error).message}`)
      }
    }
  }

  private columns(relid: number): Promise<ColumnMeta[]> {
    let m = this.meta.get(relid)
    if (!m) {
      m = this.sql`
        select a.attname as name, t.typname as type, format_type(a.atttypid, a.atttypmod) as sql_type,
               coalesce(a.attnum = any (pk.conkey), false) as is_pk
          from pg_attribute a
          join pg_type t on t.oid = a.atttypid
          left join pg_constraint pk on pk.conrelid = a.attrelid and pk.contype = 'p'
         where a.attrelid = ${relid} and a.attnum > 0 and not a.attisdropped
         order by a.attnum`.then((rows) =>
        rows.map((r) => ({ name: r.name, type: r.type, sqlType: r.sql_type, isPk: r.is_pk }))
      )
      m.catch(() => this.meta.delete(relid))
      this.meta.set(relid, m)
    }
    return m
  }

  /** Starts reading the publication unless it is read already; settles once it streams. When
   *  the stream ends on its own (Postgres restarted), it starts again while anyone listens. */
  private ensureReplication(): Promise<void> {
    if (!this.replication) {
      const r = startReplication(
        this.dbUrl,
        PUBLICATION,
        (c) => {
          this.queue = this.queue.then(() => this.deliver(c)).catch((e) =>
            console.error('realtime: delivery failed', e)
          )
        },
        (rel: Relation) => this.meta.delete(rel.id), // a relation message may follow a schema change
        (e) => {
          if (this.replication !== r) return // stopped on purpose
          console.error('realtime: the replication stream ended', e ?? '')
          this.replication = undefined
          r.stop()
          setTimeout(() => {
            if (!this.closed && this.subscribers.size && !this.replication) {
              this.ensureReplication().catch((err) =>
                console.error('realtime: could not restart replication', err)
              )
            }
          }, 1000)
        },
      )
      this.replication = r
    }
    return this.replication.ready
  }

  private async deliver(change: Change) {
    const { relation: rel, type: action } = change
    const interested = [...this.subscribers].filter((s) =>
      s.bindings.some((b) => concerns(b.params, rel, action))
    )
    if (!interested.length) return
    const meta = await this.columns(rel.id)
    const byName = new Map(meta.map((c) => [c.name, c]))

    // The values each column had, by name: the new row, and the identity (old key, or old row).
    const valuesOf = (t: Tuple | undefined, keyOnly: boolean) => {
      const out = new Map<string, string | null>()
      if (!t) return out
      rel.columns.forEach((c, i) => {
        if (t[i] === undefined || (keyOnly && !c.isKey) || !byName.has(c.name)) return
        out.set(c.name, t[i] as string | null)
      })
      return out
    }
    const newValues = action === 'DELETE'
      ? new Map<string, string | null>()
      : valuesOf(change.newTuple, false)
    const identity = change.oldTuple
      ? valuesOf(change.oldTuple, change.oldIsKey !== false)
      : valuesOf(change.newTuple, true)

    // One round trip for the change: both records as JSON (each value cast to its type, as
    // realtime.cast does), whether the table has RLS, and the columns each role may select.
    const params: (string | null | string[])[] = []
    const p = (v: string | null | string[]) => (params.push(v), `$${params.length}`)
    const record = (values: Map<string, string | null>) =>
      values.size
        ? `(select to_jsonb(r) from (select ${
          [...values].map(([k, v]) => `${p(v)}::text::${byName.get(k)!.sqlType} as ${ident(k)}`).join(', ')
        }) r)`
        : `null::jsonb`
    const roles = [...new Set(interested.map((s) => s.claims.role))]
    const [row] = await this.sql.unsafe(
      `select ${record(newValues)} as new, ${record(identity)} as old,
              (select relrowsecurity from pg_class where oid = ${p(String(rel.id))}::oid) as rls,
              (select jsonb_object_agg(role, (select coalesce(jsonb_agg(a.attname order by a.attnum), '[]')
                                                from pg_attribute a
                                               where a.attrelid = ${p(String(rel.id))}::oid and a.attnum > 0
                                                 and not a.attisdropped
                                                 and has_column_privilege(role, a.attrelid, a.attname, 'SELECT')))
                 from unnest(${p(roles)}::text[]) role) as selectable`,
      params as any[],
    )

    // Each distinct filter once, whoever asked for it.
    const source = action === 'DELETE' ? identity : newValues
    const checks = new Map<string, FilterCheck | null>() // null: the change lacks the column
    const keyOf = new Map<Binding, string>()
    for (const sub of interested) {
      for (const binding of sub.bindings) {
        const f = binding.params.filter
        if (!f || !concerns(binding.params, rel, action)) continue
        const key = JSON.stringify([f.column, f.op, f.value])
        keyOf.set(binding, key)
        if (checks.has(key)) continue
        const column = byName.get(f.column)
        const actual = source.get(f.column)
        checks.set(
          key,
          column && actual !== undefined && actual !== null
            ? { column, op: f.op, value: f.value, actual }
            : null,
        )
      }
    }
    const filterOk = await checkFilters(this.sql, checks)

    const pk = meta.filter((c) => c.isPk)
    const base = { schema: rel.schema, table: rel.table, type: action }
    const errorData = (error: string) => ({
      ...base,
      columns: [],
      commit_timestamp: null,
      errors: [error],
      ...(action !== 'DELETE' ? { record: {} } : {}),
      ...(action !== 'INSERT' ? { old_record: {} } : {}),
    })

    const visibility = new Map<string, Promise<boolean>>()
    const deliverTo = async (sub: Subscriber) => {
      const selectable = new Set<string>(row.selectable?.[sub.claims.role] ?? [])
      const relevant = sub.bindings.filter((b) => concerns(b.params, rel, action))
      if (action !== 'DELETE' && !pk.length) {
        sub.push(relevant.map((b) => b.id), errorData('Error 400: Bad Request, no primary key'))
        return
      }
      if (action !== 'DELETE' && !pk.every((c) => selectable.has(c.name))) {
        sub.push(relevant.map((b) => b.id), errorData('Error 401: Unauthorized'))
        return
      }
      const ids = relevant.filter((b) => !b.params.filter || filterOk.get(keyOf.get(b)!) === true).map((b) =>
        b.id
      )
      if (!ids.length) return
      if (row.rls && action !== 'DELETE') {
        let visible: boolean
        try {
          // Subscribers with the same claims see the same rows: one look-up serves them all.
          const key = JSON.stringify(sub.claims)
          let pending = visibility.get(key)
          if (!pending) {
            pending = this.visibleTo(sub.claims, rel, pk, newValues, byName)
            visibility.set(key, pending)
          }
          visible = await pending
        } catch (e) {
          console.error('realtime: RLS check failed', e)
          sub.push(ids, errorData('Error 500: Internal Server Error, RLS policy evaluation failed'))
          return
        }
        if (!visible) return
      }
      const pick = (rec: Record<string, unknown> | null, keep: (c: ColumnMeta) => boolean) =>
        rec &&
        Object.fromEntries(Object.entries(rec).filter(([k]) => selectable.has(k) && keep(byName.get(k)!)))
      const data: Record<string, unknown> = {
        ...base,
        commit_timestamp: change.commitTime.toISOString(),
        columns: meta.filter((c) => selectable.has(c.name)).map((c) => ({ name: c.name, type: c.type })),
        errors: null,
      }
      if (action !== 'DELETE') data.record = pick(row.new, () => true)
      if (action === 'UPDATE') data.old_record = pick(row.old, () => true)
      if (action === 'DELETE') data.old_record = pick(row.old, (c) => !row.rls || c.isPk)
      sub.push(ids, data)
    }
    for (const sub of interested) {
      try {
        await deliverTo(sub)
      } catch (e) {
        console.error('realtime: delivery to a subscriber failed', e)
      }
    }
  }

  /** Looks the row up by its primary key as the subscriber, in a transaction of its own. */
  private async visibleTo(
    claims: Claims,
    rel: Relation,
    pk: ColumnMeta[],
    values: Map<string, string | null>,
    byName: Map<string, ColumnMeta>,
  ) {
    const where = pk.map((c, i) => `${ident(c.name)} = $${i + 1}::text::${byName.get(c.name)!.sqlType}`).join(
      ' and ',
    )
    return await this.sql.begin(async (tx) => {
      await tx`select set_config('role', ${claims.role}, true), set_config('request.jwt.claims', ${
        JSON.stringify(claims)
      }, true)`
      const [r] = await tx.unsafe(
        `select exists (select 1 from ${ident(rel.schema)}.${ident(rel.table)} where ${where}) as visible`,
        pk.map((c) => values.get(c.name) ?? null),
      )
      return r.visible as boolean
    })
  }
}

/** Whether a binding listens to this table and action. */
function concerns(p: ChangeParams, rel: Relation, action: Action) {
  return (p.action === '*' || p.action === action) &&
    (p.schema === '*' || p.schema === rel.schema) &&
    (p.table === '*' || p.table === rel.table)
}

/** Each filter's outcome for the change (both values cast to the column's type, in Postgres),
 *  in statements of FILTERS_PER_STATEMENT; when one fails, its filters are checked one by one
 *  so that only a failing filter (false, logged) is lost. */
export async function checkFilters(
  sql: postgres.Sql,
  checks: Map<string, FilterCheck | null>,
): Promise<Map<string, boolean>> {
  const out = new Map<string, boolean>()
  const pending: [string, FilterCheck][] = []
  for (const [key, c] of checks) c ? pending.push([key, c]) : out.set(key, false)
  const run = async (batch: [string, FilterCheck][]) => {
    const params: string[] = []
    const p = (v: string) => (params.push(v), `$${params.length}`)
    const exprs = batch.map(([, c]) => {
      const type = c.column.sqlType
      const right = c.op === 'in' ? `(${p(c.value)}::text::${type}[])` : `${p(c.value)}::text::${type}`
      return `coalesce(${p(c.actual)}::text::${type} ${SQL_OPS[c.op]} ${right}, false)`
    })
    // As text ('t,f,...'): no reliance on the client's parsing of boolean[].
    const [row] = await sql.unsafe(`select array_to_string(array[${exprs.join(', ')}], ',') as ok`, params)
    const ok = String(row.ok).split(',')
    batch.forEach(([key], i) => out.set(key, ok[i] === 't'))
  }
  for (let i = 0; i < pending.length; i += FILTERS_PER_STATEMENT) {
    const batch = pending.slice(i, i + FILTERS_PER_STATEMENT)
    try {
      await run(batch)
    } catch {
      for (const one of batch) {
        try {
          await run([one])
        } catch (e) {
          console.error(`realtime: the filter ${one[0]} could not be checked`, (e as Error).message)
          out.set(one[0], false)
        }
      }
    }
  }
  return out
}
