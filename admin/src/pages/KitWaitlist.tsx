// Kit waitlist: built by its own change (see docs/admin_console.md).
import { Layout } from '../layout.tsx'

export function KitWaitlist() {
  return (
    <Layout title="Kit waitlist">
      <p className="empty">This page is not built yet.</p>
    </Layout>
  )
}
