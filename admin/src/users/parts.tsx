// What the Users tab and the user's page share: the user's row as the API gives it, the role
// change (confirmed: the new role needs the user's fresh session), the support deletion
// (confirmed by typing DELETE) and its progress, refreshed until it is done.
import { useCallback, useEffect, useRef, useState } from 'react'
import { Link } from 'react-router'
import { api, ApiError, errorText } from '../api.ts'
import './users.css'
import { ActionButton, ErrorMessage, Loading, Time, useInterval } from '../ui.tsx'

export type Role = 'user' | 'super_admin'

export interface AdminUser {
  id: string
  email: string | null
  full_name: string | null
  role: Role
  is_ai: boolean
  is_active: boolean
  drops_balance: number
  created_at: string
  token_usage: { total_tokens: number; total_cost: number; calls: number; breakdown: Record<string, unknown> }
}

export interface Deletion {
  user_id: string
  requested_at: string
  requested_via: 'self' | 'support' | 'auth'
  status: 'pending' | 'deleted'
  steps: { stripe: boolean; music: boolean; storage: boolean; rows: boolean }
  last_error: string | null
}

export const ROLE_NAMES: Record<Role, string> = { user: 'User', super_admin: 'Super admin' }

const usd = new Intl.NumberFormat(undefined, { style: 'currency', currency: 'USD', maximumFractionDigits: 4 })
export const formatCost = (n: number) => usd.format(n)

export const who = (u: Pick<AdminUser, 'email' | 'full_name' | 'id'>) => u.email ?? u.full_name ?? u.id

/** Makes a user a super admin or a user again, after a confirmation that says when it applies. */
export function RoleChangeButton({ user, onDone }: { user: AdminUser; onDone: (message: string) => void }) {
  const to: Role = user.role === 'super_admin' ? 'user' : 'super_admin'
  return (
    <ActionButton
      label={to === 'super_admin' ? 'Make super admin' : 'Make ordinary user'}
      title={`Change the role of ${who(user)}`}
      confirm={
        <>
          <p>
            {who(user)} goes from <strong>{ROLE_NAMES[user.role]}</strong> to <strong>{ROLE_NAMES[to]}</strong>. The
            change is audited (who, when, old and new role).
          </p>
          <p>
            It takes effect on their next request; a fresh session is needed (they sign in again) before their apps
            show it.
          </p>
        </>
      }
      onConfirm={async () => {
        const r = await api<{ changed: boolean; role: Role; previous_role: Role }>(
          `/api/admin/users/${user.id}/role`,
          { method: 'PUT', body: { role: to } },
        )
        onDone(
          r.changed
            ? `${who(user)} is now ${ROLE_NAMES[r.role]} (was ${ROLE_NAMES[r.previous_role]}); a fresh session is needed.`
            : `${who(user)} already was ${ROLE_NAMES[r.role]}: nothing changed.`,
        )
      }}
    />
  )
}

/** Support's deletion of an account; the word DELETE typed in the dialog is what the API checks. */
export function DeleteAccountButton({ user, onDone }: { user: AdminUser; onDone: (d: Deletion) => void }) {
  const result = useRef<Deletion | null>(null)
  return (
    <ActionButton
      danger
      label="Delete account"
      title={`Delete the account of ${who(user)}`}
      confirm={
        <p>
          The account stops working at once; its subscription is cancelled, its files and rows are removed. This
          cannot be undone. Do it only on the user's request.
        </p>
      }
      reason={{ label: 'Type DELETE to confirm', placeholder: 'DELETE' }}
      onConfirm={async (text) => {
        const r = await api<{ deletion: Deletion }>(`/api/admin/users/${user.id}`, {
          method: 'DELETE',
          body: { confirm: text.trim() },
        })
        result.current = r.deletion
      }}
      onDone={() => result.current && onDone(result.current)}
    />
  )
}

const STEP_NAMES: Record<keyof Deletion['steps'], string> = {
  stripe: 'Stripe subscription',
  music: 'Music provider',
  storage: 'Files',
  rows: 'Account and rows',
}

/** One deletion's steps as they stand. */
export function DeletionSteps({ deletion }: { deletion: Deletion }) {
  return (
    <div className="deletion">
      <p>
        Status:{' '}
        <strong className={deletion.status === 'deleted' ? 'status-ok' : 'status-warn'}>
          {deletion.status === 'deleted' ? 'Deleted' : 'In progress'}
        </strong>{' '}
        (asked <Time value={deletion.requested_at} /> by {deletion.requested_via})
      </p>
      <ul aria-label="Deletion steps">
        {Object.entries(STEP_NAMES).map(([k, label]) => (
          <li key={k}>
            {label}: {deletion.steps[k as keyof Deletion['steps']] ? 'done' : 'waiting'}
          </li>
        ))}
      </ul>
      {deletion.last_error && <p className="error">Last error: {deletion.last_error}</p>}
    </div>
  )
}

/**
 * A user's deletion, read from GET /admin/users/{id}/deletion and read again every few seconds
 * while it is under way. 404: none under way (never asked, or finished a day ago).
 */
export function DeletionProgress({ userId, initial }: { userId: string; initial?: Deletion }) {
  const [state, setState] = useState<{ deletion?: Deletion | null; error?: string }>(
    initial ? { deletion: initial } : {},
  )
  const refresh = useCallback(() => {
    api<{ deletion: Deletion }>(`/api/admin/users/${userId}/deletion`).then(
      (r) => setState({ deletion: r.deletion }),
      (e) => setState(e instanceof ApiError && e.status === 404 ? { deletion: null } : { error: errorText(e) }),
    )
  }, [userId])
  useEffect(() => {
    if (!initial) refresh()
  }, [initial, refresh])
  const under = state.deletion?.status === 'pending'
  useInterval(useCallback(() => under && refresh(), [under, refresh]), 3000)
  if (state.error) {
    return (
      <div>
        <ErrorMessage error={state.error} />
        <button type="button" onClick={refresh}>Try again</button>
      </div>
    )
  }
  if (state.deletion === undefined) return <Loading what="Reading the deletion" />
  if (state.deletion === null) return <p className="empty">No deletion is under way for this account.</p>
  return (
    <div role="status" aria-live="polite">
      <DeletionSteps deletion={state.deletion} />
      {under && <p className="muted">Refreshed every 3 seconds until it is done.</p>}
    </div>
  )
}

export function ImpersonateLink({ user }: { user: AdminUser }) {
  return (
    <Link to={`/auth/impersonate-callback?user_id=${encodeURIComponent(user.id)}`}>
      Impersonate<span className="visually-hidden"> {who(user)}</span>
    </Link>
  )
}
