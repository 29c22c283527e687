import { buildDatabase, catalogFacts, compareFacts, describePlan, diffPlan } from './lib/schemas.ts'
const migUrl = Deno.args[0] ?? 'postgresql://postgres:postgres@127.0.0.1:21421/postgres'
const t = Date.now()
const db = await buildDatabase({ kind: 'schemas' })
console.log('built in', Date.now() - t)
try {
  const [a, b] = await Promise.all([catalogFacts(migUrl), catalogFacts(db.url)])
  const d = compareFacts(a, b)
  console.log(d.join('\n'))
  console.log(d.length, 'catalog differences;', a.size, 'facts')
  if (Deno.env.get('PLAN')) {
    const p = await diffPlan(migUrl, db.url)
    console.log(describePlan(p).join('\n'))
    console.log(p.actions.length, 'plan actions')
  }
} finally {
  if (!Deno.env.get('KEEP')) await db.stop()
  else console.log('kept', db.url)
}
