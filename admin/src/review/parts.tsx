// Small pieces the review tabs (Approvals, Check-ins, Templates, Encouragement) share: a user
// link to the user's admin page, a one-shot success notice, and a pager over `before`
// timestamps for endpoints that page by createdAt rather than next_cursor.
import { useState } from 'react'
import { Link } from 'react-router'
import { useAdmin } from '../session.tsx'
import './review.css'

/** A user id as a link to their admin page ("you" for the signed-in admin). */
export function UserLink({ id, name }: { id: string | null | undefined; name?: string | null }) {
  const admin = useAdmin()
  if (!id) return <span className="muted">—</span>
  const label = id === admin.id ? 'you' : name || id
  return <Link to={`/dashboard/admin/users/${id}`}>{label}</Link>
}

/** The outcome of the latest action on a tab, announced politely. */
export function useNotice() {
  const [notice, setNotice] = useState<string | null>(null)
  return {
    notice,
    say: setNotice,
    view: notice ? <p className="success" role="status">{notice}</p> : null,
  }
}
