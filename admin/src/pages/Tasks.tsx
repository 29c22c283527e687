// Tasks: built by its own change (see docs/admin_console.md).
import { Layout } from '../layout.tsx'

export function Tasks() {
  return (
    <Layout title="Tasks">
      <p className="empty">This page is not built yet.</p>
    </Layout>
  )
}
