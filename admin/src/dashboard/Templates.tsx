// Templates: the labs experiment templates (the public ones, and the admin's own), with their
// safety level and convergence. A super admin promotes one to classroom use with its minimum
// grade band, resets it to adult only (new classroom clones are then blocked), and stores its
// golden spec: the optimal inputs and the calculator's outputs, the first of which is the
// prediction replications are measured against (and what makes a template curated).
import { useEffect, useRef, useState } from 'react'
import { api } from '../api.ts'
import type { Template } from '../labs/types.ts'
import { ActionButton, ActionForm, Field, Loader, Pager, Time, useCursorPages, useLoad } from '../ui.tsx'
import { UserLink, useNotice } from '../review/parts.tsx'

const CALCULATORS = ['resonance', 'coil', 'impedance', 'electrolysis', 'pulsed_dc', 'plasma']
const GRADE_BANDS = ['K-5', '6-8', '9-12']
const SAFETY: Record<string, string> = {
  adult_only: 'Adult only',
  with_supervision: 'With supervision',
  classroom_safe: 'Classroom safe',
}


export function TemplatesTab() {
  const pages = useCursorPages()
  const notice = useNotice()
  const [editing, setEditing] = useState<Template | null>(null)
  const list = useLoad(
    () =>
      api<{ templates: Template[]; next_cursor: string | null }>('/api/labs/templates', {
        query: { before: pages.cursor, limit: 20 },
      }),
    [pages.cursor],
  )
  const done = (text: string) => {
    notice.say(text)
    list.reload()
  }
  return (
    <>
      <p className="muted">
        Public templates (and your own), newest first. Classroom accounts see classroom-safe templates only.
      </p>
      {notice.view}
      {editing && (
        <GoldenSpecEditor
          key={editing.id}
          template={editing}
          onClose={() => setEditing(null)}
          onSaved={() => done(`Stored the golden spec of “${editing.title}”.`)}
        />
      )}
      <Loader loaded={list} empty="No templates yet." isEmpty={(d) => d.templates.length === 0 && pages.page === 1}>
        {(d) => (
          <>
            <ul className="review-list">
              {d.templates.map((t) => (
                <li key={t.id}>
                  <TemplateCard t={t} done={done} edit={() => setEditing(t)} />
                </li>
              ))}
            </ul>
            <Pager pages={pages} nextCursor={d.next_cursor} />
          </>
        )}
      </Loader>
    </>
  )
}

function TemplateCard({ t, done, edit }: { t: Template; done: (s: string) => void; edit: () => void }) {
  const [band, setBand] = useState(t.min_grade_band ?? 'K-5')
  const c = t.convergence
  const outputs = t.predicted_values?.calculator_outputs?.outputs ?? []
  return (
    <article className="review-item" aria-labelledby={`tpl-${t.id}`}>
      <h3 id={`tpl-${t.id}`}>{t.title}</h3>
      <dl>
        <dt>Calculator</dt>
        <dd>{t.calculator}</dd>
        <dt>Owner</dt>
        <dd><UserLink id={t.owner_id} /></dd>
        <dt>Visibility</dt>
        <dd>{t.is_public ? 'Public' : 'Private'}</dd>
        <dt>Safety</dt>
        <dd>
          <span className={t.safety_level === 'classroom_safe' ? 'status-ok' : undefined}>
            {SAFETY[t.safety_level] ?? t.safety_level}
          </span>
          {t.min_grade_band && <> (grades {t.min_grade_band} and up)</>}
        </dd>
        <dt>Inputs</dt>
        <dd>
          {Object.keys(t.inputs ?? {}).length
            ? Object.entries(t.inputs).map(([k, v]) => `${k} = ${v}`).join(', ')
            : <span className="muted">none</span>}
        </dd>
        <dt>Golden spec</dt>
        <dd>
          {t.predicted_values
            ? (
              <>
                {outputs.map((o, i) => (
                  <span key={i}>
                    {i > 0 && ', '}
                    {o.label} = {o.value}{o.unit ? ` ${o.unit}` : ''}
                    {i === 0 && <span className="muted"> (prediction)</span>}
                  </span>
                ))}
                {Object.keys(t.predicted_values.optimal_inputs ?? {}).length > 0 && (
                  <span className="muted">
                    {' '}· optimal inputs: {Object.entries(t.predicted_values.optimal_inputs).map(([k, v]) => `${k} = ${v}`).join(', ')}
                  </span>
                )}
              </>
            )
            : <span className="muted">none (not curated)</span>}
        </dd>
        <dt>Convergence</dt>
        <dd>
          {c.replications} replications, {c.independent_confirmations} independent confirmations
          {c.mean !== null && <>, mean {c.mean.toPrecision(4)}</>}
          {c.stddev !== null && <> ± {c.stddev.toPrecision(3)}</>}
          {c.anomalies > 0 && <>, <span className="status-warn">{c.anomalies} anomalies</span></>}
          {c.robust && <>, <span className="status-ok">robust</span></>}
        </dd>
        <dt>Created</dt>
        <dd><Time value={t.created_at} /></dd>
      </dl>
      <div className="review-actions">
        <span className="inline-form">
          <label htmlFor={`band-${t.id}`}>Minimum grade band</label>
          <select id={`band-${t.id}`} value={band} onChange={(e) => setBand(e.target.value)}>
            {GRADE_BANDS.map((b) => <option key={b} value={b}>{b}</option>)}
          </select>
          <ActionButton
            label={t.safety_level === 'classroom_safe' ? 'Change grade band' : 'Promote to classroom'}
            onConfirm={() =>
              api(`/api/labs/admin/templates/${t.id}/promote-to-classroom`, { body: { min_grade_band: band } })}
            onDone={() => done(`“${t.title}” is classroom safe from grades ${band}.`)}
          />
        </span>
        {t.safety_level !== 'adult_only' && (
          <ActionButton
            label="Reset to adult only"
            title={`Reset “${t.title}” to adult only`}
            danger
            confirm={<p>Classroom accounts can no longer clone it; their earlier clones and reports stay.</p>}
            onConfirm={() => api(`/api/labs/admin/templates/${t.id}/reset-safety`, { method: 'POST' })}
            onDone={() => done(`“${t.title}” is adult only.`)}
          />
        )}
        <button type="button" onClick={edit}>{t.predicted_values ? 'Edit golden spec' : 'Add golden spec'}</button>
      </div>
    </article>
  )
}

interface InputRow {
  name: string
  value: string
}
interface OutputRow {
  label: string
  value: string
  unit: string
}

/** The golden spec of one template: its calculator, rows of optimal inputs and of outputs. */
function GoldenSpecEditor({ template, onClose, onSaved }: { template: Template; onClose: () => void; onSaved: () => void }) {
  const spec = template.predicted_values
  const heading = useRef<HTMLHeadingElement>(null)
  useEffect(() => heading.current?.focus(), [])
  const [calculator, setCalculator] = useState(spec?.calculator ?? template.calculator)
  const [inputs, setInputs] = useState<InputRow[]>(
    Object.entries(spec?.optimal_inputs ?? template.inputs ?? {}).map(([name, v]) => ({ name, value: String(v) })),
  )
  const [outputs, setOutputs] = useState<OutputRow[]>(
    spec?.calculator_outputs?.outputs?.map((o) => ({ label: o.label, value: String(o.value), unit: o.unit })) ??
      [{ label: '', value: '', unit: '' }],
  )
  const setInput = (i: number, patch: Partial<InputRow>) => setInputs((rows) => rows.map((r, j) => (j === i ? { ...r, ...patch } : r)))
  const setOutput = (i: number, patch: Partial<OutputRow>) =>
    setOutputs((rows) => rows.map((r, j) => (j === i ? { ...r, ...patch } : r)))
  // An empty number field is sent as it is (null), so the API names the field instead of the page guessing.
  const num = (s: string) => (s.trim() === '' ? null : Number(s))
  return (
    <section className="editor" aria-labelledby="golden-heading">
      <h3 id="golden-heading" tabIndex={-1} ref={heading}>Golden spec of “{template.title}”</h3>
      <p className="muted">The first output's value is the prediction replications are measured against.</p>
      <ActionForm
        label="Store golden spec"
        success="Golden spec stored."
        submit={() =>
          api(`/api/labs/templates/${template.id}/golden-spec`, {
            body: {
              calculator,
              optimal_inputs: Object.fromEntries(inputs.filter((r) => r.name.trim() !== '').map((r) => [r.name.trim(), num(r.value)])),
              calculator_outputs: { outputs: outputs.map((o) => ({ label: o.label, value: num(o.value), unit: o.unit })) },
            },
          })}
        onDone={onSaved}
      >
        <Field label="Calculator">
          {(id) => (
            <select id={id} value={calculator} onChange={(e) => setCalculator(e.target.value)}>
              {CALCULATORS.map((c) => <option key={c} value={c}>{c}</option>)}
            </select>
          )}
        </Field>
        <table className="rows-table">
          <caption>Optimal inputs</caption>
          <thead>
            <tr><th scope="col">Input</th><th scope="col">Value</th><th scope="col"><span className="muted">Row</span></th></tr>
          </thead>
          <tbody>
            {inputs.map((r, i) => (
              <tr key={i}>
                <td>
                  <input aria-label={`Input ${i + 1} name`} value={r.name} onChange={(e) => setInput(i, { name: e.target.value })} />
                </td>
                <td>
                  <input aria-label={`Input ${i + 1} value`} type="number" step="any" value={r.value}
                    onChange={(e) => setInput(i, { value: e.target.value })} />
                </td>
                <td>
                  <button type="button" onClick={() => setInputs((rows) => rows.filter((_, j) => j !== i))}>
                    Remove input {i + 1}
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        {inputs.length === 0 && <p className="empty">No inputs.</p>}
        <button type="button" onClick={() => setInputs((rows) => [...rows, { name: '', value: '' }])}>Add input</button>
        <table className="rows-table">
          <caption>Calculator outputs (the first is the prediction)</caption>
          <thead>
            <tr><th scope="col">Label</th><th scope="col">Value</th><th scope="col">Unit</th><th scope="col"><span className="muted">Row</span></th></tr>
          </thead>
          <tbody>
            {outputs.map((o, i) => (
              <tr key={i}>
                <td>
                  <input aria-label={`Output ${i + 1} label`} value={o.label} onChange={(e) => setOutput(i, { label: e.target.value })} />
                </td>
                <td>
                  <input aria-label={`Output ${i + 1} value`} type="number" step="any" value={o.value}
                    onChange={(e) => setOutput(i, { value: e.target.value })} />
                </td>
                <td>
                  <input aria-label={`Output ${i + 1} unit`} value={o.unit} onChange={(e) => setOutput(i, { unit: e.target.value })} />
                </td>
                <td>
                  <button type="button" onClick={() => setOutputs((rows) => rows.filter((_, j) => j !== i))}>
                    Remove output {i + 1}
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        {outputs.length === 0 && <p className="empty">No outputs: a golden spec needs at least one.</p>}
        <button type="button" onClick={() => setOutputs((rows) => [...rows, { label: '', value: '', unit: '' }])}>Add output</button>
      </ActionForm>
      <button type="button" onClick={onClose}>Close the golden spec</button>
    </section>
  )
}
