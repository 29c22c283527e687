// Every signed-in page: the impersonation banner, the navigation between SPEC's admin routes, and
// the page itself in <main>.
import type { ReactNode } from 'react'
import { Link, NavLink } from 'react-router'
import { useImpersonation } from './impersonation.ts'
import { useAdmin } from './session.tsx'
import { supabase } from './supabase.ts'
import { Time } from './ui.tsx'

const PAGES = [
  ['/dashboard/admin', 'Dashboard'],
  ['/dashboard/admin/health', 'Health'],
  ['/dashboard/admin/tasks', 'Tasks'],
  ['/dashboard/admin/features', 'Features'],
  ['/dashboard/admin/kit-waitlist', 'Kit waitlist'],
  ['/dashboard/admin/open-energy', 'Open energy'],
] as const

export function Layout({ title, children }: { title: string; children: ReactNode }) {
  const admin = useAdmin()
  return (
    <>
      <a className="skip" href="#main">Skip to content</a>
      <ImpersonationBanner />
      <header className="top">
        <span className="brand">Admin console</span>
        <nav aria-label="Admin pages">
          <ul>
            {PAGES.map(([to, label]) => (
              <li key={to}>
                <NavLink to={to} end>{label}</NavLink>
              </li>
            ))}
          </ul>
        </nav>
        <span className="who">
          {admin.email}{' '}
          <button type="button" onClick={() => supabase.auth.signOut()}>Sign out</button>
        </span>
      </header>
      <main id="main" tabIndex={-1}>
        <h1>{title}</h1>
        {children}
      </main>
    </>
  )
}

function ImpersonationBanner() {
  const imp = useImpersonation()
  if (!imp) return null
  return (
    <section className="banner" aria-label="Impersonation in progress">
      Acting as <strong>{imp.user.email ?? imp.user.id}</strong> because “{imp.reason}”, ends at{' '}
      <Time value={imp.expires_at} />.{' '}
      <Link to="/auth/impersonate-callback?stop=1">End impersonation</Link>
    </section>
  )
}
