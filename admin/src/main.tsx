// The admin console: SPEC's admin browser routes as one static single-page app.
// Pages other than the dashboard load on first visit, so the first load parses only what the
// dashboard needs (docs/performance.md: the console's first load).
import { lazy, StrictMode, Suspense } from 'react'
import { createRoot } from 'react-dom/client'
import { BrowserRouter, Route, Routes } from 'react-router'
import { SessionGate } from './session.tsx'
import { Layout } from './layout.tsx'
import { Dashboard } from './pages/Dashboard.tsx'
import { Loading } from './ui.tsx'
import './styles.css'

const UserDetail = lazy(() => import('./pages/UserDetail.tsx').then((m) => ({ default: m.UserDetail })))
const Health = lazy(() => import('./pages/Health.tsx').then((m) => ({ default: m.Health })))
const KitWaitlist = lazy(() => import('./pages/KitWaitlist.tsx').then((m) => ({ default: m.KitWaitlist })))
const Features = lazy(() => import('./pages/Features.tsx').then((m) => ({ default: m.Features })))
const Tasks = lazy(() => import('./pages/Tasks.tsx').then((m) => ({ default: m.Tasks })))
const OpenEnergy = lazy(() => import('./pages/OpenEnergy.tsx').then((m) => ({ default: m.OpenEnergy })))
const ImpersonateCallback = lazy(() =>
  import('./pages/ImpersonateCallback.tsx').then((m) => ({ default: m.ImpersonateCallback }))
)

function NotFound() {
  return (
    <Layout title="Not found">
      <p>No admin page lives at {location.pathname}.</p>
    </Layout>
  )
}

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <BrowserRouter>
      <SessionGate>
        <Suspense fallback={<main className="centered"><Loading what="Loading the page" /></main>}>
        <Routes>
          <Route path="/dashboard/admin" element={<Dashboard />} />
          <Route path="/dashboard/admin/users/:id" element={<UserDetail />} />
          <Route path="/dashboard/admin/health" element={<Health />} />
          <Route path="/dashboard/admin/kit-waitlist" element={<KitWaitlist />} />
          <Route path="/dashboard/admin/features" element={<Features />} />
          <Route path="/dashboard/admin/tasks" element={<Tasks />} />
          <Route path="/dashboard/admin/open-energy" element={<OpenEnergy />} />
          <Route path="/auth/impersonate-callback" element={<ImpersonateCallback />} />
          <Route path="*" element={<NotFound />} />
        </Routes>
        </Suspense>
      </SessionGate>
    </BrowserRouter>
  </StrictMode>,
)
