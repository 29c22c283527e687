// Open energy: the labs area. Competitions (active, entry open, last scored, recompute now),
// templates with their golden specs and convergence, the optimizer, and flagged anomalies.
import { Layout } from '../layout.tsx'
import { Anomalies } from '../labs/Anomalies.tsx'
import { Competitions } from '../labs/Competitions.tsx'
import { Optimizer } from '../labs/Optimizer.tsx'
import { Templates } from '../labs/Templates.tsx'
import '../features/features.css'

export function OpenEnergy() {
  return (
    <Layout title="Open energy">
      <section aria-labelledby="competitions-heading">
        <h2 id="competitions-heading">Competitions</h2>
        <Competitions />
      </section>
      <section aria-labelledby="templates-heading">
        <h2 id="templates-heading">Templates and convergence</h2>
        <p className="muted">A template is robust after 50 independent confirmations within 5 % of its golden spec's prediction.</p>
        <Templates />
      </section>
      <section aria-labelledby="optimizer-heading">
        <h2 id="optimizer-heading">Optimizer</h2>
        <Optimizer />
      </section>
      <section aria-labelledby="anomalies-heading">
        <h2 id="anomalies-heading">Flagged anomalies</h2>
        <Anomalies />
      </section>
    </Layout>
  )
}
