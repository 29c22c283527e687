// Flagged anomalies on the Open energy page: replications more than 2 standard deviations from
// their template's mean, across every template, newest first.
import { api } from '../api.ts'
import { Loader, Pager, Time, useCursorPages, useLoad } from '../ui.tsx'

interface Anomaly {
  id: string
  template_id: string
  template_title: string
  user_id: string
  measured_value: number
  predicted_value: number | null
  mean: number
  stddev: number
  replications: number
  created_at: string
}
const num = (v: number | null) => (v === null ? '—' : Number(v).toLocaleString(undefined, { maximumSignificantDigits: 6 }))

export function Anomalies() {
  const pages = useCursorPages()
  const list = useLoad(
    () => api<{ anomalies: Anomaly[]; next_cursor: string | null }>('/api/labs/admin/anomalies', { query: { before: pages.cursor, limit: 20 } }),
    [pages.cursor],
  )
  return (
    <Loader loaded={list} empty="No replication is flagged." isEmpty={(l) => l.anomalies.length === 0 && pages.page === 1}>
      {(l) => (
        <>
          <table>
            <caption>Replications more than 2 SD from their template's mean</caption>
            <thead>
              <tr>
                <th scope="col">Template</th>
                <th scope="col">Measured</th>
                <th scope="col">Predicted</th>
                <th scope="col">Template mean ± SD (n)</th>
                <th scope="col">Reporter</th>
                <th scope="col">Reported</th>
              </tr>
            </thead>
            <tbody>
              {l.anomalies.map((a) => (
                <tr key={a.id}>
                  <td>{a.template_title}</td>
                  <td className="status-bad">{num(a.measured_value)}</td>
                  <td>{num(a.predicted_value)}</td>
                  <td>{num(a.mean)} ± {num(a.stddev)} ({a.replications})</td>
                  <td><code>{a.user_id}</code></td>
                  <td><Time value={a.created_at} /></td>
                </tr>
              ))}
            </tbody>
          </table>
          <Pager pages={pages} nextCursor={l.next_cursor} />
        </>
      )}
    </Loader>
  )
}
