// Kit waitlist: the signups (searchable, paginated), progress toward SPEC's gate (more than 200
// signups within 30 days of launch) and a CSV download of every signup.
import { useState } from 'react'
import { api } from '../api.ts'
import { Layout } from '../layout.tsx'
import { download } from '../labs/download.ts'
import { ActionButton, Empty, Field, Loader, Pager, Time, useCursorPages, useLoad } from '../ui.tsx'
import '../features/features.css'

interface Waitlist {
  signups: { id: string; email: string; created_at: string }[]
  next_cursor: string | null
  total: number
  launch_date: string | null
  signups_within_30_days_of_launch: number | null
  gate_met: boolean | null
  days_since_launch: number | null
}

const GATE = 200
const WINDOW_DAYS = 30

export function KitWaitlist() {
  const pages = useCursorPages()
  const [term, setTerm] = useState('')
  const [q, setQ] = useState('')
  const [whatIf, setWhatIf] = useState('')
  const list = useLoad(
    // The search the rows answer travels with them: while the next search loads, the rows
    // shown keep the caption of their own.
    () =>
      api<Waitlist>('/api/labs/admin/kit-waitlist', {
        query: { q, before: pages.cursor, limit: 50, launch_date: whatIf },
      }).then((w) => ({ ...w, q })),
    [q, pages.cursor, whatIf],
  )
  return (
    <Layout title="Kit waitlist">
      <Loader loaded={list}>
        {(w) => <Gate w={w} />}
      </Loader>
      <Field label="What-if launch date" hint="Empty: LABS_KIT_LAUNCH_DATE. Only this view changes.">
        {(id) => <input id={id} type="date" value={whatIf} onChange={(e) => setWhatIf(e.target.value)} />}
      </Field>
      <section aria-labelledby="signups-heading">
        <h2 id="signups-heading">Signups</h2>
        <form
          role="search"
          className="inline-fields"
          onSubmit={(e) => {
            e.preventDefault()
            setQ(term.trim())
            pages.reset()
          }}
        >
          <Field label="Search by address">
            {(id) => <input id={id} type="search" value={term} onChange={(e) => setTerm(e.target.value)} />}
          </Field>
          <button type="submit">Search</button>
          {q && (
            <button type="button" onClick={() => { setTerm(''); setQ(''); pages.reset() }}>Clear search</button>
          )}
        </form>
        <p>
          <ActionButton
            label={q ? 'Download matching signups (CSV)' : 'Download all signups (CSV)'}
            onConfirm={() => download('/api/labs/admin/kit-waitlist.csv', { query: { q } }, 'kit-waitlist.csv')}
          />
        </p>
        <Loader loaded={list}>
          {(w) =>
            w.signups.length === 0
              ? <Empty>{w.q ? `No signup matches “${w.q}”.` : 'Nobody has signed up yet.'}</Empty>
              : (
                <>
                  <table>
                    <caption>{w.q ? `Signups matching “${w.q}”` : 'Every signup'}, newest first</caption>
                    <thead>
                      <tr><th scope="col">E-mail</th><th scope="col">Signed up</th></tr>
                    </thead>
                    <tbody>
                      {w.signups.map((s) => (
                        <tr key={s.id}>
                          <td>{s.email}</td>
                          <td><Time value={s.created_at} /></td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                  <Pager pages={pages} nextCursor={w.next_cursor} />
                </>
              )}
        </Loader>
      </section>
    </Layout>
  )
}

function Gate({ w }: { w: Waitlist }) {
  return (
    <section aria-labelledby="gate-heading">
      <h2 id="gate-heading">Launch gate</h2>
      <p>SPEC's gate: more than {GATE} signups within {WINDOW_DAYS} days of launch. {w.total.toLocaleString()} signups in all.</p>
      {w.launch_date === null || w.signups_within_30_days_of_launch === null
        ? <p className="status-warn">No launch date: set <code>LABS_KIT_LAUNCH_DATE</code> (YYYY-MM-DD) to follow the gate.</p>
        : (
          <div className="gate">
            <p>
              Launch <strong>{w.launch_date}</strong>:{' '}
              <strong>{w.signups_within_30_days_of_launch.toLocaleString()}</strong> signups within the window.{' '}
              <span className={w.gate_met ? 'status-ok' : 'status-warn'}>
                {w.gate_met ? 'Gate met' : `Gate not met (${Math.max(0, GATE + 1 - w.signups_within_30_days_of_launch)} more needed)`}
              </span>
            </p>
            <p>
              <label htmlFor="gate-progress">Progress toward {GATE + 1} signups</label>{' '}
              <progress id="gate-progress" max={GATE + 1} value={Math.min(GATE + 1, w.signups_within_30_days_of_launch)}>
                {w.signups_within_30_days_of_launch} of {GATE + 1}
              </progress>
            </p>
            <p>{windowText(w.days_since_launch)}</p>
          </div>
        )}
    </section>
  )
}

function windowText(days: number | null) {
  if (days === null) return null
  if (days < 0) return `Launch is in ${-days} day${days === -1 ? '' : 's'}; the window has not opened.`
  if (days >= WINDOW_DAYS) return `The ${WINDOW_DAYS}-day window closed ${days - WINDOW_DAYS + 1} day(s) ago: the count is final.`
  const left = WINDOW_DAYS - days
  return `Day ${days + 1} of ${WINDOW_DAYS}: ${left} day${left === 1 ? '' : 's'} left in the window.`
}
