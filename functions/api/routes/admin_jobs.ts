// GET /api/admin/jobs and POST /api/admin/jobs/{name}/run: the scheduled jobs for the admin
// console's tasks page. The database decides who may read or run them (private.admin_cron_jobs,
// private.run_cron_job): a run is always the job's own pg_cron command, looked up by name.
import { z } from '@hono/zod-openapi'
import { unwrap } from '../../_shared/errors.ts'
import { CronSyntaxError, nextRun } from '../../_shared/cron_schedule.ts'
import { endpoint, routeModule } from '../openapi.ts'
import { JobRun } from './admin.ts'

const tag = 'Admin'

/** What a job's command runs, without the command's Vault lookups: an edge-function endpoint
 *  (net.http_post to /functions/v1/api/...) or SQL. */
export function describeCommand(command: string):
  | { kind: 'edge'; endpoint: string; invocations: number; sql: null }
  | { kind: 'sql'; endpoint: null; invocations: null; sql: string } {
  if (/\bnet\.http_post\s*\(/.test(command)) {
    const path = command.match(/\/functions\/v1'?\s*(?:\|\|\s*')?(\/api\/[A-Za-z0-9/_.-]*)'/)
    if (path) {
      const dynamic = new RegExp(`${path[1].replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}'\\s*\\|\\|`).test(command)
      const n = command.match(/generate_series\(\s*1\s*,\s*(\d+)\s*\)/)
      return {
        kind: 'edge',
        endpoint: dynamic ? `${path[1]}…` : path[1],
        invocations: n ? Number(n[1]) : 1,
        sql: null,
      }
    }
  }
  // SQL names Vault secrets at most (continue_ai_job's secret name), never their values.
  return { kind: 'sql', endpoint: null, invocations: null, sql: command.trim() }
}

/** The next run (ISO, UTC) or null, with the reason when the schedule cannot be read. */
export function nextRunOf(schedule: string, active: boolean, from = new Date()): string | null {
  if (!active) return null
  try {
    return nextRun(schedule, from)?.toISOString() ?? null
  } catch (e) {
    if (e instanceof CronSyntaxError) return null
    throw e
  }
}

const CronRun = z.object({
  run_id: z.number().int(),
  status: z.string().nullable().describe('succeeded, failed, running, starting'),
  started_at: z.string().nullable(),
  finished_at: z.string().nullable(),
  message: z.string().nullable(),
}).openapi('CronRun')

const Job = z.object({
  name: z.string(),
  schedule: z.string().describe("pg_cron's schedule (UTC): five cron fields or '[1-59] seconds'"),
  active: z.boolean(),
  next_run_at: z.string().nullable().describe('The next scheduled run (UTC); null: inactive or unreadable'),
  runs: z.object({
    kind: z.enum(['edge', 'sql']),
    endpoint: z.string().nullable().describe('edge: the endpoint its net.http_post calls (… : the path goes on)'),
    invocations: z.number().int().nullable().describe('edge: requests a run makes side by side'),
    sql: z.string().nullable().describe('sql: the command'),
  }).describe('What the job runs (never a secret)'),
  cron_runs: z.array(CronRun).describe('The last runs in cron.job_run_details, newest first (a week at most)'),
  job_runs: z.array(JobRun.extend({ id: z.number().int() })).describe(
    'The last runs the job logged in private.job_runs, newest first (jobs that log none: empty)',
  ),
  manual_runs: z.array(z.object({ id: z.number().int(), started_at: z.string(), status: z.string() }))
    .describe('The last "run now" of this job'),
}).openapi('ScheduledJob')

const Waiting = z.object({
  pending_sponsors: z.number().int(),
  pending_opportunities: z.number().int(),
  pending_videos: z.number().int(),
  checkins_to_review: z.number().int(),
  account_deletions: z.number().int().describe('Account deletions in progress'),
}).openapi('AdminWorkWaiting')

const RunStarted = z.object({
  job: z.string(),
  audit_id: z.number().int().describe('The row in private.cron_manual_runs'),
  run_id: z.number().int().describe('The cron.job_run_details row of this run'),
  status: z.enum(['succeeded', 'failed']).describe(
    "The command's own outcome; an edge job's run goes on at its endpoint (its job_runs row comes later)",
  ),
  message: z.string().nullable(),
  started_at: z.string(),
  finished_at: z.string(),
  runs: Job.shape.runs,
}).openapi('JobRunStarted')

const NameParams = z.object({
  name: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'must be a job name (letters, digits, - _ .; at most 64)')
    .openapi({ param: { name: 'name', in: 'path' }, example: 'notification-retention' }),
})

interface JobRow {
  name: string
  schedule: string
  active: boolean
  command: string
  cron_runs: z.infer<typeof CronRun>[]
  job_runs: z.infer<typeof Job>['job_runs']
  manual_runs: z.infer<typeof Job>['manual_runs']
}

export const adminJobRoutes = routeModule()
  .openapi(
    endpoint({
      method: 'get',
      path: '/admin/jobs',
      tag,
      auth: 'superAdmin',
      response: z.object({ jobs: z.array(Job), waiting: Waiting }),
      summary: 'Every pg_cron job (schedule, next run, what it runs, last runs) and the admin work waiting',
      description: 'One database read (public.admin_cron_jobs). Times are UTC, as pg_cron schedules them.',
    }),
    async (c) => {
      const data = unwrap(await c.var.db.rpc('admin_cron_jobs', { runs_per_job: 5 })) as unknown as {
        jobs: JobRow[]
        waiting: z.infer<typeof Waiting>
      }
      const now = new Date()
      const jobs = data.jobs.map(({ command, ...j }) => ({
        ...j,
        next_run_at: nextRunOf(j.schedule, j.active, now),
        runs: describeCommand(command),
      }))
      return c.json({ jobs, waiting: data.waiting })
    },
  )
  .openapi(
    endpoint({
      method: 'post',
      path: '/admin/jobs/{name}/run',
      tag,
      auth: 'superAdmin',
      params: NameParams,
      status: 202,
      responseDescription: 'Started: the command ran (an edge job: its request is queued to its endpoint)',
      response: RunStarted,
      errors: [409],
      summary: 'Run one scheduled job now (its own pg_cron command)',
      description:
        "Runs the command cron.job holds under that name, as pg_cron would (never SQL from the request): an edge " +
        "job queues its usual net.http_post to its own endpoint with its Vault secret. Audited (who, which job, " +
        'when, outcome) in private.cron_manual_runs and recorded in cron.job_run_details. 404: no such job (only ' +
        "the project's own, scheduled by postgres); 409: the job is switched off, or being run now already. Jobs " +
        'are safe side by side with their scheduled runs.',
    }),
    async (c) => {
      const { name } = c.req.valid('param')
      const { command, ...started } = unwrap(await c.var.db.rpc('run_cron_job', { job_name: name })) as unknown as
        & Omit<z.infer<typeof RunStarted>, 'runs'>
        & { command: string }
      return c.json({ ...started, runs: describeCommand(command) }, 202)
    },
  )
