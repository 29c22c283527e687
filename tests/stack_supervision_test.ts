// The stack supervises its parts ("When a part fails"): a throw-away stack of its
// own (TEST_PORT_BASE + 200), whose PostgREST and then Postgres are killed. Meanwhile the API
// answers 503 {error} and the health page `degraded` (the super admin known from the token's
// claim); the supervisor reports and restarts the part, and everything recovers by itself.
// Also: a start interrupted halfway, and a stop, leave no process behind.
import { strict as assert } from 'node:assert'
import postgres from 'postgres'
import { portInUse, run } from '../scripts/lib/proc.ts'
import { type Stack, startStack } from '../scripts/lib/stack.ts'
import { alive, postmasterPid, sleep } from '../scripts/lib/supervise.ts'
import { mintUserToken } from '../scripts/lib/tokens.ts'
import { insertAuthUser, test } from './_helpers.ts'

const base = Number(Deno.env.get('TEST_PORT_BASE') ?? 25321) + 200
const ports = { apiPort: base, dbPort: base + 1, restPort: base + 9 }

function assertNothingLeft(dataDir: string, pids: number[] = []) {
  const pg = postmasterPid(`${dataDir}/db`)
  assert.ok(pg === null || !alive(pg), `Postgres ${pg} is still running`)
  for (const pid of pids) assert.ok(!alive(pid), `process ${pid} is still running`)
  for (const [what, port] of Object.entries(ports)) {
    assert.ok(!portInUse(port), `${what} ${port} is still taken`)
  }
}

async function call(stack: Stack, path: string, token: string) {
  const res = await fetch(`${stack.apiUrl}/functions/v1${path}`, {
    headers: { authorization: `Bearer ${token}` },
  })
  const text = await res.text()
  try {
    return { status: res.status, body: JSON.parse(text) }
  } catch {
    return { status: res.status, body: text as unknown }
  }
}

async function until(what: string, probe: () => boolean | Promise<boolean>, ms = 30_000) {
  const end = Date.now() + ms
  while (Date.now() < end) {
    if (await Promise.resolve().then(probe).catch(() => false)) return
    await sleep(200)
  }
  throw new Error(`${what} did not happen within ${ms / 1000}s`)
}

test('supervision: killed PostgREST, Postgres and gateway give 503s and degraded health, recover by themselves; one failure too many stops all', async () => {
  const dataDir = await Deno.makeTempDir({ prefix: 'journal-supervise-' })
  await Deno.chmod(dataDir, 0o755)
  try {
    // A start interrupted once the database is migrated stops what it started.
    const abort = new AbortController()
    await assert.rejects(
      startStack({
        ...ports,
        dataDir,
        throwaway: true,
        signal: abort.signal,
        log: (l) => l.startsWith('applied') && abort.abort(),
      }),
      /interrupted/,
    )
    assertNothingLeft(dataDir)

    const logs: string[] = []
    let gaveUp = ''
    // 3 s before each restart: the window in which the dead part is observed from outside.
    // One restart per part: the second failure of a part stops the whole stack.
    const stack = await startStack({
      ...ports,
      dataDir,
      throwaway: true,
      restartDelayMs: 3000,
      maxRestarts: 1,
      log: (l) => logs.push(l),
      onGiveUp: (m) => gaveUp = m,
    })
    let partPids: number[] = []
    try {
      const sql = postgres(stack.dbUrl, { max: 1, onnotice: () => {} })
      const run = crypto.randomUUID().slice(0, 8)
      for (const who of ['admin', 'user']) await insertAuthUser(sql, { email: `sup-${who}-${run}@test.local` })
      await sql`update public.profiles set role = 'super_admin'
                where id = (select id from auth.users where email = ${`sup-admin-${run}@test.local`})`
      const admin =
        (await mintUserToken(sql, `sup-admin-${run}@test.local`, { secret: stack.jwtSecret })).token
      const user = (await mintUserToken(sql, `sup-user-${run}@test.local`, { secret: stack.jwtSecret })).token
      await sql.end()
      assert.equal((await call(stack, '/api/user/profile', user)).status, 200)

      for (const part of ['PostgREST', 'Postgres'] as const) {
        const pid = stack.pids()[part]!
        Deno.kill(pid, 'SIGKILL')
        await until(`${part} ${pid} exiting`, () => !alive(pid), 10_000)

        const health = await call(stack, '/api/admin/health', admin)
        assert.equal(health.status, 503, `${part} down: ${JSON.stringify(health.body)}`)
        assert.match((health.body as any).error, /unavailable/)
        assert.equal((health.body as any).status, 'degraded')
        assert.equal((health.body as any).database_latency_ms, null)
        const profile = await call(stack, '/api/user/profile', user)
        assert.equal(profile.status, 503, `${part} down: ${JSON.stringify(profile.body)}`)
        assert.equal(typeof (profile.body as any).error, 'string')
        // A non-admin is still refused, even while the database cannot be asked.
        assert.equal((await call(stack, '/api/admin/health', user)).status, 403)

        await until(
          `${part} coming back`,
          async () => (await call(stack, '/api/user/profile', user)).status === 200,
        )
        assert.ok(
          logs.some((l) => l.startsWith(`${part} stopped unexpectedly`) && l.includes('Last lines of')),
          logs.join('\n'),
        )
        await until(
          `the supervisor saying ${part} is back`,
          () => logs.includes(`${part} is running again`),
          5000,
        )
          .catch((e) => assert.fail(`${e.message}\n${logs.join('\n')}`))
        const healthy = await call(stack, '/api/admin/health', admin)
        assert.equal((healthy.body as any).status, 'ok')
      }

      // The gateway: restarted like the others.
      const gateway = stack.pids()['the gateway']!
      Deno.kill(gateway, 'SIGKILL')
      await until(
        'the gateway coming back',
        async () => (await call(stack, '/api/user/profile', user)).status === 200,
      )
      assert.ok(
        logs.some((l) => l.startsWith('the gateway stopped unexpectedly (killed by SIGKILL)')),
        logs.join('\n'),
      )

      // A part that fails once more than allowed stops everything, with a message.
      partPids = Object.values(stack.pids())
      Deno.kill(stack.pids().PostgREST!, 'SIGKILL')
      await until('the stack giving up', () => gaveUp !== '', 15_000)
      assert.match(gaveUp, /PostgREST failed 2 times; stopping the whole stack/)
      assertNothingLeft(dataDir, partPids)
    } finally {
      await stack.stop()
    }
    assertNothingLeft(dataDir, partPids)
  } finally {
    await run('rm', ['-rf', dataDir]).catch(() => {})
  }
})
