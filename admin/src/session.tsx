// Sign-in through supabase-js (e-mail and password) and the super-admin gate: the role is read
// from the caller's own profile row on every load, so a demotion shows at once. A signed-in user
// who is not a super admin sees the permission-denied page and nothing else (SPEC Authentication 3).
import { createContext, type ReactNode, useContext, useEffect, useState } from 'react'
import type { Session } from '@supabase/supabase-js'
import { supabase } from './supabase.ts'
import { ActionForm, ErrorMessage, Field, Loading } from './ui.tsx'

export interface Admin {
  id: string
  email: string | null
  fullName: string | null
}

const AdminContext = createContext<Admin | null>(null)
export const useAdmin = () => useContext(AdminContext)!

type State =
  | { kind: 'loading' }
  | { kind: 'signed-out' }
  | { kind: 'denied'; session: Session }
  | { kind: 'error'; message: string }
  | { kind: 'admin'; admin: Admin }

export function SessionGate({ children }: { children: ReactNode }) {
  const [state, setState] = useState<State>({ kind: 'loading' })
  useEffect(() => {
    let userId: string | null | undefined
    const judge = async (session: Session | null) => {
      if (session?.user.id === userId && userId !== undefined) return // a token refresh
      userId = session?.user.id ?? null
      if (!session) return setState({ kind: 'signed-out' })
      setState({ kind: 'loading' })
      const { data, error } = await supabase.from('profiles').select('role, full_name').eq('id', session.user.id)
        .maybeSingle()
      if (error) return setState({ kind: 'error', message: error.message })
      if (data?.role !== 'super_admin') return setState({ kind: 'denied', session })
      setState({
        kind: 'admin',
        admin: { id: session.user.id, email: session.user.email ?? null, fullName: data.full_name },
      })
    }
    const { data } = supabase.auth.onAuthStateChange((_event, session) => {
      // supabase-js asks not to await other calls inside the callback.
      setTimeout(() => judge(session), 0)
    })
    return () => data.subscription.unsubscribe()
  }, [])

  switch (state.kind) {
    case 'loading':
      return <main className="centered"><Loading what="Checking your session" /></main>
    case 'signed-out':
      return <SignIn />
    case 'error':
      return (
        <main className="centered">
          <h1>Admin console</h1>
          <ErrorMessage error={state.message} />
          <button type="button" onClick={() => location.reload()}>Try again</button>
        </main>
      )
    case 'denied':
      return <PermissionDenied email={state.session.user.email ?? ''} />
    case 'admin':
      return <AdminContext.Provider value={state.admin}>{children}</AdminContext.Provider>
  }
}

function SignIn() {
  const [email, setEmail] = useState('')
  const [password, setPassword] = useState('')
  return (
    <main className="centered">
      <h1>Admin console</h1>
      <p>Sign in with a super admin's account.</p>
      <ActionForm
        label="Sign in"
        success="Signed in."
        submit={async () => {
          const { error } = await supabase.auth.signInWithPassword({ email, password })
          if (error) throw error
        }}
      >
        <Field label="E-mail">
          {(id) => (
            <input id={id} type="email" autoComplete="username" required value={email}
              onChange={(e) => setEmail(e.target.value)} />
          )}
        </Field>
        <Field label="Password">
          {(id) => (
            <input id={id} type="password" autoComplete="current-password" required value={password}
              onChange={(e) => setPassword(e.target.value)} />
          )}
        </Field>
      </ActionForm>
    </main>
  )
}

function PermissionDenied({ email }: { email: string }) {
  return (
    <main className="centered">
      <h1>Permission denied</h1>
      <p>
        You are signed in as <strong>{email}</strong>, who is not a super admin. The admin console is for super
        admins only.
      </p>
      <button type="button" onClick={() => supabase.auth.signOut()}>Sign out</button>
    </main>
  )
}
