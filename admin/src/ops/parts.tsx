// Pieces the health and tasks pages share: a job's logged runs (private.job_runs) with their
// counts and errors, uptime in words, and SPEC's latency guidance.
import { Empty, Time } from '../ui.tsx'

export interface JobRun {
  id?: number
  started_at: string
  finished_at: string
  succeeded: number
  failed: number
  remaining: number | null
  details: Record<string, unknown>
}

/** "3 days 4 hours", "5 minutes 2 seconds": the two largest units. */
export function humanDuration(totalSeconds: number): string {
  const units: [string, number][] = [['day', 86400], ['hour', 3600], ['minute', 60], ['second', 1]]
  const parts: string[] = []
  let rest = Math.max(0, Math.floor(totalSeconds))
  for (const [name, size] of units) {
    const n = Math.floor(rest / size)
    rest -= n * size
    if (n > 0 || (name === 'second' && parts.length === 0)) parts.push(`${n} ${name}${n === 1 ? '' : 's'}`)
    if (parts.length === 2) break
  }
  return parts.join(' ')
}

/** SPEC's guidance: under 200 ms normal, 200–500 ms watch, above 500 ms needs investigation. */
export function latencyJudgement(ms: number | null): { text: string; className: string } {
  if (ms === null) return { text: 'unknown: the database did not answer', className: 'status-bad' }
  if (ms < 200) return { text: 'normal (under 200 ms)', className: 'status-ok' }
  if (ms <= 500) return { text: 'watch (200–500 ms)', className: 'status-warn' }
  return { text: 'needs investigation (above 500 ms)', className: 'status-bad' }
}

/** The errors a run logged: details.errors (a list or text), or details.error. */
export function runErrors(details: Record<string, unknown> | null | undefined): string[] {
  if (!details) return []
  const e = details.errors ?? details.error ?? details.last_error
  if (Array.isArray(e)) return e.map((x) => (typeof x === 'string' ? x : JSON.stringify(x)))
  if (typeof e === 'string' && e) return [e]
  if (e && typeof e === 'object') return [JSON.stringify(e)]
  return []
}

/** The last runs a job logged, newest first, with counts and errors. */
export function JobRunsTable({ job, runs }: { job: string; runs: JobRun[] }) {
  if (runs.length === 0) return <Empty>No logged runs of {job}.</Empty>
  return (
    <table>
      <caption>Logged runs of {job} (private.job_runs), newest first</caption>
      <thead>
        <tr>
          <th scope="col">Started</th><th scope="col">Finished</th><th scope="col">Succeeded</th>
          <th scope="col">Failed</th><th scope="col">Remaining</th><th scope="col">Errors</th>
        </tr>
      </thead>
      <tbody>
        {runs.map((r, i) => {
          const errors = runErrors(r.details)
          return (
            <tr key={r.id ?? `${r.started_at}-${i}`}>
              <td><Time value={r.started_at} /></td>
              <td><Time value={r.finished_at} /></td>
              <td>{r.succeeded}</td>
              <td className={r.failed > 0 ? 'status-bad' : undefined}>{r.failed}{r.failed > 0 ? ' failed' : ''}</td>
              <td>{r.remaining ?? '—'}</td>
              <td>
                {errors.length === 0 ? <span className="muted">none</span> : (
                  <ul className="ops-errors">{errors.slice(0, 3).map((e, j) => <li key={j}>{e}</li>)}</ul>
                )}
              </td>
            </tr>
          )
        })}
      </tbody>
    </table>
  )
}
