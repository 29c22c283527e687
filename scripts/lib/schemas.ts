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
import {
  bootstrapPlatform, type Cluster, dbUrl, ensureCluster, psqlAsPostgres, startPostgres, stopPostgres,
} from './db.ts'
import { isRoot, ROOT, run, StackError } from './proc.ts'

export const SCHEMAS_DIR = `${ROOT}/supabase/schemas`
export const MIGRATIONS_DIR = `${ROOT}/supabase/migrations`
const LOCAL_DIR = `${ROOT}/sql/local`

const sortedSql = (dir: string) =>
  [...Deno.readDirSync(dir)].filter((e) => e.isFile && e.name.endsWith('.sql')).map((e) => `${dir}/${e.name}`)
    .sort()

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
    const pattern = new RegExp(
      `^${path.slice(dir.length + 1).replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*')}$`,
    )
    files.push(...sortedSql(dir).filter((f) => pattern.test(f.slice(dir.length + 1))))
  }
  return [...new Set(files)]
}

/**
 * A port nothing listens on now, among twenty from TEST_PORT_BASE + 100 (clear of the test stack's),
 * below Linux's ephemeral range like the stacks themselves. Two builds at once ask in turn.
 */
let nextSlot = 0
function freePort(): number {
  const base = Number(Deno.env.get('TEST_PORT_BASE') ?? 25321) + 100
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

/** What a database is built from, after sql/local (the platform's stand-in), as postgres. */
export type Source =
  | { kind: 'migrations'; files?: string[] } // each file in its own transaction, as deployed
  | { kind: 'schemas'; files?: string[] } // all files in one transaction, in schema_paths order

/**
 * A fresh cluster with one database built from `source`; `stop()` removes it. Function bodies
 * are not checked while the schema files load (as when a dump is restored), so a file may call
 * a function another file defines later; everything else must follow schema_paths' order.
 */
export async function buildDatabase(source: Source, label: string = source.kind): Promise<BuiltDatabase> {
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
    // As the local stack and hosted: the platform by its superuser, the project's SQL as postgres.
    await bootstrapPlatform(port)
    if (source.kind === 'migrations') {
      for (const f of source.files ?? migrationFiles()) {
        await psqlAsPostgres(port, { files: [f], singleTransaction: true }).catch((e) => {
          throw new StackError(`${label}: ${f.replace(`${ROOT}/`, '')} failed:\n${(e as Error).message}`)
        })
      }
    } else {
      const files = source.files ?? schemaFiles()
      await psqlAsPostgres(port, { files, before: ['set check_function_bodies = off'], singleTransaction: true })
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
 * What a database built from supabase/schemas cannot hold, so it is never compared: these live
 * in migrations only (README "Database"). Rows are not compared at all (the comparisons read
 * the catalog, never a table's contents); the rest is left out by name below.
 */
export const MIGRATIONS_ONLY = [
  [
    'pg_cron schedules',
    'rows of cron.job (cron.schedule, private.schedule_edge_function_job): data of the pg_cron extension',
  ],
  ['Vault secrets', 'rows of vault.secrets (music_token_key): generated once per project, never in a file'],
  [
    'seed and reference rows',
    "storage buckets, AI usage types and prices, e-mail settings, encouragement config and badges, the assistant's account, workout cities, time zone names",
  ],
  ['data fixes and backfills', 'update/insert/delete on existing rows when a column or rule changes'],
  [
    'role settings',
    "alter role anon/authenticated set jit, authenticator set pgrst.db_pre_request: roles are the platform's, not the database's",
  ],
] as const

/** The audit trigger private.attach_impersonation_audit gives every audited table (impersonation.sql). */
export const AUDIT_TRIGGER = 'zz_record_impersonated_write'

/**
 * Roles and memberships (the platform's, see MIGRATIONS_ONLY) are not diffed. Nor is the audit
 * trigger of each table: the event trigger audit_impersonated_writes_on_new_tables attaches it
 * to a new table in the statement that creates it, so a migration must not create it again.
 */
const DIFF_POLICY = {
  id: 'journal-schemas',
  filter: [
    { match: { kind: ['role', 'membership'] }, action: 'exclude' as const },
    { match: { all: [{ kind: 'trigger' }, { name: AUDIT_TRIGGER }] }, action: 'exclude' as const },
  ],
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
    `-- Part ${i + 1} of ${rendered.files.length}${
      f.transactional ? '' : ' (cannot run inside a transaction)'
    }\n` +
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
const OWN_NAMESPACE =
  `n.nspname not in ('pg_catalog', 'information_schema', 'pg_toast') and n.nspname !~ '^pg_temp'`
const NOT_EXTENSION = (classid: string, objid: string) =>
  `not exists (select 1 from pg_depend d where d.classid = '${classid}'::regclass and d.objid = ${objid} and d.deptype = 'e')`
const ACL = (acl: string, kind: string, owner: string) =>
  `(select string_agg(a::text, ',' order by a::text) from unnest(coalesce(${acl}, acldefault(${kind}, ${owner}))) a)`

const CATALOG_FACTS = `
select 'schema ' || n.nspname as key,
       concat_ws(' | ', pg_get_userbyid(n.nspowner), ${
  ACL('n.nspacl', "'n'", 'n.nspowner')
}, obj_description(n.oid, 'pg_namespace')) as value
  from pg_namespace n where ${OWN_NAMESPACE} and ${NOT_EXTENSION('pg_namespace', 'n.oid')}
union all
select 'extension ' || e.extname, e.extnamespace::regnamespace::text from pg_extension e
union all
select 'relation ' || c.oid::regclass::text, concat_ws(' | ', c.relkind, 'rls=' || c.relrowsecurity, 'force=' || c.relforcerowsecurity,
       'replica identity=' || c.relreplident::text,
       c.reloptions::text, ${
  ACL('c.relacl', "(case c.relkind when 'S' then 's' else 'r' end)::\"char\"", 'c.relowner')
},
       obj_description(c.oid, 'pg_class'), case when c.relkind in ('v', 'm') then pg_get_viewdef(c.oid) end)
  from pg_class c join pg_namespace n on n.oid = c.relnamespace
 where ${OWN_NAMESPACE} and c.relkind in ('r', 'p', 'v', 'm', 'S', 'f') and ${
  NOT_EXTENSION('pg_class', 'c.oid')
}
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
       concat_ws(' | ', pg_get_userbyid(p.proowner), ${
  ACL('p.proacl', "'f'", 'p.proowner')
}, obj_description(p.oid, 'pg_proc'),
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
union all
select 'publication ' || p.pubname, concat_ws(' | ', 'all tables=' || p.puballtables,
       'insert=' || p.pubinsert || ' update=' || p.pubupdate || ' delete=' || p.pubdelete || ' truncate=' || p.pubtruncate,
       (select string_agg(t.schemaname || '.' || t.tablename, ',' order by t.schemaname, t.tablename) from pg_publication_tables t where t.pubname = p.pubname))
  from pg_publication p
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
export function compareFacts(
  a: Map<string, string>,
  b: Map<string, string>,
  names = ['migrations', 'schemas'],
): string[] {
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

// ---------------------------------------------------------------------------------------------
// Where each object is defined: the create statements of a set of SQL files
// ---------------------------------------------------------------------------------------------

export type DefinitionKind = 'function' | 'table' | 'view' | 'policy' | 'trigger' | 'event trigger'

export interface Definition {
  kind: DefinitionKind
  /** schema.name; a policy or trigger: schema.table.name (unquoted names folded to lower case) */
  name: string
  file: string
  line: number
}

/** The text with comments, string literals and dollar-quoted bodies blanked (lines kept). */
function codeOnly(sql: string): string {
  let out = ''
  let i = 0
  const blank = (s: string) => s.replace(/[^\n]/g, ' ')
  while (i < sql.length) {
    const rest = sql.slice(i)
    let m: RegExpMatchArray | null
    if (rest.startsWith('--')) {
      const end = sql.indexOf('\n', i)
      const j = end < 0 ? sql.length : end
      out += blank(sql.slice(i, j))
      i = j
    } else if (rest.startsWith('/*')) {
      const j = sql.indexOf('*/', i + 2) + 2 || sql.length
      out += blank(sql.slice(i, j))
      i = j
    } else if (sql[i] === "'") {
      let j = i + 1
      while (j < sql.length && !(sql[j] === "'" && sql[j + 1] !== "'")) j += sql[j] === "'" ? 2 : 1
      out += "'" + blank(sql.slice(i + 1, j)) + "'"
      i = j + 1
    } else if (sql[i] === '"') {
      const j = sql.indexOf('"', i + 1)
      out += sql.slice(i, j + 1)
      i = j + 1
    } else if ((m = rest.match(/^\$([A-Za-z_][A-Za-z_0-9]*)?\$/))) {
      const j = sql.indexOf(m[0], i + m[0].length)
      const end = j < 0 ? sql.length : j + m[0].length
      out += m[0] + blank(sql.slice(i + m[0].length, end - m[0].length)) + m[0]
      i = end
    } else {
      out += sql[i++]
    }
  }
  return out
}

/** An identifier cut to Postgres' 63 bytes, as it stores a longer one. */
function truncated(id: string): string {
  const bytes = new TextEncoder().encode(id)
  if (bytes.length <= 63) return id
  let cut = 63
  while (cut > 0 && (bytes[cut] & 0xc0) === 0x80) cut-- // not inside a UTF-8 character
  return new TextDecoder().decode(bytes.slice(0, cut))
}

/** A possibly quoted, possibly qualified name as Postgres stores it (public when unqualified). */
function qualified(name: string, parts = 2): string {
  const ids = [...name.matchAll(/"((?:[^"]|"")*)"|([^."\s]+)/g)]
    .map((m) => truncated(m[1] !== undefined ? m[1].replace(/""/g, '"') : m[2].toLowerCase()))
  while (ids.length < parts) ids.unshift('public')
  return ids.join('.')
}

const IDENT = String.raw`(?:"(?:[^"]|"")*"|[A-Za-z_][\w$]*)`
const QNAME = String.raw`${IDENT}(?:\s*\.\s*${IDENT})?`
const STATEMENTS: [DefinitionKind, RegExp, (m: RegExpMatchArray) => string][] = [
  [
    'function',
    new RegExp(String.raw`^create\s+(?:or\s+replace\s+)?(?:function|procedure)\s+(${QNAME})\s*\(`, 'i'),
    (m) => qualified(m[1]),
  ],
  [
    'table',
    new RegExp(String.raw`^create\s+(?:unlogged\s+)?table\s+(?:if\s+not\s+exists\s+)?(${QNAME})`, 'i'),
    (m) => qualified(m[1]),
  ],
  [
    'view',
    new RegExp(
      String
        .raw`^create\s+(?:or\s+replace\s+)?(?:materialized\s+)?view\s+(?:if\s+not\s+exists\s+)?(${QNAME})`,
      'i',
    ),
    (m) => qualified(m[1]),
  ],
  [
    'policy',
    new RegExp(String.raw`^create\s+policy\s+(${IDENT})\s+on\s+(${QNAME})`, 'i'),
    (m) => `${qualified(m[2])}.${qualified(m[1], 1)}`,
  ],
  [
    'event trigger',
    new RegExp(String.raw`^create\s+event\s+trigger\s+(${IDENT})`, 'i'),
    (m) => qualified(m[1], 1),
  ],
  [
    'trigger',
    new RegExp(
      String
        .raw`^create\s+(?:or\s+replace\s+)?(?:constraint\s+)?trigger\s+(${IDENT})\s[\s\S]*?\son\s+(${QNAME})`,
      'i',
    ),
    (m) => `${qualified(m[2])}.${qualified(m[1], 1)}`,
  ],
]

/** Every function, table, view, policy, trigger and event trigger the files create, in order. */
export function definitionsIn(files: string[]): Definition[] {
  const found: Definition[] = []
  for (const file of files) {
    const code = codeOnly(Deno.readTextFileSync(file))
    let start = 0
    for (const statement of code.split(';')) {
      const lead = statement.length - statement.trimStart().length
      const text = statement.trimStart()
      for (const [kind, pattern, name] of STATEMENTS) {
        const m = text.match(pattern)
        if (!m) continue
        const line = code.slice(0, start + lead).split('\n').length
        found.push({ kind, name: name(m), file: file.replace(`${ROOT}/`, ''), line })
        break
      }
      start += statement.length + 1
    }
  }
  return found
}

/**
 * How many definitions of each object the database holds: 1 per table, view, policy, trigger
 * and event trigger; per function name, one per signature (its overloads). Keys as Definition.
 */
export async function databaseObjects(url: string): Promise<Map<string, number>> {
  const sql = postgres(url, { max: 1, onnotice: () => {} })
  try {
    const rows = await sql.unsafe(`
      select 'function ' || n.nspname || '.' || p.proname as key, count(*)::int as n
        from pg_proc p join pg_namespace n on n.oid = p.pronamespace
       where ${OWN_NAMESPACE} and ${NOT_EXTENSION('pg_proc', 'p.oid')} group by 1
      union all
      select case when c.relkind in ('v', 'm') then 'view ' else 'table ' end || n.nspname || '.' || c.relname, 1
        from pg_class c join pg_namespace n on n.oid = c.relnamespace
       where ${OWN_NAMESPACE} and c.relkind in ('r', 'p', 'v', 'm', 'f') and ${
      NOT_EXTENSION('pg_class', 'c.oid')
    }
      union all
      select 'policy ' || n.nspname || '.' || c.relname || '.' || po.polname, 1
        from pg_policy po join pg_class c on c.oid = po.polrelid join pg_namespace n on n.oid = c.relnamespace
       where ${OWN_NAMESPACE} and ${NOT_EXTENSION('pg_class', 'c.oid')}
      union all
      select 'trigger ' || n.nspname || '.' || c.relname || '.' || tg.tgname, 1
        from pg_trigger tg join pg_class c on c.oid = tg.tgrelid join pg_namespace n on n.oid = c.relnamespace
       where not tg.tgisinternal and ${OWN_NAMESPACE} and ${NOT_EXTENSION('pg_class', 'c.oid')}
      union all
      select 'event trigger ' || e.evtname, 1 from pg_event_trigger e where ${
      NOT_EXTENSION('pg_event_trigger', 'e.oid')
    }`)
    return new Map(rows.map((r) => [r.key as string, r.n as number]))
  } finally {
    await sql.end()
  }
}

/**
 * The objects of the database at `url` not defined exactly once (a function: once per
 * signature) in `files`, and definitions of objects it does not hold. Left out: what sql/local
 * defines (the platform's) and the audit trigger each table gets from
 * private.attach_impersonation_audit rather than a statement of its own.
 */
export async function definitionProblems(url: string, files = schemaFiles()): Promise<string[]> {
  const inDatabase = await databaseObjects(url)
  const platform = new Set(definitionsIn(sortedSql(LOCAL_DIR)).map((d) => `${d.kind} ${d.name}`))
  const defined = new Map<string, Definition[]>()
  for (const d of definitionsIn(files)) {
    const key = `${d.kind} ${d.name}`
    defined.set(key, [...(defined.get(key) ?? []), d])
  }
  const problems: string[] = []
  for (const [key, expected] of [...inDatabase].sort()) {
    if (platform.has(key) || (key.startsWith('trigger ') && key.endsWith(`.${AUDIT_TRIGGER}`))) continue
    const where = defined.get(key) ?? []
    if (where.length !== expected) {
      const places = where.map((d) => `${d.file}:${d.line}`).join(', ') || 'nowhere'
      problems.push(`${key}: ${expected} in the database, defined ${where.length} time(s) (${places})`)
    }
  }
  for (const [key, where] of defined) {
    if (!inDatabase.has(key)) {
      problems.push(
        `${key}: defined at ${where.map((d) => `${d.file}:${d.line}`).join(', ')}, not in the database`,
      )
    }
  }
  return problems
}
