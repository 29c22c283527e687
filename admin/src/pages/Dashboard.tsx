// /dashboard/admin: the everyday work, one tab each; the tab is in the URL (?tab=) so a link or
// the back button returns to it.
import { Link, useSearchParams } from 'react-router'
import { Layout } from '../layout.tsx'
import { UsersTab } from '../dashboard/Users.tsx'
import { ApprovalsTab } from '../dashboard/Approvals.tsx'
import { CheckinsTab } from '../dashboard/Checkins.tsx'
import { TemplatesTab } from '../dashboard/Templates.tsx'
import { EncouragementTab } from '../dashboard/Encouragement.tsx'
import { ConversionRatesTab } from '../dashboard/ConversionRates.tsx'
import { AiUsersTab } from '../dashboard/AiUsers.tsx'

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
        <Tab />
      </section>
    </Layout>
  )
}
