// What a client and a readiness check see while the database is out of reach: 503 with
// Retry-After (never 500), the health report's `degraded` as HTTP 503, and no local path in
// PostgREST's connection errors.
import { strict as assert } from 'node:assert'
import { fromDb, fromThrown } from '../functions/_shared/errors.ts'
import { proxyRest } from '../scripts/lib/proxy.ts'
import { withApi } from './_api_process.ts'
import { createUser, test } from './_helpers.ts'

/** A stand-in for the gateway while PostgREST restarts: every request answers `status` with `body`. */
async function withUpstream(status: number, body: string, fn: (url: string) => Promise<void>) {
  const server = Deno.serve({ hostname: '127.0.0.1', port: 0, onListen: () => {} }, () =>
    new Response(body, { status, headers: { 'content-type': 'application/json' } }))
  try {
    await fn(`http://127.0.0.1:${server.addr.port}`)
  } finally {
    await server.shutdown()
  }
}

test('outage: errors without a database code are 503 with Retry-After, never 500', () => {
  // postgrest-js: a failed fetch (code '', status 0); the gateway's own 503 body parsed as the error.
  for (const [error, status] of [
    [{ code: '', message: 'TypeError: error sending request for url' }, 0],
    [{ code: '', message: 'TypeError: something unforeseen' }, 0],
    [{ error: 'PostgREST is unavailable; try again shortly' } as { code?: string }, 503],
    [{ message: '<html>Bad Gateway</html>' }, 502],
  ] as const) {
    const e = fromDb(error, status)
    assert.equal(e.status, 503, JSON.stringify(error))
    assert.equal(e.retryAfterSeconds, 1)
  }
  // postgres.js thrown while the postmaster restarts.
  for (const code of ['CONNECTION_CLOSED', 'CONNECTION_DESTROYED', 'ECONNREFUSED', '57P01', '57P03', '08006']) {
    assert.equal(fromThrown(Object.assign(new Error('lost'), { code }))?.status, 503, code)
  }
  assert.equal(fromThrown(Object.assign(new Error('bad'), { code: '42P01' })), undefined)
  assert.equal(fromDb({ code: 'XX000', message: 'internal' }, 500).status, 500, 'a real fault stays 500')
})

test('outage: /api answers 503 and the degraded health report as 503 while PostgREST is unreachable', async () => {
  const [user, admin] = await Promise.all([createUser({ prefix: 'outage' }), createUser({ superAdmin: true })])
  await withUpstream(503, JSON.stringify({ error: 'PostgREST is unavailable; try again shortly' }), async (down) => {
    await withApi({ SUPABASE_URL: down, SUPABASE_REST_URL: `${down}/rest/v1` }, async (base) => {
      const write = await fetch(`${base}/api/journal`, {
        method: 'POST',
        headers: { authorization: `Bearer ${user.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ title: 't', content: 'c' }),
      })
      assert.equal(write.status, 503)
      assert.equal(write.headers.get('retry-after'), '1')
      assert.match((await write.json()).error, /unavailable/)

      const health = await fetch(`${base}/api/admin/health`, { headers: { authorization: `Bearer ${admin.token}` } })
      assert.equal(health.status, 503, 'a readiness check reading the status code sees the outage')
      const report = await health.json()
      assert.equal(report.status, 'degraded')
      assert.match(report.error, /unavailable/)
      assert.equal(report.database_latency_ms, null)
      assert.ok(health.headers.get('retry-after'))
    })
  })
})

test("outage: PostgREST's connection errors reach clients without the database's socket path", async () => {
  const leaked = {
    code: 'PGRST000',
    details: 'connection to server on socket "/work/main/.local/db/.s.PGSQL.54322" failed: No such file',
    hint: null,
    message: 'Database connection error. Retrying the connection.',
  }
  await withUpstream(503, JSON.stringify(leaked), async (url) => {
    const res = await proxyRest(new Request('http://gateway/rest/v1/profiles'), new URL(`${url}/profiles`))
    assert.equal(res.status, 503)
    const body = await res.json()
    assert.deepEqual(body, { ...leaked, details: null })
  })
  const other = { code: '42P01', details: 'kept', hint: null, message: 'relation does not exist' }
  await withUpstream(500, JSON.stringify(other), async (url) => {
    const res = await proxyRest(new Request('http://gateway/rest/v1/x'), new URL(`${url}/x`))
    assert.deepEqual(await res.json(), other, 'other errors pass unchanged')
  })
})
