// Health: built by its own change (see docs/admin_console.md).
import { Layout } from '../layout.tsx'

export function Health() {
  return (
    <Layout title="Health">
      <p className="empty">This page is not built yet.</p>
    </Layout>
  )
}
