// A user's admin page: who they are (role, drops, this month's AI usage), their role changes,
// how a deletion of their account stands, and the audit of every impersonation of them (start,
// stop, reason, admin, times) with what was done in each session.
import { useState } from 'react'
import { Link, useLocation, useParams } from 'react-router'
import { api } from '../api.ts'
import { Layout } from '../layout.tsx'
import { Loader, Time, useLoad } from '../ui.tsx'
import {
  type AdminUser,
  DeleteAccountButton,
  DeletionProgress,
  formatCost,
  ImpersonateLink,
  ROLE_NAMES,
  RoleChangeButton,
  who,
} from '../users/parts.tsx'
import { ImpersonationAudit } from '../users/audit.tsx'

interface RoleChangeRow {
  id: number
  old_role: string
  new_role: string
  changed_by: string | null
  changed_via: string
  created_at: string
}

export function UserDetail() {
  const { id = '' } = useParams()
  const location = useLocation()
  const [notice, setNotice] = useState<string | null>((location.state as { notice?: string } | null)?.notice ?? null)
  const [deletionKey, setDeletionKey] = useState(0)
  const user = useLoad(
    () => api<{ user: AdminUser; role_changes: RoleChangeRow[] }>(`/api/admin/users/${encodeURIComponent(id)}`),
    [id],
  )
  return (
    <Layout title={user.data ? `User ${who(user.data.user)}` : 'User'}>
      <p><Link to="/dashboard/admin?tab=users">Back to Users</Link></p>
      {notice && <p className="notice" role="status">{notice}</p>}
      <section aria-labelledby="summary-heading">
        <h2 id="summary-heading">Summary</h2>
        <Loader loaded={user}>
          {({ user: u, role_changes }) => (
            <>
              <dl className="summary">
                <dt>E-mail</dt><dd>{u.email ?? '—'}</dd>
                <dt>Name</dt><dd>{u.full_name ?? '—'}</dd>
                <dt>Id</dt><dd><code>{u.id}</code></dd>
                <dt>Role</dt><dd>{ROLE_NAMES[u.role]}</dd>
                <dt>Kind</dt><dd>{u.is_ai ? 'Synthetic (AI) user' : 'Real user'}{u.is_active ? '' : ', inactive'}</dd>
                <dt>Joined</dt><dd><Time value={u.created_at} /></dd>
                <dt>Drops balance</dt><dd>{u.drops_balance.toLocaleString()}</dd>
                <dt>AI this month (UTC)</dt>
                <dd>
                  {u.token_usage.total_tokens.toLocaleString()} tokens in {u.token_usage.calls.toLocaleString()} calls,{' '}
                  {formatCost(u.token_usage.total_cost)}
                </dd>
              </dl>
              <div className="row-actions">
                <RoleChangeButton user={u} onDone={(m) => {
                  setNotice(m)
                  user.reload()
                }} />
                <ImpersonateLink user={u} />
                <DeleteAccountButton user={u} onDone={() => {
                  setNotice(`The deletion of ${who(u)}'s account has started.`)
                  setDeletionKey((k) => k + 1)
                }} />
              </div>
              <h3>Role changes</h3>
              {role_changes.length === 0 ? <p className="empty">The role was never changed.</p> : (
                <table>
                  <caption>The latest role changes, newest first</caption>
                  <thead>
                    <tr><th scope="col">When</th><th scope="col">From</th><th scope="col">To</th><th scope="col">By</th><th scope="col">Through</th></tr>
                  </thead>
                  <tbody>
                    {role_changes.map((r) => (
                      <tr key={r.id}>
                        <td><Time value={r.created_at} /></td>
                        <td>{r.old_role}</td>
                        <td>{r.new_role}</td>
                        <td>{r.changed_by ? <Link to={`/dashboard/admin/users/${r.changed_by}`}>{r.changed_by}</Link> : 'the database'}</td>
                        <td>{r.changed_via}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              )}
            </>
          )}
        </Loader>
      </section>
      <section aria-labelledby="deletion-heading">
        <h2 id="deletion-heading">Account deletion</h2>
        <DeletionProgress key={`${id}-${deletionKey}`} userId={id} />
      </section>
      <section aria-labelledby="audit-heading">
        <h2 id="audit-heading">Impersonation audit</h2>
        <ImpersonationAudit key={id} target={id} />
      </section>
    </Layout>
  )
}
