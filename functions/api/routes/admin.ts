// GET /api/admin/health: the production health page for super admins.
import { z } from '@hono/zod-openapi'
import { aiConfig } from '../../_shared/ai.ts'
import { resendClient } from '../../_shared/email.ts'
import { optionalEnv } from '../../_shared/env.ts'
import { expoConfigured } from '../../_shared/expo_push.ts'
import { musicConfig } from '../../_shared/music.ts'
import { stripeClient } from '../../_shared/payments.ts'
import { webPushConfigured } from '../../_shared/web_push.ts'
import { superAdminEvenIfDegraded } from '../credentials.ts'
import { endpoint, ErrorBody, routeModule } from '../openapi.ts'

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
export function healthReport(
  probe: Probe,
  files: Map<string, string>,
  commit: string,
  uptimeSeconds: number,
) {
  const applied = new Set(probe.appliedVersions)
  return {
    status: probe.ok ? 'ok' : 'degraded',
    database_latency_ms: probe.ok ? Math.round(probe.latencyMs * 10) / 10 : null,
    commit,
    uptime_seconds: Math.floor(uptimeSeconds),
    // Unknown while the database is unreachable.
    unapplied_migrations: probe.ok
      ? [...files.keys()].sort().filter((v) => !applied.has(v)).map((v) => files.get(v)!)
      : null,
  }
}

const Health = z.object({
  status: z.enum(['ok', 'degraded']),
  database_latency_ms: z.number().nullable(),
  commit: z.string(),
  uptime_seconds: z.number().int(),
  unapplied_migrations: z.array(z.string()).nullable(),
  cron: z.array(z.object({
    job_name: z.string(),
    schedule: z.string(),
    active: z.boolean(),
    last_status: z.string().nullable().describe(
      'cron.job_run_details status of the last run (succeeded, failed, running); null: never ran',
    ),
    last_started_at: z.string().nullable(),
    last_finished_at: z.string().nullable(),
    last_message: z.string().nullable(),
  })).nullable().describe('Each pg_cron job with its last run (null while the database is unreachable)'),
  notification_channels: z.object({
    expo: z.boolean().describe('EXPO_ACCESS_TOKEN is set'),
    web_push: z.boolean().describe(
      'WEB_PUSH_VAPID_PUBLIC_KEY, WEB_PUSH_VAPID_PRIVATE_KEY and WEB_PUSH_SUBJECT are set',
    ),
    email: z.boolean().describe('RESEND_API_KEY and EMAIL_FROM are set (the digest)'),
  }).describe('Which notification channels are on; a channel that is off is skipped, nothing else breaks'),
})

/** Which providers this server is configured for (the same checks the features use). */
export function providersConfigured() {
  return {
    ai: aiConfig() !== null,
    stripe: stripeClient() !== null,
    resend: resendClient() !== null,
    expo: expoConfigured(),
    web_push: webPushConfigured(),
    music: musicConfig() !== null,
  }
}

export const JobRun = z.object({
  started_at: z.string(),
  finished_at: z.string(),
  succeeded: z.number().int(),
  failed: z.number().int(),
  remaining: z.number().int().nullable(),
  details: z.record(z.string(), z.unknown()).describe('What the job logged (errors, counts, duration)'),
}).openapi('JobRun')

export const Queue = z.object({
  name: z.string().describe('notification_outbox, engagement, account_deletions, ai_jobs, tone_analysis'),
  label: z.string(),
  depth: z.number().int().nullable().describe('Items waiting (counted up to 100,000); null: not a queue'),
  due: z.number().int().nullable().describe('Of those, the ones whose moment has come'),
  oldest_at: z.string().nullable().describe('The oldest due item (account deletions, AI jobs: the oldest item)'),
  failing: z.number().int().nullable().describe('Account deletions whose last attempt failed'),
  note: z.string(),
}).openapi('WorkQueue')

const OpsStatus = {
  queues: z.array(Queue).nullable().describe('The depth of each work queue (null while the database is unreachable)'),
  jobs: z.array(z.object({
    job: z.string(),
    runs: z.array(JobRun).describe('The last runs logged in private.job_runs (SPEC Events 4), newest first'),
    runs_24h: z.number().int(),
    succeeded_24h: z.number().int(),
    failed_24h: z.number().int(),
  })).nullable().describe("Each pg_cron job's logged runs and the last 24 hours' totals (jobs that log none: no runs)"),
  providers: z.object({
    ai: z.boolean().describe('AI_API_KEY is set'),
    stripe: z.boolean().describe('STRIPE_SECRET_KEY is set'),
    resend: z.boolean().describe('RESEND_API_KEY and EMAIL_FROM are set'),
    expo: z.boolean().describe('EXPO_ACCESS_TOKEN is set'),
    web_push: z.boolean().describe('The VAPID keys and subject are set'),
    music: z.boolean().describe('MUSIC_CLIENT_ID and MUSIC_REDIRECT_URI are set'),
  }).describe('Which providers are configured (a provider that is not: its feature is skipped)'),
}

const FullHealth = Health.extend(OpsStatus).openapi('Health')

const DegradedHealth = z.object({ ...ErrorBody.shape, ...FullHealth.shape }).openapi('DegradedHealth')

export const adminRoutes = routeModule()
  .openapi(
    endpoint({
      method: 'get',
      path: '/admin/health',
      tag: 'Admin',
      auth: 'bearer',
      errors: [403],
      response: FullHealth,
      otherReplies: {
        503: {
          description: 'Degraded: {error} with the same report, so a check reading the status code sees the outage',
          schema: DegradedHealth,
          example: { error: 'The database is unavailable; try again shortly', code: 'unavailable' },
        },
      },
      summary: 'Production health (super admin)',
      description:
        'degraded when the database round trip fails (SPEC Errors 5), answered 503 with the same report and ' +
        'Retry-After, so a readiness check that reads only the status code sees the outage. The caller must be a ' +
        "super admin (profiles.role; while the database is unreachable, the token's user_role claim). Also: " +
        "the depth of each work queue, each job's logged runs (private.job_runs) and which providers are configured.",
    }),
    async (c) => {
      const { degraded } = await superAdminEvenIfDegraded(c.var.caller)
      const t0 = performance.now()
      let probe: Probe = { ok: false, latencyMs: 0, appliedVersions: [] }
      if (!degraded) {
        try {
          const { data, error } = await c.var.db.rpc('applied_migrations')
          probe = {
            ok: !error,
            latencyMs: performance.now() - t0,
            appliedVersions: (data ?? []).map((r: { version: string }) => r.version),
          }
          if (error) console.error('health probe failed', error)
        } catch (e) {
          console.error('health probe failed', e)
        }
      }
      const commit = optionalEnv('COMMIT_SHA') ?? 'unknown'
      let cron = null
      let ops: { queues: unknown; jobs: unknown } = { queues: null, jobs: null }
      if (probe.ok) {
        const [jobs, status] = await Promise.all([
          c.var.db.rpc('cron_job_status'),
          c.var.db.rpc('admin_ops_status', { runs_per_job: 5 }),
        ])
        if (jobs.error) console.error('health: cron job status failed', jobs.error)
        else cron = jobs.data
        if (status.error) console.error('health: queues and job runs failed', status.error)
        else ops = status.data as typeof ops
      }
      const notification_channels = {
        expo: expoConfigured(),
        web_push: webPushConfigured(),
        email: !!resendClient(),
      }
      const report = healthReport(probe, await migrationFiles(), commit, (Date.now() - startedAt) / 1000)
      const body = {
        ...report,
        cron,
        notification_channels,
        queues: ops.queues,
        jobs: ops.jobs,
        providers: providersConfigured(),
      } as z.infer<typeof FullHealth>
      if (report.status === 'ok') return c.json(body)
      return c.json({ error: 'The database is unavailable; try again shortly', code: 'unavailable', ...body }, 503, { 'Retry-After': '5' })
    },
  )
