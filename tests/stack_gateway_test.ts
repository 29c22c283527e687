// The gateway (scripts/gateway.ts): it forwards only to its own parts, and it stops reading a
// body that passes its limit.
import { strict as assert } from 'node:assert'
import { ANON_KEY, API_URL, asStorage, createUser, sql, test } from './_helpers.ts'

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
  const ok = await get(`/rest/v1/profiles?select=id&id=eq.${user.id}`, {
    authorization: `Bearer ${user.token}`,
  })
  assert.equal(ok.status, 200, JSON.stringify(ok.body))
  assert.deepEqual(ok.body, [{ id: user.id }])
  const root = await get('/rest/v1/')
  assert.equal(root.status, 200)
  assert.equal(typeof (root.body?.swagger ?? root.body?.openapi), 'string')
})

/**
 * Sends a chunked body of up to `max` bytes over a raw connection, stopping as soon as the
 * reply starts; returns the reply's status line and body and how much was sent by then. A
 * server that reads the whole body first answers only after all of it.
 */
async function sendChunked(path: string, headers: Record<string, string>, max = 48 * 1024 * 1024) {
  const url = new URL(API_URL)
  const conn = await Deno.connect({ hostname: url.hostname, port: Number(url.port) })
  const enc = new TextEncoder()
  const head =
    `POST ${path} HTTP/1.1\r\nhost: ${url.host}\r\ntransfer-encoding: chunked\r\nconnection: close\r\n` +
    Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('') + '\r\n'
  let answered = false
  let sent = 0
  const reply = (async () => {
    const chunks: Uint8Array[] = []
    const buf = new Uint8Array(65536)
    let text = ''
    for (;;) {
      const n = await conn.read(buf).catch(() => null)
      if (n === null) break
      answered = true
      chunks.push(buf.slice(0, n))
      text = new TextDecoder().decode(await new Blob(chunks as BlobPart[]).bytes())
      // Done once the head and a Content-Length body are in (the server may keep reading).
      const [head, body] = [text.slice(0, text.indexOf('\r\n\r\n')), text.slice(text.indexOf('\r\n\r\n') + 4)]
      const length = head.match(/content-length: (\d+)/i)?.[1]
      if (text.includes('\r\n\r\n') && length !== undefined && body.length >= Number(length)) break
      if (/transfer-encoding: chunked/i.test(head) && body.endsWith('0\r\n\r\n')) break
    }
    return text
  })()
  const piece = new Uint8Array(64 * 1024).fill(0x20) // spaces: valid JSON whitespace, valid text
  const chunk = new Uint8Array([
    ...enc.encode(`${piece.length.toString(16)}\r\n`),
    ...piece,
    ...enc.encode('\r\n'),
  ])
  const writing = (async () => {
    await conn.write(enc.encode(head))
    while (!answered && sent < max) {
      await conn.write(chunk)
      sent += piece.length
      // Let the reader run now and then: a server that drains what it no longer reads can take
      // the writes as fast as they come, and the reply must still be seen when it arrives.
      if (sent % (1024 * 1024) === 0) await new Promise((r) => setTimeout(r, 0))
    }
    if (!answered) await conn.write(enc.encode('0\r\n\r\n'))
  })().catch(() => {/* the server closed the connection: it stopped reading */})
  // A server that stops reading may leave our write waiting: the reply decides, then we close.
  let timer: ReturnType<typeof setTimeout> | undefined
  const text = await Promise.race([
    reply,
    new Promise<string>((r) => timer = setTimeout(() => r(''), 30_000)),
  ])
  clearTimeout(timer)
  try {
    conn.close()
  } catch { /* closed */ }
  await writing
  const status = Number(text.match(/^HTTP\/1\.1 (\d{3})/)?.[1] ?? 0)
  return { status, text, sent, max }
}

test('gateway: a chunked body past its limit is refused with 413 {error} before it is all sent', async () => {
  const user = await createUser()
  const bucket = `gateway-limit-${crypto.randomUUID().slice(0, 8)}`
  await sql`insert into storage.buckets (id, name, public, file_size_limit) values (${bucket}, ${bucket}, false, 1024)`
  try {
    const auth = { authorization: `Bearer ${user.token}`, apikey: ANON_KEY }
    const cases: [string, string, Record<string, string>][] = [
      ['PostgREST (1 MB)', '/rest/v1/rpc/is_super_admin', { ...auth, 'content-type': 'application/json' }],
      ['an endpoint without login (1 MB)', '/functions/v1/api/auth/verify', {
        'content-type': 'application/json',
      }],
      ['an upload to a 1 KB bucket', `/storage/v1/object/${bucket}/${user.id}/big.txt`, {
        ...auth,
        'content-type': 'text/plain',
      }],
      ['a storage list (1 MB JSON)', `/storage/v1/object/list/${bucket}`, {
        ...auth,
        'content-type': 'application/json',
      }],
    ]
    for (const [what, path, headers] of cases) {
      const res = await sendChunked(path, headers)
      assert.equal(res.status, 413, `${what}: ${res.text.slice(0, 300)}`)
      assert.match(res.text, /"error":"[^"]+"/, what)
      // It answered after about its limit, not after reading everything (48 MB).
      assert.ok(res.sent < res.max / 2, `${what}: ${res.sent} bytes were sent before the answer`)
    }
    const [{ n }] = await sql`select count(*)::int as n from storage.objects where bucket_id = ${bucket}`
    assert.equal(n, 0)
  } finally {
    await asStorage(sql, (tx) => tx`delete from storage.buckets where id = ${bucket}`)
  }
})

test('gateway: a declared Content-Length past the limit is refused without reading', async () => {
  const res = await fetch(`${API_URL}/rest/v1/rpc/is_super_admin`, {
    method: 'POST',
    headers: { apikey: ANON_KEY, 'content-type': 'application/json' },
    body: ' '.repeat(1024 * 1024 + 1),
  })
  assert.equal(res.status, 413)
  assert.match((await res.json()).error, /larger than 1 MB/)
  // At the limit it still goes through (PostgREST answers; whitespace is an empty JSON body).
  const fits = await fetch(`${API_URL}/rest/v1/rpc/is_super_admin`, {
    method: 'POST',
    headers: { apikey: ANON_KEY, 'content-type': 'application/json' },
    body: '{}' + ' '.repeat(1024 * 1024 - 2),
  })
  await fits.body?.cancel()
  assert.notEqual(fits.status, 413)
})

test('gateway: a /rest/v1 request PostgREST cannot decode as UTF-8 is 400 {error}, never 500', async () => {
  const user = await createUser()
  const auth = { apikey: ANON_KEY, authorization: `Bearer ${user.token}` }
  const send = async (
    path: string,
    init: { method?: string; headers?: Record<string, string>; body?: BodyInit } = {},
  ) => {
    const res = await fetch(`${API_URL}${path}`, {
      method: init.method ?? 'GET',
      headers: { ...auth, ...init.headers },
      body: init.body,
    })
    const text = await res.text()
    let body: any = text
    try {
      body = JSON.parse(text)
    } catch { /* not JSON */ }
    return { status: res.status, body }
  }
  const refused: [string, Parameters<typeof send>][] = [
    ['a UTF-8-encoded surrogate in a filter', ['/rest/v1/profiles?id=eq.%ED%A0%80']],
    ['a lone 0xFF byte in a filter', ['/rest/v1/profiles?full_name=eq.%FF']],
    ['an overlong encoding', ['/rest/v1/profiles?full_name=eq.%C0%AF']],
    ['a truncated sequence', ['/rest/v1/profiles?full_name=eq.%E2%82']],
    ['0xFF in select', ['/rest/v1/profiles?select=%FF']],
    ['0xFF in a parameter name', ['/rest/v1/profiles?%FF=eq.1']],
    ['0xFF inside or=()', ['/rest/v1/profiles?or=(full_name.eq.%FF)']],
    ['0xFF in order', ['/rest/v1/profiles?order=%FF']],
    ['0xFF in the path', ['/rest/v1/profiles%FF']],
    ['0xFF in an rpc argument', ['/rest/v1/rpc/caller_is_premium?x=%FF']],
    ['0xFF in a Prefer header', ['/rest/v1/profiles?select=id', { headers: { prefer: 'count=\xff' } }]],
    ['0xFF in any header (PostgREST passes them all to SQL)', ['/rest/v1/profiles?select=id', {
      headers: { 'x-anything': '\xff' },
    }]],
    ['0xFF in a cookie', ['/rest/v1/profiles?select=id', { headers: { cookie: 'a=\xff' } }]],
    ['a form body with %FF', ['/rest/v1/rpc/caller_is_premium', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'target=%FF',
    }]],
    ['a form body with a 0xFF byte', ['/rest/v1/rpc/caller_is_premium', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new Uint8Array([0x61, 0x3d, 0xff]),
    }]],
    ['a CSV value with a 0xFF byte', ['/rest/v1/goals', {
      method: 'POST',
      headers: { 'content-type': 'text/csv' },
      body: new Uint8Array([...new TextEncoder().encode('title\n'), 0xff, 0x0a]),
    }]],
    ['a JSON body with a 0xFF byte', ['/rest/v1/rpc/caller_is_premium', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: new Uint8Array([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d]),
    }]],
  ]
  for (const [what, [path, init]] of refused) {
    const res = await send(path, init)
    assert.equal(res.status, 400, `${what}: ${JSON.stringify(res.body)}`)
    assert.match(res.body?.error ?? '', /UTF-8/, what)
  }
  // Valid UTF-8 (percent-encoded or not), stray % signs, and binary bodies go through to PostgREST.
  const passed: [string, Parameters<typeof send>, number][] = [
    ['é percent-encoded', [`/rest/v1/profiles?select=id&full_name=eq.%C3%A9`], 200],
    ['a 4-byte character', [`/rest/v1/profiles?select=id&full_name=eq.%F0%9F%98%80`], 200],
    ['a % not followed by hex digits', [`/rest/v1/profiles?select=id&full_name=eq.100%`], 200],
    ['é in a header', [`/rest/v1/profiles?select=id&id=eq.${user.id}`, {
      headers: { 'x-anything': '\xc3\xa9' },
    }], 200],
    ['a binary body (bytea is bytes)', ['/rest/v1/rpc/caller_is_premium', {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream' },
      body: new Uint8Array([0xff, 0xfe]),
    }], 404],
  ]
  for (const [what, [path, init], status] of passed) {
    const res = await send(path, init)
    assert.equal(res.status, status, `${what}: ${JSON.stringify(res.body)}`)
    if (status !== 200) assert.equal(typeof res.body?.code, 'string', `${what}: PostgREST's own answer`)
  }
})
