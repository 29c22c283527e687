// postgres_changes: each change read from the publication is checked for each subscriber as
// Supabase Realtime's realtime.apply_rls does it, then pushed to those who may see it:
// - the subscriber's role must be granted SELECT on the primary key (else "Error 401");
// - its filter must hold (both values cast to the column's type, in Postgres);
// - on a table with row-level security, an INSERT or UPDATE is delivered only if the row, looked
//   up by its primary key as the subscriber (role + request.jwt.claims), is visible to it;
//   a DELETE is not checked (its old record is reduced to the primary key, as on hosted);
// - only columns the role may select are sent.
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

interface ColumnMeta {
  name: string
  type: string // pg_type.typname, as Realtime names it in `columns`
  sqlType: string // format_type(): what a value is cast to
  isPk: boolean
}

const ident = (s: string) => `"${s.replaceAll('"', '""')}"`

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

    // One round trip: both records as JSON (each value cast to its type, as realtime.cast does),
    // whether the table has RLS, the columns each role may select, and each filter's outcome.
    const params: (string | null | string[])[] = []
    const p = (v: string | null | string[]) => (params.push(v), `$${params.length}`)
    const record = (values: Map<string, string | null>) =>
      values.size
        ? `(select to_jsonb(r) from (select ${
          [...values].map(([k, v]) => `${p(v)}::text::${byName.get(k)!.sqlType} as ${ident(k)}`).join(', ')
        }) r)`
        : `null::jsonb`
    const filterChecks: { sub: Subscriber; binding: Binding }[] = []
    const filterSql: string[] = []
    for (const sub of interested) {
      for (const binding of sub.bindings) {
        const f = binding.params.filter
        if (!f || !concerns(binding.params, rel, action)) continue
        const col = byName.get(f.column)
        const source = action === 'DELETE' ? identity : newValues
        filterChecks.push({ sub, binding })
        if (!col || !source.has(f.column)) {
          filterSql.push('false')
          continue
        }
        const right = f.op === 'in'
          ? `(${p(f.value)}::text::${col.sqlType}[])`
          : `${p(f.value)}::text::${col.sqlType}`
        filterSql.push(
          `coalesce(${p(source.get(f.column)!)}::text::${col.sqlType} ${SQL_OPS[f.op]} ${right}, false)`,
        )
      }
    }
    const roles = [...new Set(interested.map((s) => s.claims.role))]
    const [row] = await this.sql.unsafe(
      `select ${record(newValues)} as new, ${record(identity)} as old,
              (select relrowsecurity from pg_class where oid = ${p(String(rel.id))}::oid) as rls,
              (select jsonb_object_agg(role, (select coalesce(jsonb_agg(a.attname order by a.attnum), '[]')
                                                from pg_attribute a
                                               where a.attrelid = ${p(String(rel.id))}::oid and a.attnum > 0
                                                 and not a.attisdropped
                                                 and has_column_privilege(role, a.attrelid, a.attname, 'SELECT')))
                 from unnest(${p(roles)}::text[]) role) as selectable,
              array[${filterSql.join(', ') || 'true'}]::boolean[] as filters`,
      params as any[],
    )
    const filterOk = new Map<Binding, boolean>()
    filterChecks.forEach((c, i) => filterOk.set(c.binding, row.filters[i]))

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

    for (const sub of interested) {
      const selectable = new Set<string>(row.selectable?.[sub.claims.role] ?? [])
      const relevant = sub.bindings.filter((b) => concerns(b.params, rel, action))
      if (action !== 'DELETE' && !pk.length) {
        sub.push(relevant.map((b) => b.id), errorData('Error 400: Bad Request, no primary key'))
        continue
      }
      if (action !== 'DELETE' && !pk.every((c) => selectable.has(c.name))) {
        sub.push(relevant.map((b) => b.id), errorData('Error 401: Unauthorized'))
        continue
      }
      const ids = relevant.filter((b) => !b.params.filter || filterOk.get(b)).map((b) => b.id)
      if (!ids.length) continue
      if (row.rls && action !== 'DELETE') {
        let visible: boolean
        try {
          visible = await this.visibleTo(sub.claims, rel, pk, newValues, byName)
        } catch (e) {
          console.error('realtime: RLS check failed', e)
          sub.push(ids, errorData('Error 500: Internal Server Error, RLS policy evaluation failed'))
          continue
        }
        if (!visible) continue
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
