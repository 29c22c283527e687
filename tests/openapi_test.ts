// GET /api/openapi.json describes every route the router serves, from the same zod schemas
// that validate requests; and the input rules every route shares (validation hook, JSON
// Content-Type, unstorable strings, cursors, body size).
import { strict as assert } from 'node:assert'
import createClient from 'openapi-fetch'
import { app } from '../functions/api/app.ts'
import { checkReply } from './_contract.ts'
import { api, API_URL, apiFetch, assertError, createUser, postEntry, test } from './_helpers.ts'

/** Method + OpenAPI path of every route the router really serves (not middleware). */
function servedRoutes(): string[] {
  const served = new Set<string>()
  for (const r of app.routes) {
    if (r.method === 'ALL' || r.path.endsWith('*') || r.path === '/api/openapi.json') continue
    served.add(`${r.method.toLowerCase()} ${r.path.replace(/:([^/]+)/g, '{$1}')}`)
  }
  return [...served].sort()
}

test('GET /api/openapi.json: an OpenAPI 3.1 document listing every served route', async () => {
  const res = await api('/api/openapi.json')
  assert.equal(res.status, 200)
  const doc = res.body
  assert.equal(doc.openapi, '3.1.0')
  const documented = Object.entries(doc.paths as Record<string, Record<string, unknown>>)
    .flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m} ${path}`)).sort()
  const served = servedRoutes()
  assert.ok(served.length >= 40, `the router serves the existing areas (${served.length})`)
  assert.deepEqual(served.filter((r) => !documented.includes(r)), [], 'every served route is documented')
  assert.deepEqual(documented.filter((r) => !served.includes(r)), [], 'nothing documented that is not served')
})

test('OpenAPI: each operation names its credential, parameters, body and {error} replies', async () => {
  const doc = (await api('/api/openapi.json')).body
  const schemes = Object.keys(doc.components.securitySchemes)
  for (const s of ['bearerAuth', 'cronSecret', 'cronBearer', 'stripeSignature', 'svixSignature']) {
    assert.ok(schemes.includes(s), s)
  }
  for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
    for (const [method, op] of Object.entries(ops)) {
      const where = `${method} ${path}`
      assert.ok(Array.isArray(op.security), `${where}: security listed (empty = public)`)
      assert.ok(op.summary, `${where}: summary`)
      const statuses = Object.keys(op.responses)
      assert.ok(statuses.some((s) => s.startsWith('2') || s === '302'), `${where}: a success reply`)
      assert.ok(statuses.includes('500'), `${where}: 500 documented`)
      for (const s of statuses.filter((s) => Number(s) >= 400)) {
        // {error}, or a schema that carries a required `error` string beside more (health's 503,
        // a 412 with the row as it is now).
        const ref = op.responses[s].content['application/json'].schema.$ref as string
        const schema = doc.components.schemas[ref.replace('#/components/schemas/', '')]
        assert.equal(schema?.properties?.error?.type, 'string', `${where} ${s}: ${ref} has error`)
        assert.ok(schema.required?.includes('error'), `${where} ${s}: error required`)
        if (ref !== '#/components/schemas/Error' && s !== '412') {
          assert.equal(`${where} ${s}`, 'get /api/admin/health 503')
        }
      }
      const pathParams = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1])
      const declared = (op.parameters ?? []).filter((p: any) => p.in === 'path').map((p: any) => p.name)
      assert.deepEqual(declared.sort(), pathParams.sort(), `${where}: path parameters`)
      if (op.security.length) assert.ok(statuses.includes('401'), `${where}: 401 documented`)
    }
  }
  const post = doc.paths['/api/journal'].post
  const body = post.requestBody.content['application/json'].schema
  const resolved = body.$ref ? doc.components.schemas[body.$ref.split('/').pop()] : body
  assert.ok(resolved.required.includes('title'), 'the body schema is the validating schema')
  assert.deepEqual(post.security, [{ bearerAuth: [] }])
  assert.deepEqual(doc.paths['/api/drops/cron/award-monthly-all'].post.security, [{ cronSecret: [] }])
  assert.deepEqual(doc.paths['/api/auth/verify'].post.security, [])
})

test('a JSON body without Content-Type: application/json is refused, never read as {}', async () => {
  const u = await createUser()
  const res = await api('/api/journal', {
    token: u.token,
    rawBody: JSON.stringify({ title: 'x' }),
    headers: { 'content-type': 'text/plain' },
  })
  assertError(res, 400, 'Content-Type')
  const none = await apiFetch('/api/user/profile', {
    method: 'PUT',
    headers: { authorization: `Bearer ${u.token}` },
    body: JSON.stringify({ full_name: 'Sneaky' }),
  })
  assert.equal(none.status, 400)
  assert.match((await none.json()).error, /Content-Type/)
  const profile = await api('/api/user/profile', { token: u.token })
  assert.notEqual(profile.body.full_name, 'Sneaky')
  // JSON sent to an upload route: the answer names the type it takes.
  assertError(
    await api('/api/workout-window/checkin', { token: u.token, body: { photo: 'x' } }),
    400,
    'multipart/form-data',
  )
})

test('NUL bytes, lone surrogates and deep nesting are 400 naming the field, nothing written', async () => {
  const u = await createUser()
  const cases: [string, string][] = [
    ['{"title":"a\\u0000b","content":"x"}', 'title'],
    ['{"title":"ok","content":"\\ud800"}', 'content'],
    ['{"title":"ok","tags":["fine","bad\\u0000"]}', 'tags.1'],
  ]
  for (const [raw, field] of cases) {
    assertError(await api('/api/journal', { token: u.token, rawBody: raw }), 400, field)
  }
  const deep = '{"preferences":' + '{"a":'.repeat(50_000) + '1' + '}'.repeat(50_000) + '}'
  assertError(await api('/api/user/profile', { method: 'PUT', token: u.token, rawBody: deep }), 400, 'nested')
  assertError(await api('/api/journal?q=a%00b', { token: u.token }), 400, 'q')
  assertError(
    await api('/api/goals', { token: u.token, body: { title: 'x', target_date: '0000-01-01' } }),
    400,
    'target_date',
  )
  const entries = await api('/api/journal', { token: u.token })
  assert.deepEqual(entries.body.entries, [])
})

test('cursors JavaScript accepts but Postgres refuses are 400 naming before', async () => {
  const u = await createUser()
  await postEntry(u, { title: 'one', content: 'x' })
  const b64 = (v: unknown) => btoa(JSON.stringify(v)).replace(/=+$/, '')
  for (
    const cursor of [['2020', 'abc'], ['0000-01-01T00:00:00Z', crypto.randomUUID()], [
      '+275760-09-13T00:00:00.000Z',
      crypto.randomUUID(),
    ], ['2020-02-30T00:00:00Z', 'x']]
  ) {
    assertError(await api(`/api/journal?before=${b64(cursor)}`, { token: u.token }), 400, 'before')
    assertError(await api(`/api/goals?before=${b64(cursor)}`, { token: u.token }), 400, 'before')
  }
})

test('a JSON body over 1 MB is 413 {error}; the route never runs', async () => {
  const u = await createUser()
  const big = JSON.stringify({ title: 'big', content: 'x'.repeat(1024 * 1024 + 10) })
  const res = await api('/api/journal', { token: u.token, rawBody: big })
  assertError(res, 413)
  assert.deepEqual((await api('/api/journal', { token: u.token })).body.entries, [])
})

test('unknown query parameters and fields are 400 naming them, on every module', async () => {
  const u = await createUser()
  assertError(await api('/api/goals?colour=red', { token: u.token }), 400, 'colour')
  assertError(
    await api('/api/notebooks', { token: u.token, body: { name: 'n', colour: 'red' } }),
    400,
    'colour',
  )
  assertError(await api('/api/organizations', { token: u.token, body: { name: 1 } }), 400, 'name')
  assertError(await api('/api/drops/transactions?type=gift', { token: u.token }), 400, 'type')
})

test("the gateway's /docs renders the document with Swagger UI served locally", async () => {
  const base = Deno.env.get('SUPABASE_URL')!
  const page = await fetch(`${base}/docs`)
  const html = await page.text()
  assert.equal(page.status, 200)
  assert.match(page.headers.get('content-type')!, /text\/html/)
  assert.match(html, /\/functions\/v1\/api\/openapi\.json/)
  assert.ok(!/https?:\/\//.test(html.replace(/<!doctype[^>]*>/i, '')), 'nothing loaded from another origin')
  for (const src of html.matchAll(/(?:src|href)="(\/docs\/[^"]+)"/g)) {
    const asset = await fetch(`${base}${src[1]}`)
    await asset.body?.cancel()
    assert.equal(asset.status, 200, src[1])
  }
  const missing = await fetch(`${base}/docs/../package.json`)
  await missing.body?.cancel()
  assert.notEqual(missing.status, 200)
})

test('the document names its server, <project URL>/functions/v1: a generated client and Try it out need no base URL', async () => {
  const doc = (await api('/api/openapi.json')).body
  assert.deepEqual(doc.servers.map((s: { url: string }) => s.url), [`${API_URL}/functions/v1`])
  // openapi-fetch, set up from the document alone: its server plus the documented path.
  type Paths = {
    '/api/user/profile': {
      get: {
        parameters: { header: { authorization: string } }
        responses: { 200: { content: { 'application/json': { id: string; email: string | null } } } }
      }
    }
  }
  const client = createClient<Paths>({ baseUrl: doc.servers[0].url })
  const u = await createUser()
  const { data, response } = await client.GET('/api/user/profile', {
    params: { header: { authorization: `Bearer ${u.token}` } },
  })
  assert.equal(response.status, 200)
  assert.equal(data?.id, u.id)
  assert.equal(data?.email, u.email)
  // Swagger UI's Try it out builds its URL the same way (server + path) for every operation.
  const served = await fetch(`${doc.servers[0].url}/api/openapi.json`)
  assert.equal(served.status, 200)
  assert.deepEqual((await served.json()).servers, doc.servers)
})

/** The names of every request header the document mentions: header parameters and the header
 *  credentials (apiKey schemes by name, http schemes as Authorization). */
function documentedRequestHeaders(doc: any): string[] {
  const names = new Set<string>(['content-type'])
  for (const scheme of Object.values(doc.components.securitySchemes) as any[]) {
    names.add(
      scheme.type === 'apiKey' && scheme.in === 'header' ? scheme.name.toLowerCase() : 'authorization',
    )
  }
  for (const ops of Object.values(doc.paths) as any[]) {
    for (const op of Object.values(ops) as any[]) {
      for (const p of op.parameters ?? []) if (p.in === 'header') names.add(p.name.toLowerCase())
    }
  }
  return [...names].sort()
}

function documentedResponseHeaders(doc: any): string[] {
  const names = new Set<string>()
  for (const ops of Object.values(doc.paths) as any[]) {
    for (const op of Object.values(ops) as any[]) {
      for (const r of Object.values(op.responses) as any[]) {
        for (const h of Object.keys(r.headers ?? {})) names.add(h.toLowerCase())
      }
    }
  }
  return [...names].sort()
}

test('CORS on /functions/v1: a preflight allows every request header the document names and exposes its reply headers', async () => {
  const doc = (await api('/api/openapi.json')).body
  const requestHeaders = documentedRequestHeaders(doc)
  assert.ok(requestHeaders.includes('idempotency-key'), 'Idempotency-Key is documented')
  const supabaseJs = ['authorization', 'apikey', 'x-client-info', 'content-type', 'x-region']
  const asked = [...new Set([...requestHeaders, ...supabaseJs])]
  for (
    const path of [
      '/api/tone-packs/00000000-0000-0000-0000-000000000000/purchase',
      '/api/email/send',
      '/health',
    ]
  ) {
    const res = await fetch(`${API_URL}/functions/v1${path}`, {
      method: 'OPTIONS',
      headers: {
        origin: 'http://localhost:3000',
        'access-control-request-method': 'POST',
        'access-control-request-headers': asked.join(','),
      },
    })
    await res.body?.cancel()
    assert.equal(res.status, 204, path)
    assert.equal(res.headers.get('access-control-allow-origin'), '*')
    const allowed = res.headers.get('access-control-allow-headers')!.split(',').map((h) =>
      h.trim().toLowerCase()
    )
    assert.deepEqual(asked.filter((h) => !allowed.includes(h)), [], `${path}: every header allowed`)
  }
  const responseHeaders = documentedResponseHeaders(doc)
  assert.ok(responseHeaders.includes('retry-after'), 'Retry-After is documented')
  // Every reply names them, so a browser lets the script read them.
  const u = await createUser()
  const reply = await api('/api/user/profile', { token: u.token })
  const exposed = reply.headers.get('access-control-expose-headers')!.split(',').map((h) =>
    h.trim().toLowerCase()
  )
  assert.deepEqual(
    responseHeaders.filter((h) => !exposed.includes(h)),
    [],
    'every documented reply header exposed',
  )
  assert.ok(exposed.includes('x-relay-error'), 'the header functions.invoke reads')
  // A function that does not exist: the browser still reads the 404 (and its preflight).
  const pre = await fetch(`${API_URL}/functions/v1/nope`, {
    method: 'OPTIONS',
    headers: {
      origin: 'http://localhost:3000',
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'authorization',
    },
  })
  await pre.body?.cancel()
  assert.equal(pre.status, 204)
  assert.equal(pre.headers.get('access-control-allow-origin'), '*')
  const missing = await fetch(`${API_URL}/functions/v1/nope`, {
    headers: { origin: 'http://localhost:3000' },
  })
  assert.equal(missing.status, 404)
  assert.equal(missing.headers.get('access-control-allow-origin'), '*')
  assert.match((await missing.json()).error, /No function named nope/)
})

test('OpenAPI: each error status has an example of its own; Idempotency-Key is a header parameter where accepted', async () => {
  const doc = (await api('/api/openapi.json')).body
  const examples = new Map<string, Set<string>>()
  for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
    for (const [method, op] of Object.entries(ops)) {
      for (const [status, r] of Object.entries(op.responses as Record<string, any>)) {
        if (Number(status) < 400) continue
        const example = r.content['application/json'].example
        assert.equal(typeof example?.error, 'string', `${method} ${path} ${status}: an example`)
        examples.set(status, (examples.get(status) ?? new Set()).add(example.error))
        if (status === '429' || status === '503') {
          assert.ok(r.headers?.['Retry-After'], `${method} ${path} ${status}: Retry-After documented`)
        }
      }
    }
  }
  const byStatus = Object.fromEntries([...examples].map(([s, set]) => [s, [...set]]))
  for (const [status, list] of Object.entries(byStatus)) {
    for (const [other, otherList] of Object.entries(byStatus)) {
      if (other !== status) {
        assert.ok(!list.some((e) => otherList.includes(e)), `${status} and ${other} share an example`)
      }
    }
  }
  assert.match(byStatus['400'][0], /^\w+: /, 'a 400 names the field')
  assert.doesNotMatch(byStatus['401'][0], /must not be empty/)
  assert.doesNotMatch(byStatus['500'][0], /must not be empty/)
  assert.doesNotMatch(byStatus['503'][0], /must not be empty/)
  // Idempotency-Key: declared on each route whose handler reads it, and nowhere else.
  const declaring = Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([path, ops]) =>
    Object.entries(ops).filter(([, op]) =>
      (op.parameters ?? []).some((p: any) => p.in === 'header' && p.name.toLowerCase() === 'idempotency-key')
    )
      .map(([method]) => `${method} ${path}`)
  ).sort()
  assert.deepEqual(declaring, ['post /api/email/send', 'post /api/tone-packs/{id}/purchase'])
  const param = doc.paths['/api/tone-packs/{id}/purchase'].post.parameters.find((p: any) => p.in === 'header')
  assert.equal(param.required, false)
  assert.equal(param.schema.type, 'string')
  assert.match(param.description, /replayed/)
})

test('OpenAPI: null is allowed exactly where a reply may be null (no component turned nullable, no $ref that refuses null)', async () => {
  const doc = (await api('/api/openapi.json')).body
  const nullable = Object.entries(doc.components.schemas as Record<string, any>)
    .filter(([, s]) => Array.isArray(s.type) && s.type.includes('null')).map(([name]) => name)
  assert.deepEqual(
    nullable,
    [],
    'a component is an object; where it may be null, the use says anyOf [$ref, null]',
  )
  const refusing: string[] = []
  const walk = (node: any, where: string) => {
    if (!node || typeof node !== 'object') return
    if (
      Array.isArray(node.allOf) && node.allOf.some((s: any) => s.$ref) &&
      node.allOf.some((s: any) => JSON.stringify(s.type ?? '').includes('null'))
    ) {
      refusing.push(where)
    }
    for (const [k, v] of Object.entries(node)) walk(v, `${where}/${k}`)
  }
  walk(doc, '')
  assert.deepEqual(refusing, [], 'allOf [$ref, {type: [object, null]}] refuses the null it means to allow')
  const myWindow =
    doc.paths['/api/workout-window/my-window'].get.responses['200'].content['application/json'].schema
  assert.deepEqual(myWindow.properties.location, {
    anyOf: [{ $ref: '#/components/schemas/WorkoutLocation' }, { type: 'null' }],
  })
})

test('the contract check every test runs: a reply off its documented status, type or schema fails the request', async () => {
  const base = `${API_URL}/functions/v1`
  const reply = (status: number, body: unknown, type = 'application/json') => ({
    status,
    headers: new Headers({ 'content-type': type }),
    text: typeof body === 'string' ? body : JSON.stringify(body),
  })
  const row = {
    id: 7,
    amount: 30,
    type: 'signup_bonus',
    description: null,
    item_id: null,
    item_type: null,
    reason: null,
    source: null,
    created_at: '2026-11-26T10:00:00+00:00',
  }
  await checkReply(
    base,
    'GET',
    '/api/drops/transactions?limit=5',
    reply(200, { transactions: [row], next_cursor: null }),
  )
  await assert.rejects(
    checkReply(
      base,
      'GET',
      '/api/drops/transactions',
      reply(200, { transactions: [{ ...row, id: '7' }], next_cursor: null }),
    ),
    /\/transactions\/0\/id/,
  )
  await assert.rejects(checkReply(base, 'GET', '/api/drops/balance', reply(200, { balance: '5' })), /balance/)
  await assert.rejects(
    checkReply(
      base,
      'GET',
      '/api/drops/transactions',
      reply(200, { transactions: [{ ...row, user_id: 'x' }], next_cursor: null }),
    ),
    /does not name: \/transactions\/0\/user_id/,
  )
  await assert.rejects(
    checkReply(base, 'GET', '/api/drops/balance', reply(418, { error: 'x' })),
    /not a documented status/,
  )
  await assert.rejects(checkReply(base, 'GET', '/api/drops/balance', reply(401, { message: 'x' })), /error/)
  await assert.rejects(
    checkReply(base, 'GET', '/api/drops/balance', reply(200, '<html></html>', 'text/html')),
    /Content-Type/,
  )
  await checkReply(base, 'GET', '/api/workout-window/my-window', reply(200, { window: null, location: null }))
  // A literal path segment wins over a parameter, as in the router.
  await assert.rejects(
    checkReply(base, 'GET', '/api/journal/stats', reply(200, { id: 'x' })),
    /GET \/api\/journal\/stats/,
  )
  // Paths no route serves are the router's 404, not checked here.
  await checkReply(base, 'GET', '/api/nope', reply(404, { error: 'No route' }))
})
