// Health: SPEC's production health page and what an operator looks at next. The status (the
// 503 of a degraded server carries the same report, shown with its error), database latency
// judged by SPEC's guidance, commit, uptime, unapplied migrations, the work queues, the providers
// configured, and each job's last runs. Refreshes itself every 10 seconds.
import { useCallback, useState } from 'react'
import { ApiError, apiResponse } from '../api.ts'
import { Layout } from '../layout.tsx'
import { JobRunsTable, type JobRun, humanDuration, latencyJudgement } from '../ops/parts.tsx'
import { ErrorMessage, Loader, Time, useInterval, useLoad } from '../ui.tsx'
import '../ops/ops.css'

interface Queue {
  name: string
  label: string
  depth: number | null
  due: number | null
  oldest_at: string | null
  failing: number | null
  note: string
}
interface CronJob {
  job_name: string
  schedule: string
  active: boolean
  last_status: string | null
  last_started_at: string | null
  last_finished_at: string | null
  last_message: string | null
}
interface HealthReport {
  error?: string
  status: 'ok' | 'degraded'
  database_latency_ms: number | null
  commit: string
  uptime_seconds: number
  unapplied_migrations: string[] | null
  cron: CronJob[] | null
  notification_channels: Record<string, boolean>
  queues: Queue[] | null
  jobs: { job: string; runs: JobRun[]; runs_24h: number; succeeded_24h: number; failed_24h: number }[] | null
  providers: Record<string, boolean>
}

const PROVIDERS: [string, string][] = [
  ['ai', 'AI (AI_API_KEY)'],
  ['stripe', 'Stripe (payments)'],
  ['resend', 'Resend (e-mail)'],
  ['expo', 'Expo (mobile push)'],
  ['web_push', 'Web Push'],
  ['music', 'Music provider'],
]

/** The report, from a 200 or from the 503 that carries it; anything else is the API's error. */
async function loadHealth(): Promise<{ report: HealthReport; at: Date }> {
  const res = await apiResponse('/api/admin/health')
  const body = await res.json().catch(() => null)
  if ((res.ok || res.status === 503) && body && typeof body.status === 'string') {
    return { report: body as HealthReport, at: new Date() }
  }
  throw new ApiError(res.status, typeof body?.error === 'string' ? body.error : `${res.status} ${res.statusText}`, body)
}

export function Health() {
  const [tick, setTick] = useState(0)
  const health = useLoad(loadHealth, [tick])
  const refresh = useCallback(() => setTick((t) => t + 1), [])
  useInterval(refresh, 10_000)
  return (
    <Layout title="Health">
      <p className="muted" aria-live="off">
        Refreshes every 10 seconds.{' '}
        {health.data && <>Updated at <Time value={health.data.at.toISOString()} />.</>}{' '}
        <button type="button" onClick={refresh} disabled={health.loading}>Refresh now</button>
      </p>
      <Loader loaded={health}>{({ report }) => <Report report={report} />}</Loader>
    </Layout>
  )
}

function Report({ report: r }: { report: HealthReport }) {
  const latency = latencyJudgement(r.database_latency_ms)
  return (
    <>
      <section aria-labelledby="h-status">
        <h2 id="h-status">Status</h2>
        <dl className="ops-facts">
          <dt>Status</dt>
          <dd>
            <span className={r.status === 'ok' ? 'status-ok' : 'status-bad'}>
              {r.status === 'ok' ? 'ok' : 'degraded'}
            </span>
            {r.status === 'degraded' && ' (the API answered 503)'}
          </dd>
          <dt>Database latency</dt>
          <dd>
            {r.database_latency_ms === null ? '—' : `${r.database_latency_ms} ms`}:{' '}
            <span className={latency.className}>{latency.text}</span>
          </dd>
          <dt>Commit</dt>
          <dd><code>{r.commit}</code></dd>
          <dt>Uptime</dt>
          <dd>{humanDuration(r.uptime_seconds)}</dd>
          <dt>Unapplied migrations</dt>
          <dd>
            {r.unapplied_migrations === null ? 'unknown while the database is unreachable'
              : r.unapplied_migrations.length === 0 ? 'none'
              : (
                <ul className="status-warn">
                  {r.unapplied_migrations.map((m) => <li key={m}>{m}</li>)}
                </ul>
              )}
          </dd>
        </dl>
        <ErrorMessage error={r.error} />
      </section>

      <section aria-labelledby="h-queues">
        <h2 id="h-queues">Work queues</h2>
        {r.queues === null ? <p className="empty">Unknown while the database is unreachable.</p> : (
          <table>
            <caption>Depth of each work queue</caption>
            <thead>
              <tr>
                <th scope="col">Queue</th><th scope="col">Waiting</th><th scope="col">Due now</th>
                <th scope="col">Oldest</th><th scope="col">Notes</th>
              </tr>
            </thead>
            <tbody>
              {r.queues.map((q) => (
                <tr key={q.name}>
                  <th scope="row">{q.label}</th>
                  <td>{q.depth ?? '—'}</td>
                  <td>{q.due ?? '—'}</td>
                  <td><Time value={q.oldest_at} /></td>
                  <td>
                    {q.note}
                    {q.failing ? <span className="status-bad"> ({q.failing} failing)</span> : null}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>

      <section aria-labelledby="h-providers">
        <h2 id="h-providers">Providers configured</h2>
        <ul>
          {PROVIDERS.map(([key, label]) => (
            <li key={key}>
              {label}:{' '}
              {r.providers?.[key]
                ? <span className="status-ok">configured</span>
                : <span className="status-warn">not configured (its features are skipped)</span>}
            </li>
          ))}
        </ul>
      </section>

      <section aria-labelledby="h-jobs">
        <h2 id="h-jobs">Scheduled jobs</h2>
        {r.cron === null ? <p className="empty">Unknown while the database is unreachable.</p> : (
          <table>
            <caption>Each pg_cron job's last run and the last 24 hours of logged runs</caption>
            <thead>
              <tr>
                <th scope="col">Job</th><th scope="col">Schedule (UTC)</th><th scope="col">Last run</th>
                <th scope="col">Status</th><th scope="col">Logged runs (24 h)</th>
                <th scope="col">Succeeded</th><th scope="col">Failed</th>
              </tr>
            </thead>
            <tbody>
              {r.cron.map((c) => {
                const j = r.jobs?.find((x) => x.job === c.job_name)
                return (
                  <tr key={c.job_name}>
                    <th scope="row">{c.job_name}{c.active ? '' : ' (inactive)'}</th>
                    <td><code>{c.schedule}</code></td>
                    <td><Time value={c.last_started_at} /></td>
                    <td className={c.last_status === 'failed' ? 'status-bad' : undefined}>
                      {c.last_status ?? 'never ran'}
                      {c.last_status === 'failed' && c.last_message ? `: ${c.last_message}` : ''}
                    </td>
                    <td>{j?.runs_24h ?? 0}</td>
                    <td>{j?.succeeded_24h ?? 0}</td>
                    <td className={(j?.failed_24h ?? 0) > 0 ? 'status-bad' : undefined}>{j?.failed_24h ?? 0}</td>
                  </tr>
                )
              })}
            </tbody>
          </table>
        )}
        {(r.jobs ?? []).filter((j) => j.runs.length > 0).map((j) => (
          <div className="ops-job" key={j.job}>
            <h3>{j.job}</h3>
            <JobRunsTable job={j.job} runs={j.runs} />
          </div>
        ))}
        {r.jobs && r.jobs.every((j) => j.runs.length === 0) && (
          <p className="empty">No job has logged a run yet.</p>
        )}
      </section>
    </>
  )
}
