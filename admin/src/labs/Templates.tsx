// Templates on the Open energy page: each with its golden spec (predicted_values) and its
// convergence (robust after 50 independent confirmations within 5 %), and a template's
// replications with the anomalies flagged.
import { useState } from 'react'
import { api } from '../api.ts'
import type { GoldenSpec, Template } from './types.ts'
import { Loader, Pager, Time, useCursorPages, useLoad } from '../ui.tsx'

const ROBUST_AFTER = 50
const num = (v: number | null) => (v === null ? '—' : Number(v).toLocaleString(undefined, { maximumSignificantDigits: 6 }))

export function Templates() {
  const pages = useCursorPages()
  const list = useLoad(
    () => api<{ templates: Template[]; next_cursor: string | null }>('/api/labs/templates', { query: { before: pages.cursor, limit: 20 } }),
    [pages.cursor],
  )
  const [open, setOpen] = useState<string | null>(null)
  return (
    <Loader loaded={list} empty="No template yet." isEmpty={(l) => l.templates.length === 0 && pages.page === 1}>
      {(l) => (
        <>
          <table>
            <caption>Templates with their golden specs and convergence, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Template</th>
                <th scope="col">Golden spec (prediction)</th>
                <th scope="col">Confirmations</th>
                <th scope="col">Mean ± SD</th>
                <th scope="col">Anomalies</th>
                <th scope="col">Converged</th>
                <th scope="col">Replications</th>
              </tr>
            </thead>
            <tbody>
              {l.templates.map((t) => (
                <tr key={t.id}>
                  <th scope="row">{t.title} <span className="muted">({t.calculator}, {t.safety_level}{t.is_public ? '' : ', private'})</span></th>
                  <td><Spec spec={t.predicted_values} /></td>
                  <td>
                    {t.convergence.independent_confirmations} of {ROBUST_AFTER}
                    <br />
                    <progress max={ROBUST_AFTER} value={Math.min(ROBUST_AFTER, t.convergence.independent_confirmations)}
                      aria-label={`${t.title}: confirmations toward ${ROBUST_AFTER}`} />
                  </td>
                  <td>{num(t.convergence.mean)} ± {num(t.convergence.stddev)}</td>
                  <td className={t.convergence.anomalies ? 'status-warn' : undefined}>{t.convergence.anomalies}</td>
                  <td className={t.convergence.robust ? 'status-ok' : undefined}>{t.convergence.robust ? 'Robust' : 'Not yet'}</td>
                  <td>
                    {t.convergence.replications}{' '}
                    <button type="button" aria-expanded={open === t.id} onClick={() => setOpen(open === t.id ? null : t.id)}>
                      {open === t.id ? 'Hide' : 'Show'} replications of {t.title}
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          <Pager pages={pages} nextCursor={l.next_cursor} />
          {open && <Replications id={open} />}
        </>
      )}
    </Loader>
  )
}

function Spec({ spec }: { spec: GoldenSpec | null }) {
  const outputs = spec?.calculator_outputs?.outputs ?? []
  if (!spec || outputs.length === 0) return <span className="muted">None (not curated)</span>
  return (
    <ul className="plain">
      {outputs.map((o, i) => (
        <li key={i}>{i === 0 ? <strong>{o.label}: {num(o.value)} {o.unit}</strong> : <>{o.label}: {num(o.value)} {o.unit}</>}</li>
      ))}
      {spec.optimal_inputs && Object.keys(spec.optimal_inputs).length > 0 && (
        <li className="muted">inputs: {Object.entries(spec.optimal_inputs).map(([k, v]) => `${k} ${v}`).join(', ')}</li>
      )}
    </ul>
  )
}

interface Details {
  template: Template & {
    replications: { id: string; measured_value: number; confirmed: boolean | null; is_anomaly: boolean; created_at: string }[]
  }
}

function Replications({ id }: { id: string }) {
  const t = useLoad(() => api<Details>(`/api/labs/templates/${id}`), [id])
  return (
    <section aria-labelledby="replications-heading">
      <Loader loaded={t}>
        {({ template }) => (
          <>
            <h3 id="replications-heading">Replications of {template.title}</h3>
            {template.replications.length === 0
              ? <p className="empty">No replication reported yet.</p>
              : (
                <table>
                  <caption>The latest 500, newest first; anomalies are more than 2 SD from the mean</caption>
                  <thead>
                    <tr><th scope="col">Measured</th><th scope="col">Within 5 %</th><th scope="col">Flag</th><th scope="col">Reported</th></tr>
                  </thead>
                  <tbody>
                    {template.replications.map((r) => (
                      <tr key={r.id}>
                        <td>{num(r.measured_value)}</td>
                        <td>{r.confirmed === null ? '—' : r.confirmed ? 'Confirmed' : 'Refuted'}</td>
                        <td className={r.is_anomaly ? 'status-bad' : undefined}>{r.is_anomaly ? 'Anomaly' : ''}</td>
                        <td><Time value={r.created_at} /></td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              )}
          </>
        )}
      </Loader>
    </section>
  )
}
