// The impersonation audit of one user (GET /admin/impersonation/audit?target=): each session
// with its start (admin, reason, expiry), its stop, and what was done in it — the rows the audit
// page carries, and on request every recorded action (GET /admin/impersonation/sessions/{id}/writes).
import { useState } from 'react'
import { Link } from 'react-router'
import { api } from '../api.ts'
import { Loader, Pager, Time, useCursorPages, useLoad } from '../ui.tsx'

interface AuditRow {
  id: number
  session_id: string
  event: 'start' | 'stop'
  admin_id: string
  target_id: string
  reason: string
  expires_at: string | null
  created_at: string
}
interface Write {
  id: number
  session_id: string
  kind: 'write' | 'request'
  table_name: string | null
  operation: string
  row_id: string | null
  actor_role: string | null
  detail: { path?: string } | null
  created_at: string
}
interface Audit {
  audit: AuditRow[]
  writes: Write[]
  writes_truncated: boolean
  next_cursor: string | null
}

interface Session {
  id: string
  start?: AuditRow
  stop?: AuditRow
  admin_id: string
  reason: string
}

function sessions(rows: AuditRow[]): Session[] {
  const by = new Map<string, Session>()
  for (const r of rows) {
    const s = by.get(r.session_id) ?? { id: r.session_id, admin_id: r.admin_id, reason: r.reason }
    s[r.event] = r
    by.set(r.session_id, s)
  }
  return [...by.values()]
}

const describe = (w: Write) =>
  w.kind === 'request'
    ? `${w.operation} ${w.detail?.path ?? ''}`.trim()
    : `${w.operation} ${w.table_name ?? ''}${w.row_id ? ` ${w.row_id}` : ''}`

export function WritesList({ writes }: { writes: Write[] }) {
  if (writes.length === 0) return <p className="empty">Nothing was done in this session.</p>
  return (
    <ul>
      {writes.map((w) => (
        <li key={w.id}>
          <Time value={w.created_at} />: {w.kind === 'request' ? 'request' : 'row written'} <code>{describe(w)}</code>
          {w.actor_role && <span className="muted"> (as {w.actor_role})</span>}
        </li>
      ))}
    </ul>
  )
}

/** Every action of one session, paginated. */
function SessionWrites({ sessionId }: { sessionId: string }) {
  const pages = useCursorPages()
  const writes = useLoad(
    () =>
      api<{ writes: Write[]; next_cursor: string | null }>(`/api/admin/impersonation/sessions/${sessionId}/writes`, {
        query: { before: pages.cursor, limit: 50 },
      }),
    [sessionId, pages.cursor],
  )
  return (
    <Loader loaded={writes}>
      {(r) => (
        <>
          <WritesList writes={r.writes} />
          {(pages.page > 1 || r.next_cursor) && <Pager pages={pages} nextCursor={r.next_cursor} />}
        </>
      )}
    </Loader>
  )
}

function SessionRow({ session, writes, truncated }: { session: Session; writes: Write[]; truncated: boolean }) {
  const [all, setAll] = useState(false)
  const ended = session.stop
    ? <>stopped <Time value={session.stop.created_at} /></>
    : session.start?.expires_at && new Date(session.start.expires_at) <= new Date()
    ? <>expired <Time value={session.start.expires_at} /></>
    : session.start
    ? <>in progress, ends <Time value={session.start.expires_at} /></>
    : 'started before this page'
  return (
    <tr>
      <td>{session.start ? <Time value={session.start.created_at} /> : <span className="muted">earlier</span>}</td>
      <td>{ended}</td>
      <td><Link to={`/dashboard/admin/users/${session.admin_id}`}>{session.admin_id}</Link></td>
      <td>{session.reason}</td>
      <td>
        {all ? <SessionWrites sessionId={session.id} /> : (
          <>
            <WritesList writes={writes} />
            {(truncated || writes.length > 0) && (
              <button type="button" onClick={() => setAll(true)}>
                Every action of this session
              </button>
            )}
          </>
        )}
      </td>
    </tr>
  )
}

export function ImpersonationAudit({ target }: { target: string }) {
  const pages = useCursorPages()
  const audit = useLoad(
    () => api<Audit>('/api/admin/impersonation/audit', { query: { target, before: pages.cursor, limit: 20 } }),
    [target, pages.cursor],
  )
  return (
    <Loader loaded={audit} isEmpty={(a) => a.audit.length === 0 && pages.page === 1} empty="Nobody has impersonated this user.">
      {(a) => (
        <>
          <table>
            <caption>Impersonation sessions of this user, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Started</th>
                <th scope="col">Ended</th>
                <th scope="col">Admin</th>
                <th scope="col">Reason</th>
                <th scope="col">What was done</th>
              </tr>
            </thead>
            <tbody>
              {sessions(a.audit).map((s) => (
                <SessionRow key={s.id} session={s} writes={a.writes.filter((w) => w.session_id === s.id)}
                  truncated={a.writes_truncated} />
              ))}
            </tbody>
          </table>
          <Pager pages={pages} nextCursor={a.next_cursor} />
        </>
      )}
    </Loader>
  )
}
