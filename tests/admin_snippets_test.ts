// The SQL-dashboard snippets in sql/admin/ run as written (inside a rolled-back transaction).
import { strict as assert } from 'node:assert'
import { sql, test } from './_helpers.ts'

const snippet = (name: string) => Deno.readTextFile(new URL(`../sql/admin/${name}`, import.meta.url))

/** Runs a snippet as the dashboard would (postgres, no API claims), then rolls it back. */
async function runRolledBack<T>(text: string, check: (rows: any[], tx: any) => Promise<T>) {
  const rollback = new Error('rollback')
  let result: T | undefined
  await sql.begin(async (tx) => {
    result = await check(await tx.unsafe(text), tx)
    throw rollback
  }).catch((e) => {
    if (e !== rollback) throw e
  })
  return result as T
}

test('every sql/admin snippet is covered here', async () => {
  const names = [...Deno.readDirSync(new URL('../sql/admin/', import.meta.url))].map((e) => e.name).sort()
  assert.deepEqual(names, ['adjust_drops.sql', 'recompute_balance.sql'])
})

test('adjust_drops.sql grants 25 drops to the demo user with a reason, through the ledger', async () => {
  const [before] =
    await sql`select p.drops_balance from auth.users u join public.profiles p using (id) where u.email = 'alice@example.com'`
  await runRolledBack(await snippet('adjust_drops.sql'), async (results) => {
    // Two statements: the adjustment, then the new balance.
    const [adjusted, balance] = results
    assert.equal(adjusted.length, 1)
    assert.equal(adjusted[0].amount, 25)
    assert.match(adjusted[0].reason, /Support/)
    assert.equal(balance[0].new_balance, before.drops_balance + 25)
    assert.equal(balance[0].ledger_sum, balance[0].new_balance)
  })
  const [after] =
    await sql`select p.drops_balance from auth.users u join public.profiles p using (id) where u.email = 'alice@example.com'`
  assert.equal(after.drops_balance, before.drops_balance, 'rolled back')
})

test('recompute_balance.sql re-derives a balance that drifted from its ledger', async () => {
  await runRolledBack(await snippet('recompute_balance.sql'), async (rows, tx) => {
    assert.equal(rows.length, 1)
    assert.equal(rows[0].stored_before, rows[0].recomputed)
    // Make it drift (as only a superuser bypassing the guard could), then recompute again.
    await tx`select set_config('app.recomputing_balance', 'on', true)`
    await tx`update public.profiles set drops_balance = drops_balance + 7 where id = (select id from auth.users where email = 'alice@example.com')`
    await tx`select set_config('app.recomputing_balance', 'off', true)`
    const [again] = await tx.unsafe(await snippet('recompute_balance.sql'))
    assert.equal(again.stored_before, again.recomputed + 7)
    const [fixed] =
      await tx`select drops_balance from public.profiles where id = (select id from auth.users where email = 'alice@example.com')`
    assert.equal(fixed.drops_balance, again.recomputed)
  })
})
