// types/database.ts against the migrated database: the edge functions' client is typed by it
// (functions/_shared/database.ts), so a migration that changes a table or a function without
// `npm run gen:types` must fail here rather than leave `npm run check` checking stale types.
import { strict as assert } from 'node:assert'
import { ENUMS_FILE, enumsModule, generateTypes, TYPES_FILE } from '../scripts/lib/types.ts'
import { env, test } from './_helpers.ts'

/** The first line where two texts differ, with both versions; null when they are equal. */
function firstDifference(committed: string, generated: string): string | null {
  if (committed === generated) return null
  const a = committed.split('\n')
  const b = generated.split('\n')
  const i = a.findIndex((line, n) => line !== b[n])
  const at = i < 0 ? a.length : i
  return `line ${at + 1}:\n  types/database.ts: ${a[at] ?? '(end of file)'}\n  generated:         ${
    b[at] ?? '(end of file)'
  }`
}

test('types/database.ts is what the migrated database generates (else: npm run gen:types)', async () => {
  const generated = await generateTypes(env('SUPABASE_DB_URL'))
  const committed = await Deno.readTextFile(TYPES_FILE)
  const difference = firstDifference(committed, generated)
  assert.equal(
    difference,
    null,
    `types/database.ts is stale; run npm start, then npm run gen:types. First difference at ${difference}`,
  )

  assert.equal(
    await Deno.readTextFile(ENUMS_FILE),
    enumsModule(generated),
    'functions/_shared/database_enums.ts is stale; run npm run gen:types',
  )

  // The comparison sees a drift: a copy with one column's type changed differs.
  const drifted = committed.replace('"drops_balance": number', '"drops_balance": string')
  assert.notEqual(drifted, committed, 'the drift example must change the copy')
  assert.match(firstDifference(drifted, generated) ?? '', /"drops_balance": string/)
})
