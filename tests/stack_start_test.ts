// What `npm start` prints and how it finds, and `npm run stop` stops, a running stack.
import { strict as assert } from 'node:assert'
import { BIN } from '../scripts/lib/proc.ts'
import type { Stack } from '../scripts/lib/stack.ts'
import { demoTokens, seedDemoEmails, statusText } from '../scripts/lib/status.ts'
import { stopRecordedStack } from '../scripts/lib/stop.ts'
import { alive, recordFile, runningStack, sleep } from '../scripts/lib/supervise.ts'
import {
  ANON_KEY,
  api,
  API_URL,
  createUser,
  env,
  JWT_SECRET,
  SERVICE_ROLE_KEY,
  sql,
  test,
} from './_helpers.ts'

test("npm start prints tokens for the seed's demo users only, not for every user in the database", async () => {
  assert.deepEqual((await seedDemoEmails()).sort(), [
    'admin@example.com',
    'alice@example.com',
    'bob@example.com',
  ])
  await createUser() // the database holds many more users than the seed's
  const [{ n }] = await sql`select count(*)::int as n from auth.users`
  assert.ok(n > 3)
  const tokens = await demoTokens(sql, JWT_SECRET)
  assert.deepEqual(tokens.map((t) => [t.email, t.role]), [
    ['admin@example.com', 'super_admin'],
    ['alice@example.com', 'user'],
    ['bob@example.com', 'user'],
  ])
  for (const t of tokens) {
    const res = await api('/api/auth/verify', { body: { token: t.token } })
    assert.equal(res.body.user?.email, t.email)
  }

  const cronSecrets = {
    DROPS_CRON_SECRET: env('DROPS_CRON_SECRET'),
    CHAT_CRON_SECRET: env('CHAT_CRON_SECRET'),
  }
  const stack = {
    apiUrl: API_URL,
    dbUrl: env('SUPABASE_DB_URL'),
    anonKey: ANON_KEY,
    serviceRoleKey: SERVICE_ROLE_KEY,
    jwtSecret: JWT_SECRET,
    cronSecrets,
    inboxUrl: env('INBOX_URL'),
  } as unknown as Stack
  const text = statusText(stack, tokens, '/somewhere/logs/')
  for (
    const v of [
      API_URL,
      `${API_URL}/auth/v1`,
      env('INBOX_URL'),
      env('SUPABASE_DB_URL'),
      ANON_KEY,
      SERVICE_ROLE_KEY,
      JWT_SECRET,
      ...Object.values(cronSecrets),
      ...tokens.map((t) => t.token),
    ]
  ) {
    assert.ok(text.includes(v), `npm start's output lacks ${v}`)
  }
  for (
    const label of ['API URL', 'DB URL', 'JWT secret', 'anon key', 'service_role key', 'DROPS_CRON_SECRET']
  ) {
    assert.match(text, new RegExp(`^  ${label} +\\S`, 'm'))
  }
  assert.equal(
    text.match(/eyJ[\w-]+\.[\w-]+\.[\w-]+/g)!.length,
    2 + tokens.length,
    'the keys and one token per demo user',
  )
})

test('a running stack is found by its record; npm run stop ends it and what a dead start left behind', async () => {
  const dir = await Deno.makeTempDir({ prefix: 'journal-stop-' })
  // A part left behind by a start whose supervisor died: a Deno process like the gateway.
  const leftover = new Deno.Command(`${BIN}/deno`, {
    args: ['eval', 'setTimeout(() => {}, 60000) // gateway'],
    stdout: 'null',
    stderr: 'null',
  }).spawn()
  try {
    const record = (supervisor: number) =>
      Deno.writeTextFile(
        recordFile(dir),
        JSON.stringify({
          supervisor,
          parts: { 'the gateway': leftover.pid },
          clusterDir: `${dir}/db`,
          apiUrl: 'http://127.0.0.1:1',
          dbUrl: 'postgresql://x',
        }),
      )
    await record(Deno.pid) // this test process is a live Deno process: "already running"
    assert.equal((await runningStack(dir))?.supervisor, Deno.pid)
    const dead = new Deno.Command('true').spawn()
    await dead.status
    await record(dead.pid) // the supervisor is gone: not running, but its part is
    assert.equal(await runningStack(dir), null)
    await sleep(300) // the leftover is up
    const stopped = await stopRecordedStack(dir)
    assert.deepEqual(stopped, [`the gateway (pid ${leftover.pid})`])
    await leftover.status
    assert.ok(!alive(leftover.pid))
    assert.equal(
      await Deno.stat(recordFile(dir)).then(() => true, () => false),
      false,
      'the record is removed',
    )
    assert.deepEqual(await stopRecordedStack(dir), [], 'nothing to stop the second time')
  } finally {
    try {
      leftover.kill('SIGKILL')
    } catch { /* stopped */ }
    await Deno.remove(dir, { recursive: true })
  }
})
