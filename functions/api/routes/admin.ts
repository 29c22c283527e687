// GET /api/admin/health: the production health page for super admins.
import { Hono } from 'hono'
import { optionalEnv } from '../../_shared/env.ts'
import { type ApiEnv, superAdmin } from '../credentials.ts'

const startedAt = Date.now()

function migrationsDir(): string {
  return optionalEnv('MIGRATIONS_DIR') ?? new URL('../../../supabase/migrations/', import.meta.url).pathname
}

/** Migration versions present as files (`<version>_<name>.sql`), by version. */
export async function migrationFiles(dir = migrationsDir()): Promise<Map<string, string>> {
  const files = new Map<string, string>()
  for await (const e of Deno.readDir(dir)) {
    if (e.isFile && e.name.endsWith('.sql')) files.set(e.name.split('_')[0], e.name)
  }
  return files
}

export interface Probe {
  ok: boolean
  latencyMs: number
  appliedVersions: string[]
}

/** The report from one database probe; degraded when the round trip failed. */
export function healthReport(probe: Probe, files: Map<string, string>, commit: string, uptimeSeconds: number) {
  const applied = new Set(probe.appliedVersions)
  return {
    status: probe.ok ? 'ok' : 'degraded',
    database_latency_ms: probe.ok ? Math.round(probe.latencyMs * 10) / 10 : null,
    commit,
    uptime_seconds: Math.floor(uptimeSeconds),
    // Unknown while the database is unreachable.
    unapplied_migrations: probe.ok ? [...files.keys()].sort().filter((v) => !applied.has(v)).map((v) => files.get(v)!) : null,
  }
}

export const adminRoutes = new Hono<ApiEnv>()
  .get('/admin/health', superAdmin, async (c) => {
    const t0 = performance.now()
    let probe: Probe
    try {
      const { data, error } = await c.var.db.rpc('applied_migrations')
      probe = { ok: !error, latencyMs: performance.now() - t0, appliedVersions: (data ?? []).map((r: { version: string }) => r.version) }
      if (error) console.error('health probe failed', error)
    } catch (e) {
      console.error('health probe failed', e)
      probe = { ok: false, latencyMs: performance.now() - t0, appliedVersions: [] }
    }
    const commit = optionalEnv('COMMIT_SHA') ?? 'unknown'
    return c.json(healthReport(probe, await migrationFiles(), commit, (Date.now() - startedAt) / 1000))
  })
