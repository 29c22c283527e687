// Features: built by its own change (see docs/admin_console.md).
import { Layout } from '../layout.tsx'

export function Features() {
  return (
    <Layout title="Features">
      <p className="empty">This page is not built yet.</p>
    </Layout>
  )
}
