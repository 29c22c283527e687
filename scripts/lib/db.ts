// The local Postgres 15 cluster: create, start, stop, and bring its schema up to date
// (sql/local, then new migrations, then the seed on a fresh cluster).
import postgres from 'postgres'
import { exists, isRoot, PG_BIN, ROOT, run, StackError } from './proc.ts'

export const dbUrl = (port: number, user = 'postgres', password = 'postgres') =>
  `postgresql://${user}:${password}@127.0.0.1:${port}/postgres`

/**
 * The cluster's bootstrap superuser, as hosted's supabase_admin: it creates what the platform
 * provides (sql/local) and nothing else. Migrations, the seed, the app and the tests use
 * postgres, which is not a superuser (its rights: sql/local/90_postgres_role.sql).
 */
export const ADMIN_ROLE = 'supabase_admin'
export const adminDbUrl = (port: number) => dbUrl(port, ADMIN_ROLE)

/**
 * The same database through the cluster's Unix socket (Postgres listens on one in its own
 * folder, `-k`, and trusts it: only the cluster's owner can enter that folder). For parts that
 * run beside Postgres on every request, PostgREST above all: each of its requests makes five
 * round trips (BEGIN, settings, the pre-request check, the query, COMMIT), and the socket spares each the TCP stack.
 */
export const socketDbUrl = (c: { dataDir: string; port: number }, user = 'postgres') =>
  `postgresql://${user}@/postgres?host=${encodeURIComponent(c.dataDir)}&port=${c.port}`

export interface Cluster {
  dataDir: string // the cluster folder (PGDATA)
  logFile: string
  port: number
}

const SETTINGS = `
# --- added by scripts/lib/db.ts ---
listen_addresses = '127.0.0.1'
shared_preload_libraries = 'pg_cron'
cron.database_name = 'postgres'
cron.use_background_workers = on
max_worker_processes = 32
timezone = 'UTC'
log_timezone = 'UTC'
max_connections = 200
shared_buffers = '256MB'
# Logical decoding for the Realtime stand-in (a temporary slot on the supabase_realtime publication).
wal_level = logical
max_replication_slots = 10
max_wal_senders = 10
`

/** Settings a cluster made before they were added must gain (applied while it is stopped). */
const LATER_SETTINGS = [{ present: /^\s*wal_level\s*=\s*'?logical/m, line: 'wal_level = logical' }]

/** Creates the cluster if its folder is empty. Returns true when it was created now. */
export async function ensureCluster(c: Cluster, opts: { throwaway?: boolean } = {}): Promise<boolean> {
  if (await exists(`${c.dataDir}/PG_VERSION`)) {
    await addLaterSettings(c)
    return false
  }
  if (!(await exists(`${PG_BIN}/initdb`))) {
    throw new StackError(`Postgres 15 is missing (${PG_BIN}/initdb). Run: npm start (it installs it) or apt-get install postgresql-15`)
  }
  await Deno.mkdir(c.dataDir, { recursive: true })
  const pwfile = `${c.dataDir}.pw`
  await Deno.writeTextFile(pwfile, 'postgres\n')
  if (isRoot()) {
    await run('chown', ['-R', 'postgres:postgres', c.dataDir, pwfile])
    try {
      await run('runuser', ['-u', 'postgres', '--', 'test', '-w', c.dataDir])
    } catch {
      throw new StackError(
        `The postgres user cannot write ${c.dataDir}: a parent folder is closed to it. ` +
          `Move the project under a folder others may enter (chmod o+x on its parents).`,
      )
    }
  }
  try {
    await run(`${PG_BIN}/initdb`, [
      '-D', c.dataDir, '-U', ADMIN_ROLE, `--pwfile=${pwfile}`, '--auth-local=trust',
      '--auth-host=scram-sha-256', '-E', 'UTF8', '--locale=C.UTF-8',
    ], { asPostgres: true })
  } finally {
    await Deno.remove(pwfile).catch(() => {})
  }
  // A throw-away test cluster trades durability for speed.
  const extra = opts.throwaway ? `fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n` : ''
  const conf = `${c.dataDir}/postgresql.conf`
  const text = await Deno.readTextFile(conf)
  if (isRoot()) {
    await run('runuser', ['-u', 'postgres', '--', 'tee', '-a', conf], { stdin: SETTINGS + extra })
  } else {
    await Deno.writeTextFile(conf, text + SETTINGS + extra)
  }
  return true
}

/** Appends to an existing cluster's postgresql.conf the settings it predates (the last one read wins). */
async function addLaterSettings(c: Cluster) {
  const conf = `${c.dataDir}/postgresql.conf`
  const text = await Deno.readTextFile(conf).catch(() => null)
  if (text === null) return
  const missing = LATER_SETTINGS.filter((s) => !s.present.test(text))
  if (!missing.length) return
  const extra = `# --- added by scripts/lib/db.ts ---\n${missing.map((s) => s.line).join('\n')}\n`
  if (isRoot()) await run('runuser', ['-u', 'postgres', '--', 'tee', '-a', conf], { stdin: extra })
  else await Deno.writeTextFile(conf, text + extra)
}

export async function startPostgres(c: Cluster) {
  try {
    await run(`${PG_BIN}/pg_ctl`, [
      '-D', c.dataDir, '-l', c.logFile, '-w', '-t', '60', '-o', `-p ${c.port} -k ${c.dataDir}`, 'start',
    ], { asPostgres: true })
  } catch (e) {
    const log = await Deno.readTextFile(c.logFile).catch(() => '')
    throw new StackError(`Postgres did not start on port ${c.port}.\n${(e as Error).message}\n${log.slice(-2000)}`)
  }
}

export async function stopPostgres(c: Cluster) {
  if (!(await exists(`${c.dataDir}/postmaster.pid`))) return
  await run(`${PG_BIN}/pg_ctl`, ['-D', c.dataDir, '-m', 'fast', '-w', 'stop'], { asPostgres: true })
    .catch(() => {})
}

const PSQL = ['-X', '-q', '-v', 'ON_ERROR_STOP=1']

/** Runs one SQL file with psql as the bootstrap superuser (the platform's setup only). */
export function psqlFileAsAdmin(port: number, file: string) {
  return run('psql', [adminDbUrl(port), ...PSQL, '-f', file])
}

/**
 * Statements hosted's postgres may run only through supautils (>= 2.7), which runs them as
 * supabase_admin: plain Postgres 15 keeps event triggers to superusers.
 */
const EVENT_TRIGGER_STATEMENT = /^[ \t]*(?:create|alter|drop|comment\s+on)\s+event\s+trigger\b[^;]*;/gim

/**
 * Runs SQL as postgres, as `supabase db push` does on hosted: `before` commands, the files,
 * `after` commands, in one transaction when asked. A file with an event trigger statement runs
 * in a session of supabase_admin that is postgres (`set role`) for everything but those
 * statements (supautils' emulation); otherwise psql connects as postgres itself.
 */
export function psqlAsPostgres(
  port: number,
  o: { files: string[]; before?: string[]; after?: string[]; singleTransaction?: boolean },
) {
  const once = o.singleTransaction ? ['--single-transaction'] : []
  const texts = o.files.map((f) => Deno.readTextFileSync(f))
  if (!texts.some((t) => t.search(EVENT_TRIGGER_STATEMENT) >= 0)) {
    const commands = (list: string[] = []) => list.flatMap((c) => ['-c', c])
    return run('psql', [
      dbUrl(port), ...PSQL, ...once, ...commands(o.before), ...o.files.flatMap((f) => ['-f', f]), ...commands(o.after),
    ])
  }
  const asPostgres = 'set role postgres;'
  const script = [
    asPostgres,
    ...(o.before ?? []).map((c) => `${c};`),
    ...texts.map((t, i) =>
      `-- ${o.files[i]}\n` + t.replace(EVENT_TRIGGER_STATEMENT, (statement) => `reset role;\n${statement}\n${asPostgres}`)
    ),
    ...(o.after ?? []).map((c) => `${c};`),
  ].join('\n')
  return run('psql', [adminDbUrl(port), ...PSQL, ...once, '-f', '-'], { stdin: script })
}

/**
 * A cluster made before migrations ran as a non-superuser postgres has no supabase_admin and
 * a superuser postgres: it cannot be brought to hosted's roles in place.
 */
export async function refuseOldCluster(port: number, dataDir: string) {
  const sql = postgres(dbUrl(port), { max: 1, onnotice: () => {} })
  try {
    const [row] = await sql`select exists (select 1 from pg_roles where rolname = ${ADMIN_ROLE}) as current`
    if (row.current) return
  } finally {
    await sql.end()
  }
  throw new StackError(
    `The database in ${dataDir} was created before migrations ran as a non-superuser postgres ` +
      `(it has no ${ADMIN_ROLE} role), so it cannot behave as hosted Supabase does. Recreate it: ` +
      `stop the stack (npm run stop), delete ${dataDir} (its data goes; the seed refills the demo users), ` +
      `and run npm start again.`,
  )
}

async function sqlFiles(dir: string) {
  const names: string[] = []
  for await (const e of Deno.readDir(dir)) if (e.isFile && e.name.endsWith('.sql')) names.push(e.name)
  return names.sort()
}

export const migrationsDir = `${ROOT}/supabase/migrations`

/** Applies each migration not yet recorded, each in its own transaction with its record. */
export async function applyMigrations(port: number): Promise<string[]> {
  const sql = postgres(dbUrl(port), { max: 1, onnotice: () => {} })
  try {
    const done = new Set(
      (await sql`select version from supabase_migrations.schema_migrations`).map((r) => r.version as string),
    )
    const applied: string[] = []
    for (const file of await sqlFiles(migrationsDir)) {
      const [version, ...rest] = file.replace(/\.sql$/, '').split('_')
      if (done.has(version)) continue
      const record = `insert into supabase_migrations.schema_migrations (version, name) values ('${version}', '${
        rest.join('_')
      }')`
      try {
        await psqlAsPostgres(port, { files: [`${migrationsDir}/${file}`], after: [record], singleTransaction: true })
      } catch (e) {
        throw new StackError(`Migration ${file} failed; nothing of it was applied.\n${(e as Error).message}`)
      }
      applied.push(file)
    }
    return applied
  } finally {
    await sql.end()
  }
}

/** The platform's stand-ins (sql/local), created by the bootstrap superuser. */
export async function bootstrapPlatform(port: number) {
  for (const f of await sqlFiles(`${ROOT}/sql/local`)) await psqlFileAsAdmin(port, `${ROOT}/sql/local/${f}`)
}

/** What the platform provides (sql/local), then new migrations, then the seed if fresh: both as postgres. */
export async function prepareDatabase(port: number, fresh: boolean, log: (s: string) => void) {
  await bootstrapPlatform(port)
  const applied = await applyMigrations(port)
  log(applied.length ? `applied ${applied.length} migration(s): ${applied.join(', ')}` : 'applied 0 migrations (database is up to date)')
  if (fresh && (await exists(`${ROOT}/supabase/seed.sql`))) {
    await psqlAsPostgres(port, { files: [`${ROOT}/supabase/seed.sql`] })
    log('seeded demo data (supabase/seed.sql)')
  }
  return applied
}
