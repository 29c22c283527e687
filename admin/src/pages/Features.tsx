// Features: what is switched on and how it is set. Each provider configured or not (which of
// its variables are set, never a value), each daily cap and limit with where it is set, the
// write budgets (changed here, audited) and the encouragement configuration (changed here, with
// its own history); the audit of every change made from this page.
import { useState } from 'react'
import { api } from '../api.ts'
import { Layout } from '../layout.tsx'
import { ActionForm, Field, Loader, Pager, Time, useCursorPages, useLoad } from '../ui.tsx'
import {
  type Features as FeaturesReply,
  type SettingChange,
  SOURCE_LABEL,
  showValue,
} from '../features/types.ts'
import { EncouragementConfiguration } from '../encouragement/Configuration.tsx'
import '../features/features.css'

export function Features() {
  const features = useLoad(() => api<FeaturesReply>('/api/admin/features'), [])
  const [auditTick, setAuditTick] = useState(0)
  return (
    <Layout title="Features">
      <p>What is switched on and how it is set. Values set by an environment variable are read-only here: change the variable named and redeploy.</p>
      <Loader loaded={features}>
        {(f) => (
          <>
            <section aria-labelledby="providers-heading">
              <h2 id="providers-heading">Providers</h2>
              <table>
                <caption>Each provider, configured by the check its feature makes (no value is ever shown)</caption>
                <thead>
                  <tr><th scope="col">Provider</th><th scope="col">Status</th><th scope="col">Environment variables</th></tr>
                </thead>
                <tbody>
                  {f.providers.map((p) => (
                    <tr key={p.id}>
                      <th scope="row">{p.name}</th>
                      <td className={p.configured ? 'status-ok' : 'status-warn'}>{p.configured ? 'Configured' : 'Not configured'}</td>
                      <td>
                        <ul className="plain">
                          {p.variables.map((v) => (
                            <li key={v.name}>
                              <code>{v.name}</code> {v.set ? 'set' : 'not set'}{v.required ? '' : ' (optional)'}
                            </li>
                          ))}
                        </ul>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </section>
            <section aria-labelledby="limits-heading">
              <h2 id="limits-heading">Daily caps and limits</h2>
              <table>
                <caption>Every cap and limit, its value and where it is set</caption>
                <thead>
                  <tr>
                    <th scope="col">Area</th>
                    <th scope="col">Limit</th>
                    <th scope="col">Value</th>
                    <th scope="col">Set by</th>
                    <th scope="col">Where to change it</th>
                  </tr>
                </thead>
                <tbody>
                  {f.limits.map((l) => (
                    <tr key={l.id}>
                      <td>{l.area}</td>
                      <td>{l.name}</td>
                      <td>{l.value === null ? 'No limit' : `${l.value.toLocaleString()} ${l.unit}`}</td>
                      <td>{SOURCE_LABEL[l.source]}</td>
                      <td>
                        <code>{l.where}</code>
                        {l.editable && <><br /><span className="muted">Changeable below (audited)</span></>}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
              <p className="muted">
                Kit launch date (<code>LABS_KIT_LAUNCH_DATE</code>): {f.kit_launch_date ?? 'not set'}.
              </p>
            </section>
          </>
        )}
      </Loader>
      <section aria-labelledby="write-limit-heading">
        <h2 id="write-limit-heading">Change a write rate limit</h2>
        <WriteLimitForm
          onDone={() => {
            features.reload()
            setAuditTick((t) => t + 1)
          }}
        />
      </section>
      <section aria-labelledby="encouragement-heading">
        <h2 id="encouragement-heading">Encouragement configuration</h2>
        <EncouragementConfiguration />
      </section>
      <section aria-labelledby="audit-heading">
        <h2 id="audit-heading">Change history</h2>
        <AuditHistory tick={auditTick} />
      </section>
    </Layout>
  )
}

function WriteLimitForm({ onDone }: { onDone: () => void }) {
  const [kind, setKind] = useState<'user' | 'address'>('user')
  const [subject, setSubject] = useState('*')
  const [max, setMax] = useState('')
  const [windowSeconds, setWindowSeconds] = useState('300')
  return (
    <ActionForm
      label="Save limit"
      success="The limit is saved and the change recorded."
      submit={() =>
        api('/api/admin/features/write-rate-limits', {
          method: 'PUT',
          body: {
            subject_kind: kind,
            subject: subject.trim() || '*',
            max_writes: Number(max),
            window_seconds: Number(windowSeconds),
          },
        })}
      onDone={onDone}
    >
      <Field label="Kind of caller">
        {(id) => (
          <select id={id} value={kind} onChange={(e) => setKind(e.target.value as 'user' | 'address')}>
            <option value="user">Signed-in user</option>
            <option value="address">Anonymous address</option>
          </select>
        )}
      </Field>
      <Field label="Subject" hint="* is the default of the kind; otherwise a user id or an IP address">
        {(id) => <input id={id} required value={subject} onChange={(e) => setSubject(e.target.value)} />}
      </Field>
      <Field label="Most writes per window">
        {(id) => (
          <input id={id} type="number" required min="0" step="1" value={max} onChange={(e) => setMax(e.target.value)} />
        )}
      </Field>
      <Field label="Window (seconds)" hint="1 to 86,400">
        {(id) => (
          <input id={id} type="number" required min="1" step="1" value={windowSeconds}
            onChange={(e) => setWindowSeconds(e.target.value)} />
        )}
      </Field>
    </ActionForm>
  )
}

function AuditHistory({ tick }: { tick: number }) {
  const pages = useCursorPages()
  const changes = useLoad(
    () =>
      api<{ changes: SettingChange[]; next_cursor: string | null }>('/api/admin/features/changes', {
        query: { before: pages.cursor, limit: 20 },
      }),
    [pages.cursor, tick],
  )
  return (
    <Loader loaded={changes} empty="No setting has been changed from the console yet." isEmpty={(c) => c.changes.length === 0 && pages.page === 1}>
      {(c) => (
        <>
          <table>
            <caption>Settings changed from this page, newest first</caption>
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Who</th>
                <th scope="col">Setting</th>
                <th scope="col">Before</th>
                <th scope="col">After</th>
              </tr>
            </thead>
            <tbody>
              {c.changes.map((ch) => (
                <tr key={ch.id}>
                  <td><Time value={ch.changed_at} /></td>
                  <td>{ch.changed_by_email ?? ch.changed_by ?? <span className="muted">deleted account</span>}</td>
                  <td><code>{ch.setting}</code></td>
                  <td>{showValue(ch.old_value)}</td>
                  <td>{showValue(ch.new_value)}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <Pager pages={pages} nextCursor={c.next_cursor} />
        </>
      )}
    </Loader>
  )
}
