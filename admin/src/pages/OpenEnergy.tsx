// Open energy: built by its own change (see docs/admin_console.md).
import { Layout } from '../layout.tsx'

export function OpenEnergy() {
  return (
    <Layout title="Open energy">
      <p className="empty">This page is not built yet.</p>
    </Layout>
  )
}
