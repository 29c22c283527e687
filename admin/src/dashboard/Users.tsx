// Users: search by e-mail or name (paginated), each user's role, drops balance and this month's
// AI usage and cost; a role change (confirmed: a fresh session is needed), impersonation, and
// support's account deletion with its progress. Each e-mail links to the user's own page.
import { useState } from 'react'
import { Link } from 'react-router'
import { api } from '../api.ts'
import { Loader, Loading, Pager, useCursorPages, useLoad } from '../ui.tsx'
import {
  type AdminUser,
  DeleteAccountButton,
  type Deletion,
  DeletionProgress,
  formatCost,
  ImpersonateLink,
  ROLE_NAMES,
  RoleChangeButton,
  who,
} from '../users/parts.tsx'

interface Users {
  users: AdminUser[]
  next_cursor: string | null
}

export function UsersTab() {
  const pages = useCursorPages()
  const [draft, setDraft] = useState('')
  const [q, setQ] = useState('')
  const [notice, setNotice] = useState<string | null>(null)
  const [deletions, setDeletions] = useState<{ user: AdminUser; deletion: Deletion }[]>([])
  const users = useLoad(
    // The reply carries the term it answers, so the caption never names a search still under way.
    async () => ({ ...(await api<Users>('/api/admin/users', { query: { q, before: pages.cursor, limit: 25 } })), q }),
    [q, pages.cursor],
  )
  return (
    <>
      <form
        className="search-form"
        role="search"
        onSubmit={(e) => {
          e.preventDefault()
          setQ(draft.trim())
          pages.reset()
        }}
      >
        <p className="field">
          <label htmlFor="user-search">Search by e-mail or name</label>
          <input id="user-search" type="search" value={draft} onChange={(e) => setDraft(e.target.value)}
            placeholder="sam@example.com or Sam" />
        </p>
        <button type="submit" className="primary">Search</button>
        {q && (
          <button type="button" onClick={() => {
            setDraft('')
            setQ('')
            pages.reset()
          }}>
            Show everyone
          </button>
        )}
      </form>
      {notice && <p className="notice" role="status">{notice}</p>}
      {deletions.length > 0 && (
        <section aria-labelledby="deletions-heading">
          <h3 id="deletions-heading">Deletions started here</h3>
          {deletions.map(({ user, deletion }) => (
            <div key={user.id} className="card">
              <p><strong>{who(user)}</strong></p>
              <DeletionProgress userId={user.id} initial={deletion} />
            </div>
          ))}
        </section>
      )}
      {users.loading && users.data && <Loading what="Searching" />}
      <Loader
        loaded={users}
        isEmpty={(r) => r.users.length === 0 && pages.page === 1}
        empty={q ? `No user's e-mail or name matches “${q}”.` : 'No users yet.'}
      >
        {(r) => (
          <>
            <table>
              <caption>
                {r.q ? <>Users matching “{r.q}”</> : 'Users, newest first'} (usage and cost: this calendar month, UTC)
              </caption>
              <thead>
                <tr>
                  <th scope="col">E-mail</th>
                  <th scope="col">Name</th>
                  <th scope="col">Role</th>
                  <th scope="col">Drops</th>
                  <th scope="col">Tokens this month</th>
                  <th scope="col">Cost this month</th>
                  <th scope="col">Actions</th>
                </tr>
              </thead>
              <tbody>
                {r.users.map((u) => (
                  <tr key={u.id}>
                    <td>
                      <Link to={`/dashboard/admin/users/${u.id}`}>{u.email ?? u.id}</Link>
                      {u.is_ai && <span className="muted"> (AI)</span>}
                      {!u.is_active && <span className="muted"> (inactive)</span>}
                    </td>
                    <td>{u.full_name ?? <span className="muted">—</span>}</td>
                    <td>{ROLE_NAMES[u.role]}</td>
                    <td>{u.drops_balance.toLocaleString()}</td>
                    <td>{u.token_usage.total_tokens.toLocaleString()}</td>
                    <td>{formatCost(u.token_usage.total_cost)}</td>
                    <td>
                      <div className="row-actions">
                        <RoleChangeButton user={u} onDone={(m) => {
                          setNotice(m)
                          users.reload()
                        }} />
                        <ImpersonateLink user={u} />
                        <DeleteAccountButton user={u} onDone={(deletion) => {
                          setNotice(`The deletion of ${who(u)}'s account has started.`)
                          setDeletions((d) => [{ user: u, deletion }, ...d.filter((x) => x.user.id !== u.id)])
                          users.reload()
                        }} />
                      </div>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
            {r.users.length === 0 && <p className="empty">No more users.</p>}
            <Pager pages={pages} nextCursor={r.next_cursor} />
          </>
        )}
      </Loader>
    </>
  )
}
