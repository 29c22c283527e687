// supabase/schemas (the current schema, one file per area) against supabase/migrations (what
// deploys): both build throw-away databases, which must not differ, so a schema edited without
// its migration, or a migration without its schema change, fails here. Two comparisons: the
// plan of pg-delta (the diff `npm run db:diff` writes) and the catalog itself. Rows are never
// compared: what lives in migrations only is listed in scripts/lib/schemas.ts (MIGRATIONS_ONLY).
import { strict as assert } from 'node:assert'
import postgres from 'postgres'
import {
  buildDatabase,
  type BuiltDatabase,
  catalogFacts,
  compareFacts,
  definitionProblems,
  describePlan,
  diffPlan,
  schemaFiles,
  SCHEMAS_DIR,
} from '../scripts/lib/schemas.ts'

/** A copy of supabase/schemas with `edits` made ([file, text, replacement]), in a temp folder. */
async function driftedCopy(edits: [string, string, string][]): Promise<{ dir: string; files: string[] }> {
  const texts = new Map<string, string>()
  for (const file of schemaFiles()) {
    const name = file.slice(SCHEMAS_DIR.length + 1)
    let text = await Deno.readTextFile(file)
    for (const [target, from, to] of edits) {
      if (target !== name) continue
      assert.ok(
        text.includes(from),
        `${name} no longer contains ${JSON.stringify(from)}: choose another drift for this test`,
      )
      text = text.replace(from, to)
    }
    texts.set(name, text)
  }
  const dir = await Deno.makeTempDir({ prefix: 'journal-drifted-schemas-' })
  await Deno.chmod(dir, 0o755)
  for (const [name, text] of texts) {
    // An area split into a folder (supabase/schemas/workout/...) keeps its folder in the copy.
    await Deno.mkdir(`${dir}/${name}`.replace(/\/[^/]+$/, ''), { recursive: true })
    await Deno.writeTextFile(`${dir}/${name}`, text)
  }
  return { dir, files: [...texts.keys()].map((name) => `${dir}/${name}`) }
}

const firstLine = (difference: string) => difference.split('\n')[0]

// The drift: one function body and one policy changed in the schemas, no migration written.
const DRIFT: [string, string, string][] = [
  [
    'drops_ledger.sql',
    'set drops_balance = p.drops_balance + d.total',
    'set drops_balance = p.drops_balance + 2 * d.total',
  ],
  [
    'goals.sql',
    'for delete to authenticated using (user_id = (select auth.uid()));',
    "for delete to authenticated using (user_id = (select auth.uid()) and status <> 'done');",
  ],
]

Deno.test({
  name: 'schemas: supabase/schemas and supabase/migrations build the same database',
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async (t) => {
    const drifted = await driftedCopy(DRIFT)
    // Three clusters at once: from the migrations, from the schemas, from the drifted copy.
    const built = await Promise.allSettled([
      buildDatabase({ kind: 'migrations' }),
      buildDatabase({ kind: 'schemas' }),
      buildDatabase({ kind: 'schemas', files: drifted.files }, 'drifted-schemas'),
    ])
    const [migrated, declared, driftedDb] = built.map((b) =>
      b.status === 'fulfilled' ? b.value : undefined
    ) as BuiltDatabase[]
    try {
      for (const b of built) if (b.status === 'rejected') throw b.reason
      // The drift steps look only at what their drift adds, so that a real difference fails the
      // first step alone.
      const alreadyDifferent = new Set(
        compareFacts(await catalogFacts(migrated.url), await catalogFacts(declared.url)).map(firstLine),
      )
      const added = (differences: string[]) =>
        differences.map(firstLine).filter((d) => !alreadyDifferent.has(d))

      await t.step('no difference: pg-delta plans nothing and every catalog fact is equal', async () => {
        const [plan, migratedFacts, declaredFacts] = await Promise.all([
          diffPlan(migrated.url, declared.url),
          catalogFacts(migrated.url),
          catalogFacts(declared.url),
        ])
        assert.deepEqual(
          describePlan(plan),
          [],
          'the schemas differ from the migrations: `npm run db:diff -- <name>` writes the migration',
        )
        assert.deepEqual(compareFacts(migratedFacts, declaredFacts), [])
        assert.ok(
          migratedFacts.size > 2000,
          `only ${migratedFacts.size} catalog facts: is the comparison reading the right database?`,
        )
      })

      await t.step(
        'each function (each signature), table, view, policy and trigger is defined exactly once in supabase/schemas',
        async () => {
          assert.deepEqual(await definitionProblems(migrated.url), [])
        },
      )

      await t.step(
        'a drift is caught: a schema whose function body and policy changed, with no migration',
        async () => {
          const [plan, migratedFacts, driftedFacts] = await Promise.all([
            diffPlan(migrated.url, driftedDb.url),
            catalogFacts(migrated.url),
            catalogFacts(driftedDb.url),
          ])
          const planned = describePlan(plan).join('\n')
          assert.match(planned, /CREATE OR REPLACE FUNCTION private\.apply_drops_deltas\(\)/)
          assert.match(planned, /CREATE POLICY "goals: owners delete" ON "public"\."goals"/)
          assert.deepEqual(added(compareFacts(migratedFacts, driftedFacts)), [
            'function private.apply_drops_deltas(): differs',
            'policy goals.goals: owners delete: differs',
          ])
        },
      )

      await t.step('a drift is caught: a migration whose change the schemas lack', async () => {
        const sql = postgres(migrated.url, { max: 1, onnotice: () => {} })
        try {
          await sql.unsafe('alter table public.goals add column priority integer')
        } finally {
          await sql.end()
        }
        const plan = await diffPlan(migrated.url, declared.url)
        assert.match(describePlan(plan).join('\n'), /ALTER TABLE "public"\."goals" DROP COLUMN "priority"/)
        const differences = compareFacts(await catalogFacts(migrated.url), await catalogFacts(declared.url))
        assert.deepEqual(added(differences), ['column goals.priority: only in the migrations'])
      })
    } finally {
      await Promise.all([migrated?.stop(), declared?.stop(), driftedDb?.stop()])
      await Deno.remove(drifted.dir, { recursive: true }).catch(() => {})
    }
  },
})
