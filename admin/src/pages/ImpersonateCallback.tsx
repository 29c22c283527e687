// /auth/impersonate-callback (SPEC's admin route). ?user_id=…: start acting as that user, with a
// mandatory reason the API audits (refused without one, its message shown here); the token (at
// most 15 minutes) is kept in this tab only (impersonation.ts) and the layout's banner shows it on
// every page. ?stop=1: end it with the impersonation token itself, forget it, and return to the
// user's page. Without either: how to start one.
import { useEffect, useRef, useState } from 'react'
import { Link, useNavigate, useSearchParams } from 'react-router'
import { api, ApiError, errorText } from '../api.ts'
import { currentImpersonation, type Impersonation, setImpersonation, useImpersonation } from '../impersonation.ts'
import { Layout } from '../layout.tsx'
import { ActionForm, ErrorMessage, Field, Loader, Loading, Time, useLoad } from '../ui.tsx'
import { type AdminUser, ROLE_NAMES, who } from '../users/parts.tsx'
import '../users/users.css'

export function ImpersonateCallback() {
  const [params] = useSearchParams()
  const userId = params.get('user_id')
  return (
    <Layout title="Impersonation">
      {params.get('stop') === '1'
        ? <Stop />
        : userId
        ? <Start userId={userId} />
        : <Explain />}
    </Layout>
  )
}

function Explain() {
  const imp = useImpersonation()
  return (
    <>
      {imp && <Acting imp={imp} />}
      <p>
        To act as a user (to see what they see, or to fix something on their behalf), find them in the{' '}
        <Link to="/dashboard/admin?tab=users">Users tab</Link> and choose <strong>Impersonate</strong>. You give a
        reason, which is audited with the session; the session lasts at most 15 minutes, never applies to another
        super admin, and everything done in it is recorded on the user's page.
      </p>
    </>
  )
}

function Start({ userId }: { userId: string }) {
  const imp = useImpersonation()
  const [reason, setReason] = useState('')
  const target = useLoad(() => api<{ user: AdminUser }>(`/api/admin/users/${encodeURIComponent(userId)}`), [userId])
  if (imp) {
    return imp.user.id === userId ? <Acting imp={imp} /> : (
      <>
        <p>
          You are already acting as <strong>{imp.user.email ?? imp.user.id}</strong>. End that impersonation before
          starting another.
        </p>
        <p><Link to="/auth/impersonate-callback?stop=1">End impersonation</Link></p>
      </>
    )
  }
  return (
    <>
      <h2>Start an impersonation</h2>
      <Loader loaded={target}>
        {({ user }) => (
          <p>
            You are about to act as <strong>{who(user)}</strong> ({ROLE_NAMES[user.role]}
            {user.full_name && user.email ? `, ${user.full_name}` : ''}) for at most 15 minutes.
          </p>
        )}
      </Loader>
      <ActionForm
        label="Start impersonation"
        success="Impersonation started."
        submit={async () => {
          const r = await api<Omit<Impersonation, 'reason'>>('/api/admin/impersonation', {
            body: { user_id: userId, reason },
          })
          setImpersonation({
            session_id: r.session_id,
            access_token: r.access_token,
            expires_at: r.expires_at,
            user: r.user,
            reason: reason.trim(),
          })
        }}
      >
        <Field label="Reason (required, audited)" hint="Why you act as this user, such as the support ticket">
          {(id) => (
            <textarea id={id} rows={3} value={reason} onChange={(e) => setReason(e.target.value)} />
          )}
        </Field>
      </ActionForm>
      <p><Link to={`/dashboard/admin/users/${encodeURIComponent(userId)}`}>Back to the user's page</Link></p>
    </>
  )
}

/** What the admin can do while acting: prove the session with the user's own profile, go back. */
function Acting({ imp }: { imp: Impersonation }) {
  const [profile, setProfile] = useState<Record<string, unknown> | null>(null)
  const [error, setError] = useState<string | null>(null)
  const [busy, setBusy] = useState(false)
  return (
    <section aria-labelledby="acting-heading">
      <h2 id="acting-heading">Acting as {imp.user.email ?? imp.user.id}</h2>
      <p>
        Reason: “{imp.reason}”. The session ends at <Time value={imp.expires_at} />; everything done with its token
        is recorded with you as the impersonator.
      </p>
      <ul>
        <li>
          <button
            type="button"
            disabled={busy}
            onClick={async () => {
              setBusy(true)
              setError(null)
              try {
                setProfile(await api('/api/user/profile', { token: imp.access_token }))
              } catch (e) {
                setError(errorText(e))
              } finally {
                setBusy(false)
              }
            }}
          >
            Read their profile as them
          </button>
        </li>
        <li><Link to={`/dashboard/admin/users/${imp.user.id}`}>The user's admin page</Link></li>
        <li><Link to="/auth/impersonate-callback?stop=1">End impersonation</Link></li>
      </ul>
      <ErrorMessage error={error} />
      {profile && (
        <>
          <h3>Their profile, read with the impersonation token</h3>
          <dl className="summary" aria-label="Their profile">
            {Object.entries(profile).map(([k, v]) => (
              <div key={k} className="pair">
                <dt>{k}</dt>
                <dd>{v === null ? '—' : typeof v === 'object' ? JSON.stringify(v) : String(v)}</dd>
              </div>
            ))}
          </dl>
        </>
      )}
    </section>
  )
}

function Stop() {
  const navigate = useNavigate()
  const started = useRef(false)
  const [state, setState] = useState<{ error?: string; none?: boolean }>({})
  useEffect(() => {
    if (started.current) return
    started.current = true
    const imp = currentImpersonation()
    if (!imp) return setState({ none: true })
    ;(async () => {
      try {
        // The token itself ends its session; once it is refused (ended or expired), the admin's own
        // session names it, so the audit still gets its stop row if it has none.
        try {
          await api('/api/admin/impersonation/stop', { token: imp.access_token, body: {} })
        } catch (e) {
          if (!(e instanceof ApiError && e.status === 401)) throw e
          await api('/api/admin/impersonation/stop', { body: { session_id: imp.session_id } })
        }
        setImpersonation(null)
        navigate(`/dashboard/admin/users/${imp.user.id}`, {
          replace: true,
          state: { notice: `The impersonation of ${imp.user.email ?? imp.user.id} ended.` },
        })
      } catch (e) {
        setState({ error: errorText(e) })
      }
    })()
  }, [navigate])
  if (state.none) {
    return (
      <>
        <p className="empty">No impersonation is in progress in this tab.</p>
        <p><Link to="/dashboard/admin">Back to the console</Link></p>
      </>
    )
  }
  if (state.error) {
    return (
      <>
        <ErrorMessage error={state.error} />
        <p>The impersonation could not be ended. It ends by itself at its expiry.</p>
        <button type="button" onClick={() => location.reload()}>Try again</button>
      </>
    )
  }
  return <Loading what="Ending the impersonation" />
}
