// Starting the stack twice: the second start reuses the database and applies nothing.
import { strict as assert } from 'node:assert'
import postgres from 'postgres'
import { startStack } from '../scripts/lib/stack.ts'
import { run } from '../scripts/lib/proc.ts'
import { insertAuthUser, test } from './_helpers.ts'

test('a second start applies no migration and keeps the data', async () => {
  const base = Number(Deno.env.get('TEST_PORT_BASE') ?? 25321) + 50
  const dataDir = await Deno.makeTempDir({ prefix: 'journal-restart-' })
  await Deno.chmod(dataDir, 0o755)
  const opts = { dataDir, apiPort: base, dbPort: base + 1, restPort: base + 9, throwaway: true }
  try {
    const logs1: string[] = []
    const first = await startStack({ ...opts, log: (s) => logs1.push(s) })
    assert.ok(first.appliedMigrations.length >= 5, logs1.join('\n'))
    const sql = postgres(first.dbUrl, { max: 1, onnotice: () => {} })
    await insertAuthUser(sql, { email: 'restart-marker@test.local' })
    await sql.end()
    await first.stop()

    const logs2: string[] = []
    const second = await startStack({ ...opts, log: (s) => logs2.push(s) })
    try {
      assert.deepEqual(second.appliedMigrations, [])
      assert.ok(logs2.some((l) => l.startsWith('applied 0 migrations')), logs2.join('\n'))
      assert.ok(logs2.some((l) => l.startsWith('reusing the database')), logs2.join('\n'))
      assert.ok(!logs2.some((l) => l.includes('seeded')), 'the seed runs only on a new database')
      const sql2 = postgres(second.dbUrl, { max: 1, onnotice: () => {} })
      const [row] = await sql2`select p.drops_balance from auth.users u join public.profiles p using (id)
                               where u.email = 'restart-marker@test.local'`
      await sql2.end()
      assert.equal(row.drops_balance, 50)
      const health = await fetch(`${second.apiUrl}/functions/v1/health`)
      assert.equal((await health.json()).status, 'ok')
    } finally {
      await second.stop()
    }
  } finally {
    await run('rm', ['-rf', dataDir]).catch(() => {})
  }
})
