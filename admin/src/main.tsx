// The admin console: SPEC's admin browser routes as one static single-page app.
import { StrictMode } from 'react'
import { createRoot } from 'react-dom/client'
import { BrowserRouter, Route, Routes } from 'react-router'
import { SessionGate } from './session.tsx'
import { Layout } from './layout.tsx'
import { Dashboard } from './pages/Dashboard.tsx'
import { UserDetail } from './pages/UserDetail.tsx'
import { Health } from './pages/Health.tsx'
import { KitWaitlist } from './pages/KitWaitlist.tsx'
import { Features } from './pages/Features.tsx'
import { Tasks } from './pages/Tasks.tsx'
import { OpenEnergy } from './pages/OpenEnergy.tsx'
import { ImpersonateCallback } from './pages/ImpersonateCallback.tsx'
import './styles.css'

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
      </SessionGate>
    </BrowserRouter>
  </StrictMode>,
)
