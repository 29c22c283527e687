import { buildDatabase, catalogFacts, compareFacts, diffPlan, describePlan } from './lib/schemas.ts'
const [a, b] = await Promise.all([buildDatabase({ kind: 'migrations' }), buildDatabase({ kind: 'schemas' })])
try {
  const d = compareFacts(await catalogFacts(a.url), await catalogFacts(b.url))
  console.log(d.join('\n'), d.length, 'catalog diffs')
  console.log(describePlan(await diffPlan(a.url, b.url)).join('\n'), 'plan')
} finally { await a.stop(); await b.stop() }
