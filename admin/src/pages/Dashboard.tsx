// /dashboard/admin: the everyday work, one tab each; the tab is in the URL (?tab=) so a link or
// the back button returns to it.
// The first tab (Users) is in the first load; the others load when opened.
import { lazy, Suspense } from 'react'
import { Link, useSearchParams } from 'react-router'
import { Layout } from '../layout.tsx'
import { Loading } from '../ui.tsx'
import { UsersTab } from '../dashboard/Users.tsx'

const ApprovalsTab = lazy(() => import('../dashboard/Approvals.tsx').then((m) => ({ default: m.ApprovalsTab })))
const CheckinsTab = lazy(() => import('../dashboard/Checkins.tsx').then((m) => ({ default: m.CheckinsTab })))
const TemplatesTab = lazy(() => import('../dashboard/Templates.tsx').then((m) => ({ default: m.TemplatesTab })))
const EncouragementTab = lazy(() =>
  import('../dashboard/Encouragement.tsx').then((m) => ({ default: m.EncouragementTab }))
)
const ConversionRatesTab = lazy(() =>
  import('../dashboard/ConversionRates.tsx').then((m) => ({ default: m.ConversionRatesTab }))
)
const AiUsersTab = lazy(() => import('../dashboard/AiUsers.tsx').then((m) => ({ default: m.AiUsersTab })))

const TABS = [
  ['users', 'Users', UsersTab],
  ['approvals', 'Approvals', ApprovalsTab],
  ['checkins', 'Check-ins to review', CheckinsTab],
  ['templates', 'Templates', TemplatesTab],
  ['encouragement', 'Encouragement', EncouragementTab],
  ['rates', 'Conversion rates', ConversionRatesTab],
  ['ai-users', 'AI users', AiUsersTab],
] as const

export function Dashboard() {
  const [params] = useSearchParams()
  const current = TABS.find(([key]) => key === params.get('tab')) ?? TABS[0]
  const Tab = current[2]
  return (
    <Layout title="Dashboard">
      <nav aria-label="Dashboard tabs" className="tabs">
        <ul>
          {TABS.map(([key, label]) => (
            <li key={key}>
              <Link to={`?tab=${key}`} aria-current={key === current[0] ? 'page' : undefined}>{label}</Link>
            </li>
          ))}
        </ul>
      </nav>
      <section aria-labelledby="tab-heading" className="tab">
        <h2 id="tab-heading">{current[1]}</h2>
        <Suspense fallback={<Loading what="Loading the tab" />}>
          <Tab />
        </Suspense>
      </section>
    </Layout>
  )
}
