// The gateway (scripts/gateway.ts): it forwards only to its own parts, and it stops reading a
// body that passes its limit (issue 6, security findings 1 and 5).
import { strict as assert } from 'node:assert'
import { ANON_KEY, API_URL, createUser, test } from './_helpers.ts'

/** A server that only counts the requests that reach it: nothing may. */
function bystander() {
  let hits = 0
  const server = Deno.serve({ hostname: '127.0.0.1', port: 0, onListen: () => {} }, () => {
    hits++
    return new Response('reached the bystander')
  })
  return { port: server.addr.port, hits: () => hits, stop: () => server.shutdown() }
}

async function get(path: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${API_URL}${path}`, { headers: { apikey: ANON_KEY, ...headers } })
  const text = await res.text()
  let body: any = text
  try {
    body = JSON.parse(text)
  } catch { /* not JSON */ }
  return { status: res.status, body }
}

test('gateway: /rest/v1 forwards to PostgREST only; look-alike paths are 404, never another host', async () => {
  const other = bystander()
  try {
    const attempts = [
      `/rest/v1@127.0.0.1:${other.port}/anything`,
      `/rest/v1@127.0.0.1:${other.port}`,
      '/rest/v1foo',
      '/rest/v1:99999/',
      `/rest/v1.127.0.0.1:${other.port}/x`,
      `/functions/v1/api@127.0.0.1:${other.port}/x`,
      `/functions/v1/..%2F..%2Fscripts/x`,
      `/storage/v1@127.0.0.1:${other.port}/x`,
      `/auth/v1@127.0.0.1:${other.port}/x`,
    ]
    for (const path of attempts) {
      const res = await get(path)
      assert.equal(res.status, 404, `${path}: ${JSON.stringify(res.body)}`)
      assert.equal(typeof res.body?.error, 'string', path)
    }
    // Paths under /rest/v1/ that look like a host stay paths on PostgREST.
    for (const path of [`/rest/v1//127.0.0.1:${other.port}/x`, `/rest/v1/@127.0.0.1:${other.port}/x`]) {
      const res = await get(path)
      assert.notEqual(res.body, 'reached the bystander', path)
    }
    assert.equal(other.hits(), 0, 'a request reached another host through the gateway')
  } finally {
    await other.stop()
  }
  // The real thing still works, with and without the trailing path.
  const user = await createUser()
  const ok = await get(`/rest/v1/profiles?select=id&id=eq.${user.id}`, { authorization: `Bearer ${user.token}` })
  assert.equal(ok.status, 200, JSON.stringify(ok.body))
  assert.deepEqual(ok.body, [{ id: user.id }])
  const root = await get('/rest/v1/')
  assert.equal(root.status, 200)
  assert.equal(typeof (root.body?.swagger ?? root.body?.openapi), 'string')
})
