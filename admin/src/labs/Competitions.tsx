// Competitions on the Open energy page: every one (retired too), whether it is active and open
// for entries, when it was last scored; open, close, activate or retire it; "recompute now"
// runs the scheduled rescoring at once.
import { useState } from 'react'
import { api } from '../api.ts'
import { ActionButton, Loader, Pager, Time, useCursorPages, useLoad } from '../ui.tsx'

interface Competition {
  id: string
  slug: string
  title: string
  is_active: boolean
  entry_open: boolean
  starts_at: string
  ends_at: string | null
  last_scored_at: string | null
  participants: number
}

export function Competitions() {
  const pages = useCursorPages()
  const list = useLoad(
    () =>
      api<{ competitions: Competition[]; next_cursor: string | null }>('/api/labs/admin/competitions', {
        query: { before: pages.cursor, limit: 20 },
      }),
    [pages.cursor],
  )
  const [result, setResult] = useState<string | null>(null)
  const patch = (slug: string, body: { is_active?: boolean; entry_open?: boolean }) =>
    api(`/api/labs/admin/competitions/${encodeURIComponent(slug)}`, { method: 'PATCH', body })
  return (
    <>
      <p>
        <ActionButton
          label="Recompute now"
          onConfirm={async () => {
            const r = await api<{ competitions: { slug: string }[] }>('/api/labs/admin/competitions/recompute', { method: 'POST' })
            setResult(`Rescored ${r.competitions.length} active, open competition${r.competitions.length === 1 ? '' : 's'}.`)
          }}
          onDone={list.reload}
        />{' '}
        {result && <span className="success" role="status">{result}</span>}
      </p>
      <Loader loaded={list} empty="No competition yet." isEmpty={(l) => l.competitions.length === 0 && pages.page === 1}>
        {(l) => (
          <>
            <table>
              <caption>Every competition, newest first</caption>
              <thead>
                <tr>
                  <th scope="col">Competition</th>
                  <th scope="col">Active</th>
                  <th scope="col">Entry</th>
                  <th scope="col">Participants</th>
                  <th scope="col">Window</th>
                  <th scope="col">Last scored</th>
                  <th scope="col">Actions</th>
                </tr>
              </thead>
              <tbody>
                {l.competitions.map((c) => (
                  <tr key={c.id}>
                    <th scope="row">{c.title} <span className="muted">({c.slug})</span></th>
                    <td className={c.is_active ? 'status-ok' : 'muted'}>{c.is_active ? 'Active' : 'Retired'}</td>
                    <td>{c.entry_open ? 'Open' : 'Closed'}</td>
                    <td>{c.participants}</td>
                    <td><Time value={c.starts_at} /> – {c.ends_at ? <Time value={c.ends_at} /> : 'open-ended'}</td>
                    <td data-testid={`last-scored-${c.slug}`}><Time value={c.last_scored_at} /></td>
                    <td>
                      <span className="buttons">
                        {c.entry_open
                          ? (
                            <ActionButton label={`Close entry: ${c.slug}`} title="Close entry" danger
                              confirm={<p>Nobody else can join “{c.title}”. Its participants keep their scores.</p>}
                              onConfirm={() => patch(c.slug, { entry_open: false })} onDone={list.reload} />
                          )
                          : <ActionButton label={`Open entry: ${c.slug}`} onConfirm={() => patch(c.slug, { entry_open: true })} onDone={list.reload} />}
                        {c.is_active
                          ? (
                            <ActionButton label={`Retire: ${c.slug}`} title="Retire the competition" danger
                              confirm={<p>“{c.title}” disappears from the public listing and is no longer rescored.</p>}
                              onConfirm={() => patch(c.slug, { is_active: false })} onDone={list.reload} />
                          )
                          : <ActionButton label={`Activate: ${c.slug}`} onConfirm={() => patch(c.slug, { is_active: true })} onDone={list.reload} />}
                      </span>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
            <Pager pages={pages} nextCursor={l.next_cursor} />
          </>
        )}
      </Loader>
    </>
  )
}
