// The declarative schemas (supabase/schemas/) against the migrations (supabase/migrations/):
// each builds its own throw-away database, and the two are compared. Used by
// `npm run db:diff` (which writes the difference as a new migration) and by
// tests/schemas_test.ts (which fails on any difference).
//
// Each database gets its own small cluster: pg_cron, which both declare, can be created in one
// database per cluster only. No Docker: the same Postgres 15 the local stack runs.
import { extract, type Plan, plan, renderPlanFiles } from '@supabase/pg-delta'
import pg from 'pg'
import postgres from 'postgres'
import { type Cluster, dbUrl, ensureCluster, startPostgres, stopPostgres } from './db.ts'
import { isRoot, ROOT, run, StackError } from './proc.ts'

export const SCHEMAS_DIR = `${ROOT}/supabase/schemas`
export const MIGRATIONS_DIR = `${ROOT}/supabase/migrations`
const LOCAL_DIR = `${ROOT}/sql/local`

const sortedSql = (dir: string) =>
  [...Deno.readDirSync(dir)].filter((e) => e.isFile && e.name.endsWith('.sql')).map((e) => `${dir}/${e.name}`).sort()

/** The migrations, in the order they deploy. */
export const migrationFiles = () => sortedSql(MIGRATIONS_DIR)

/**
 * The schema files in the order the Supabase CLI loads them: `[db.migrations] schema_paths`
 * of supabase/config.toml (paths relative to supabase/; a `*` matches within one folder).
 */
export function schemaFiles(configPath = `${ROOT}/supabase/config.toml`): string[] {
  const toml = Deno.readTextFileSync(configPath)
  const section = toml.split(/^\[db\.migrations\]\s*$/m)[1]?.split(/^\[/m)[0] ?? ''
  const list = section.match(/^schema_paths\s*=\s*\[([\s\S]*?)\]/m)?.[1]
  if (list === undefined) throw new StackError(`${configPath}: [db.migrations] has no schema_paths`)
  const base = configPath.replace(/\/[^/]+$/, '')
  const files: string[] = []
  for (const [, entry] of list.matchAll(/"([^"]+)"/g)) {
    const path = `${base}/${entry.replace(/^\.\//, '')}`
    if (!path.includes('*')) {
      files.push(path)
      continue
    }
    const dir = path.replace(/\/[^/]*$/, '')
    const pattern = new RegExp(`^${path.slice(dir.length + 1).replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*')}$`)
    files.push(...sortedSql(dir).filter((f) => pattern.test(f.slice(dir.length + 1))))
  }
  return [...new Set(files)]
}

/**
 * A port nothing listens on now, among the twenty above the test stack's (TEST_PORT_BASE + 50),
 * below Linux's ephemeral range like the stacks themselves. Two builds at once ask in turn.
 */
let nextSlot = 0
function freePort(): number {
  const base = Number(Deno.env.get('TEST_PORT_BASE') ?? 25321) + 50
  for (let i = 0; i < 20; i++) {
    const slot = (nextSlot + i) % 20
    try {
      Deno.listen({ hostname: '127.0.0.1', port: base + slot }).close()
      nextSlot = slot + 1
      return base + slot
    } catch {
      // taken: try the next one
    }
  }
  throw new StackError(`no free port in ${base}-${base + 19} for a throw-away database`)
}

export interface BuiltDatabase {
  url: string
  port: number
  stop(): Promise<void>
}

/** What a database is built from, after sql/local (the platform's stand-in). */
export type Source =
  | { kind: 'migrations'; files?: string[] } // each file in its own transaction, as deployed
  | { kind: 'schemas'; files?: string[] } // all files in one transaction, in schema_paths order

/**
 * A fresh cluster with one database built from `source`; `stop()` removes it. Function bodies
 * are not checked while the schema files load (as when a dump is restored), so a file may call
 * a function another file defines later; everything else must follow schema_paths' order.
 */
export async function buildDatabase(source: Source, label = source.kind): Promise<BuiltDatabase> {
  const dataDir = await Deno.makeTempDir({ prefix: `journal-${label}-` })
  await Deno.chmod(dataDir, 0o755)
  if (isRoot()) await run('chown', ['postgres:postgres', dataDir])
  const port = freePort()
  const cluster: Cluster = { dataDir: `${dataDir}/db`, logFile: `${dataDir}/postgres.log`, port }
  const remove = async () => {
    await stopPostgres(cluster)
    if (isRoot()) await run('rm', ['-rf', dataDir]).catch(() => {})
    else await Deno.remove(dataDir, { recursive: true }).catch(() => {})
  }
  try {
    await ensureCluster(cluster, { throwaway: true })
    await startPostgres(cluster)
    const url = dbUrl(port)
    const psql = (args: string[]) => run('psql', [url, '-X', '-q', '-v', 'ON_ERROR_STOP=1', ...args])
    for (const f of sortedSql(LOCAL_DIR)) await psql(['-f', f])
    if (source.kind === 'migrations') {
      for (const f of source.files ?? migrationFiles()) {
        await psql(['--single-transaction', '-f', f]).catch((e) => {
          throw new StackError(`${label}: ${f.replace(`${ROOT}/`, '')} failed:\n${(e as Error).message}`)
        })
      }
    } else {
      const files = source.files ?? schemaFiles()
      await psql(['--single-transaction', '-c', 'set check_function_bodies = off', ...files.flatMap((f) => ['-f', f])])
        .catch((e) => {
          throw new StackError(`${label}: loading supabase/schemas failed:\n${(e as Error).message}`)
        })
    }
    return { url, port, stop: remove }
  } catch (e) {
    await remove()
    throw e
  }
}

// ---------------------------------------------------------------------------------------------
// The diff tool: pg-delta (Supabase's diff engine behind `supabase db diff`)
// ---------------------------------------------------------------------------------------------

/**
 * Roles and their settings are the cluster's, not the database's: on Supabase the platform
 * owns anon, authenticated and authenticator, so a setting on them (jit, pgrst.*) stays a
 * migration of its own. Everything else the engine models is compared.
 */
const DIFF_POLICY = {
  id: 'journal-schemas',
  filter: [{ match: { kind: ['role', 'membership'] }, action: 'exclude' as const }],
  assumedRoles: ['postgres', 'anon', 'authenticated', 'service_role', 'authenticator', 'supabase_auth_admin'],
}

/** The plan that turns the database at `fromUrl` into the one at `toUrl`. */
export async function diffPlan(fromUrl: string, toUrl: string): Promise<Plan> {
  const from = new pg.Pool({ connectionString: fromUrl, max: 4 })
  const to = new pg.Pool({ connectionString: toUrl, max: 4 })
  try {
    const [a, b] = await Promise.all([extract(from), extract(to)])
    return plan(a.factBase, b.factBase, { policy: DIFF_POLICY })
  } finally {
    await Promise.all([from.end(), to.end()])
  }
}

/** The plan as one SQL script (segments that cannot share a transaction are marked). */
export function planSql(p: Plan): string {
  const rendered = renderPlanFiles(p, { allowDrops: true })
  if (rendered.files.length === 1) return rendered.files[0].contents.trim() + '\n'
  return rendered.files.map((f, i) =>
    `-- Part ${i + 1} of ${rendered.files.length}${f.transactional ? '' : ' (cannot run inside a transaction)'}\n` +
    f.contents.trim()
  ).join('\n\n') + '\n'
}

/** One line per action: what it does to which object. */
export function describePlan(p: Plan): string[] {
  return p.actions.map((a) => {
    const first = a.sql.split('\n')[0].replace(/\s+/g, ' ').trim()
    const danger = a.verb === 'drop' || a.dataLoss === 'destructive' ? '  [destructive]' : ''
    return `${first.length > 110 ? first.slice(0, 107) + '...' : first}${danger}`
  })
}

// ---------------------------------------------------------------------------------------------
// A second, independent comparison: the catalog itself
// ---------------------------------------------------------------------------------------------

// Every object the project could own: all schemas but Postgres' own, without what extensions
// bring. (sql/local's stand-ins are the same on both sides, so they compare equal.)
const OWN_NAMESPACE = `n.nspname not in ('pg_catalog', 'information_schema', 'pg_toast') and n.nspname !~ '^pg_temp'`
const NOT_EXTENSION = (classid: string, objid: string) =>
  `not exists (select 1 from pg_depend d where d.classid = '${classid}'::regclass and d.objid = ${objid} and d.deptype = 'e')`
const ACL = (acl: string, kind: string, owner: string) =>
  `(select string_agg(a::text, ',' order by a::text) from unnest(coalesce(${acl}, acldefault(${kind}, ${owner}))) a)`

const CATALOG_FACTS = `
select 'schema ' || n.nspname as key,
       concat_ws(' | ', pg_get_userbyid(n.nspowner), ${ACL('n.nspacl', "'n'", 'n.nspowner')}, obj_description(n.oid, 'pg_namespace')) as value
  from pg_namespace n where ${OWN_NAMESPACE} and ${NOT_EXTENSION('pg_namespace', 'n.oid')}
union all
select 'extension ' || e.extname, e.extnamespace::regnamespace::text from pg_extension e
union all
select 'relation ' || c.oid::regclass::text, concat_ws(' | ', c.relkind, 'rls=' || c.relrowsecurity, 'force=' || c.relforcerowsecurity,
       c.reloptions::text, ${ACL('c.relacl', "(case c.relkind when 'S' then 's' else 'r' end)::\"char\"", 'c.relowner')},
       obj_description(c.oid, 'pg_class'), case when c.relkind in ('v', 'm') then pg_get_viewdef(c.oid) end)
  from pg_class c join pg_namespace n on n.oid = c.relnamespace
 where ${OWN_NAMESPACE} and c.relkind in ('r', 'p', 'v', 'm', 'S', 'f') and ${NOT_EXTENSION('pg_class', 'c.oid')}
union all
select 'column ' || c.oid::regclass::text || '.' || a.attname,
       concat_ws(' | ', 'position ' || row_number() over (partition by c.oid order by a.attnum), format_type(a.atttypid, a.atttypmod),
       case when a.attnotnull then 'not null' end, pg_get_expr(ad.adbin, ad.adrelid), nullif(a.attidentity, ''),
       nullif(a.attgenerated, ''), case when a.attcollation <> t.typcollation then a.attcollation::regcollation::text end,
       (select string_agg(x::text, ',' order by x::text) from unnest(a.attacl) x), col_description(c.oid, a.attnum))
  from pg_attribute a join pg_class c on c.oid = a.attrelid join pg_namespace n on n.oid = c.relnamespace
  join pg_type t on t.oid = a.atttypid left join pg_attrdef ad on ad.adrelid = a.attrelid and ad.adnum = a.attnum
 where ${OWN_NAMESPACE} and c.relkind in ('r', 'p', 'v', 'm', 'f') and a.attnum > 0 and not a.attisdropped
   and ${NOT_EXTENSION('pg_class', 'c.oid')}
union all
select 'constraint ' || coalesce(co.conrelid::regclass::text, co.contypid::regtype::text) || '.' || co.conname,
       concat_ws(' | ', pg_get_constraintdef(co.oid), 'deferrable=' || co.condeferrable || '/' || co.condeferred,
       obj_description(co.oid, 'pg_constraint'))
  from pg_constraint co join pg_namespace n on n.oid = co.connamespace
 where ${OWN_NAMESPACE} and ${NOT_EXTENSION('pg_constraint', 'co.oid')}
   and (co.conrelid = 0 or ${NOT_EXTENSION('pg_class', 'co.conrelid')})
union all
select 'index ' || i.indexrelid::regclass::text, concat_ws(' | ', pg_get_indexdef(i.indexrelid), obj_description(i.indexrelid, 'pg_class'))
  from pg_index i join pg_class c on c.oid = i.indexrelid join pg_namespace n on n.oid = c.relnamespace
 where ${OWN_NAMESPACE} and ${NOT_EXTENSION('pg_class', 'i.indrelid')}
union all
select 'function ' || p.oid::regprocedure::text,
       concat_ws(' | ', pg_get_userbyid(p.proowner), ${ACL('p.proacl', "'f'", 'p.proowner')}, obj_description(p.oid, 'pg_proc'),
       case when p.prokind in ('f', 'p', 'w') then pg_get_functiondef(p.oid) else p.prokind::text end)
  from pg_proc p join pg_namespace n on n.oid = p.pronamespace
 where ${OWN_NAMESPACE} and ${NOT_EXTENSION('pg_proc', 'p.oid')}
union all
select 'policy ' || c.oid::regclass::text || '.' || po.polname,
       concat_ws(' | ', case when po.polpermissive then 'permissive' else 'restrictive' end, po.polcmd,
       (select string_agg(case r when 0 then 'public' else pg_get_userbyid(r) end, ',' order by 1) from unnest(po.polroles) r),
       'using ' || pg_get_expr(po.polqual, po.polrelid), 'check ' || pg_get_expr(po.polwithcheck, po.polrelid),
       obj_description(po.oid, 'pg_policy'))
  from pg_policy po join pg_class c on c.oid = po.polrelid join pg_namespace n on n.oid = c.relnamespace
 where ${OWN_NAMESPACE} and ${NOT_EXTENSION('pg_class', 'c.oid')}
union all
select 'trigger ' || tg.tgrelid::regclass::text || '.' || tg.tgname,
       concat_ws(' | ', pg_get_triggerdef(tg.oid), 'enabled=' || tg.tgenabled::text, obj_description(tg.oid, 'pg_trigger'))
  from pg_trigger tg join pg_class c on c.oid = tg.tgrelid join pg_namespace n on n.oid = c.relnamespace
 where not tg.tgisinternal and ${OWN_NAMESPACE} and ${NOT_EXTENSION('pg_class', 'c.oid')}
union all
select 'event trigger ' || e.evtname, concat_ws(' | ', e.evtevent, e.evtfoid::regproc::text, e.evtenabled, e.evttags::text)
  from pg_event_trigger e where ${NOT_EXTENSION('pg_event_trigger', 'e.oid')}
union all
select 'sequence ' || s.seqrelid::regclass::text,
       concat_ws(' | ', format_type(s.seqtypid, null), s.seqstart, s.seqincrement, s.seqmin, s.seqmax, s.seqcache, s.seqcycle)
  from pg_sequence s join pg_class c on c.oid = s.seqrelid join pg_namespace n on n.oid = c.relnamespace
 where ${OWN_NAMESPACE} and ${NOT_EXTENSION('pg_class', 'c.oid')}
union all
select 'type ' || t.oid::regtype::text, concat_ws(' | ', t.typtype, obj_description(t.oid, 'pg_type'),
       (select string_agg(e.enumlabel, ',' order by e.enumsortorder) from pg_enum e where e.enumtypid = t.oid),
       case when t.typtype = 'd' then format_type(t.typbasetype, t.typtypmod) end)
  from pg_type t join pg_namespace n on n.oid = t.typnamespace
 where ${OWN_NAMESPACE} and t.typtype in ('e', 'd', 'r') and ${NOT_EXTENSION('pg_type', 't.oid')}
union all
select 'default privileges ' || pg_get_userbyid(d.defaclrole) || ' ' || coalesce(d.defaclnamespace::regnamespace::text, 'all schemas')
       || ' ' || d.defaclobjtype::text, (select string_agg(a::text, ',' order by a::text) from unnest(d.defaclacl) a)
  from pg_default_acl d
`

/** Every catalog fact of the project's objects, by object: definition, grants, comment. */
export async function catalogFacts(url: string): Promise<Map<string, string>> {
  const sql = postgres(url, { max: 1, onnotice: () => {} })
  try {
    const rows = await sql.unsafe(CATALOG_FACTS)
    return new Map(rows.map((r) => [r.key as string, (r.value ?? '') as string]))
  } finally {
    await sql.end()
  }
}

/** The objects whose facts differ, each with both sides. */
export function compareFacts(a: Map<string, string>, b: Map<string, string>, names = ['migrations', 'schemas']): string[] {
  const out: string[] = []
  for (const key of [...new Set([...a.keys(), ...b.keys()])].sort()) {
    const x = a.get(key)
    const y = b.get(key)
    if (x === y) continue
    if (x === undefined) out.push(`${key}: only in the ${names[1]}`)
    else if (y === undefined) out.push(`${key}: only in the ${names[0]}`)
    else out.push(`${key}: differs\n    ${names[0]}: ${x}\n    ${names[1]}: ${y}`)
  }
  return out
}
