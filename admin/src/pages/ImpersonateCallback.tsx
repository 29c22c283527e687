// Impersonation: built by its own change (see docs/admin_console.md).
import { Layout } from '../layout.tsx'

export function ImpersonateCallback() {
  return (
    <Layout title="Impersonation">
      <p className="empty">This page is not built yet.</p>
    </Layout>
  )
}
