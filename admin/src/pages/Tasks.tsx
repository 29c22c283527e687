// Tasks: every pg_cron job (schedule, next run in the viewer's zone, what it runs, its last cron
// runs and logged runs with counts and errors), "Run now" for each (confirmed; the job's own
// command, audited), after which the page follows the job until its new run shows; and the admin
// work waiting, with links to the tabs where it is done.
import { useCallback, useEffect, useRef, useState } from 'react'
import { Link } from 'react-router'
import { api } from '../api.ts'
import { Layout } from '../layout.tsx'
import { type JobRun, JobRunsTable } from '../ops/parts.tsx'
import { ActionButton, Empty, Loader, Time, useInterval, useLoad } from '../ui.tsx'
import '../ops/ops.css'

interface CronRun {
  run_id: number
  status: string | null
  started_at: string | null
  finished_at: string | null
  message: string | null
}
interface Job {
  name: string
  schedule: string
  active: boolean
  next_run_at: string | null
  runs: { kind: 'edge' | 'sql'; endpoint: string | null; invocations: number | null; sql: string | null }
  cron_runs: CronRun[]
  job_runs: (JobRun & { id: number })[]
  manual_runs: { id: number; started_at: string; status: string }[]
}
interface Waiting {
  pending_sponsors: number
  pending_opportunities: number
  pending_videos: number
  checkins_to_review: number
  account_deletions: number
}
interface Started {
  job: string
  audit_id: number
  run_id: number
  status: 'succeeded' | 'failed'
  message: string | null
  started_at: string
}

/** A run now in progress on the page: what was started and the logged run it waits for. */
interface Following {
  started: Started
  lastLoggedId: number
  /** The new logged run, once it showed; null: still waiting; 'none': the job logged none in time. */
  logged: (JobRun & { id: number }) | null | 'none'
  until: number
}

const FOLLOW_MS = 60_000

export function Tasks() {
  const [tick, setTick] = useState(0)
  const reload = useCallback(() => setTick((t) => t + 1), [])
  const jobs = useLoad(() => api<{ jobs: Job[]; waiting: Waiting }>('/api/admin/jobs'), [tick])
  const [following, setFollowing] = useState<Record<string, Following>>({})
  const waitingFor = Object.values(following).some((f) => f.logged === null)
  // Every 30 s; every 2 s while a job run now is awaited.
  useInterval(reload, waitingFor ? 2_000 : 30_000)

  // Each reload: a followed job's new logged run, or the end of the wait.
  const seen = useRef(jobs.data)
  useEffect(() => {
    if (!jobs.data || jobs.data === seen.current) return
    seen.current = jobs.data
    setFollowing((all) => {
      let changed = false
      const next = { ...all }
      for (const [name, f] of Object.entries(all)) {
        if (f.logged !== null) continue
        const job = jobs.data!.jobs.find((j) => j.name === name)
        const fresh = job?.job_runs.find((r) => r.id > f.lastLoggedId)
        if (fresh) next[name] = { ...f, logged: fresh }
        else if (Date.now() > f.until) next[name] = { ...f, logged: 'none' }
        else continue
        changed = true
      }
      return changed ? next : all
    })
  }, [jobs.data])

  return (
    <Layout title="Tasks">
      <Loader loaded={jobs}>
        {({ jobs: list, waiting }) => (
          <>
            <WaitingWork waiting={waiting} />
            <section aria-labelledby="h-jobs">
              <h2 id="h-jobs">Scheduled jobs</h2>
              <p className="muted">
                pg_cron schedules in UTC; next runs in your time zone. "Run now" runs the job's own command as its
                schedule would (an edge-function job: a request to its own endpoint); it is safe beside a scheduled
                run, and the same job cannot be run now twice at once.
              </p>
              {list.length === 0 && <Empty>No scheduled jobs.</Empty>}
              {list.map((job) => (
                <JobSection
                  key={job.name}
                  job={job}
                  following={following[job.name]}
                  onStarted={(started) => {
                    setFollowing((all) => ({
                      ...all,
                      [job.name]: {
                        started,
                        lastLoggedId: Math.max(0, ...job.job_runs.map((r) => r.id)),
                        logged: null,
                        until: Date.now() + FOLLOW_MS,
                      },
                    }))
                    reload()
                  }}
                />
              ))}
            </section>
          </>
        )}
      </Loader>
    </Layout>
  )
}

function WaitingWork({ waiting: w }: { waiting: Waiting }) {
  const items: [string, number, string][] = [
    ['Sponsors to approve', w.pending_sponsors, '/dashboard/admin?tab=approvals'],
    ['Opportunities to approve', w.pending_opportunities, '/dashboard/admin?tab=approvals'],
    ['Dream videos to approve', w.pending_videos, '/dashboard/admin?tab=approvals'],
    ['Check-ins to review', w.checkins_to_review, '/dashboard/admin?tab=checkins'],
    ['Account deletions in progress', w.account_deletions, '/dashboard/admin?tab=users'],
  ]
  return (
    <section aria-labelledby="h-waiting">
      <h2 id="h-waiting">Admin work waiting</h2>
      <ul>
        {items.map(([label, n, to]) => (
          <li key={label}>
            <Link to={to}>{label}</Link>: <strong>{n}</strong>
          </li>
        ))}
      </ul>
    </section>
  )
}

function JobSection({ job, following, onStarted }: {
  job: Job
  following: Following | undefined
  onStarted: (s: Started) => void
}) {
  const headingId = `job-${job.name}`
  return (
    <section className="ops-job" aria-labelledby={headingId}>
      <h3 id={headingId}>{job.name}</h3>
      <dl className="ops-facts">
        <dt>Schedule</dt>
        <dd><code>{job.schedule}</code> (UTC){job.active ? '' : ', inactive'}</dd>
        <dt>Next run</dt>
        <dd>{job.active ? <Time value={job.next_run_at} /> : 'none: the job is inactive'}</dd>
        <dt>Runs</dt>
        <dd>
          {job.runs.kind === 'edge'
            ? <>the edge function <code>{job.runs.endpoint}</code>{(job.runs.invocations ?? 1) > 1 ? ` (${job.runs.invocations} requests side by side)` : ''}</>
            : <code className="ops-sql">{job.runs.sql}</code>}
        </dd>
      </dl>
      <ActionButton
        label={`Run ${job.name} now`}
        title={`Run ${job.name} now?`}
        confirm={
          <p>
            This runs the job's own scheduled command right now
            {job.runs.kind === 'edge' ? <> (a request to <code>{job.runs.endpoint}</code>)</> : null}. The run is
            recorded with your name.
          </p>
        }
        onConfirm={async () => onStarted(await api<Started>(`/api/admin/jobs/${encodeURIComponent(job.name)}/run`, { method: 'POST' }))}
      />
      {following && <RunProgress job={job} f={following} />}
      <details open={!!following}>
        <summary>
          Last runs: {job.cron_runs[0]
            ? <>{job.cron_runs[0].status ?? 'unknown'} at <Time value={job.cron_runs[0].started_at} /></>
            : 'none this week'}
          {job.job_runs.length > 0 && <>; {job.job_runs.length} logged ({job.job_runs.reduce((n, r) => n + r.failed, 0)} failures)</>}
        </summary>
        <table>
          <caption>Last cron runs of {job.name}, newest first</caption>
          <thead>
            <tr><th scope="col">Started</th><th scope="col">Finished</th><th scope="col">Status</th><th scope="col">Message</th></tr>
          </thead>
          <tbody>
            {job.cron_runs.map((r) => (
              <tr key={r.run_id}>
                <td><Time value={r.started_at} /></td>
                <td><Time value={r.finished_at} /></td>
                <td className={r.status === 'failed' ? 'status-bad' : undefined}>{r.status ?? '—'}</td>
                <td className="ops-errors">{r.message ?? ''}</td>
              </tr>
            ))}
          </tbody>
        </table>
        {job.cron_runs.length === 0 && <Empty>No cron run in the last week.</Empty>}
        <JobRunsTable job={job.name} runs={job.job_runs} />
      </details>
    </section>
  )
}

function RunProgress({ job, f }: { job: Job; f: Following }) {
  const s = f.started
  return (
    <div role="status" className="card">
      <p className={s.status === 'failed' ? 'status-bad' : 'status-ok'}>
        Run now of {job.name} {s.status === 'failed' ? `failed: ${s.message}` : 'started'} at{' '}
        <Time value={s.started_at} /> (cron run {s.run_id}).
      </p>
      {f.logged === null && <p>Waiting for the job's new logged run…</p>}
      {f.logged === 'none' && (
        <p className="muted">No new logged run within a minute: this job may log none (see its cron runs).</p>
      )}
      {f.logged && f.logged !== 'none' && (
        <p>
          New logged run: {f.logged.succeeded} succeeded, {f.logged.failed} failed, finished at{' '}
          <Time value={f.logged.finished_at} />.
        </p>
      )}
    </div>
  )
}
