// The functions' storage client (functions/_shared/storage.ts) against a server that answers as
// hosted Supabase Storage does: HTTP 400 for most errors, the real status only in the body's
// `statusCode`. The routes' 413/415 branches must fire there too, not only against the local
// store (which answers with the status itself).
import { strict as assert } from 'node:assert'
import { test } from './_helpers.ts'
import { StorageError, storageErrorStatus, uploadObject } from '../functions/_shared/storage.ts'

test("storage errors: the body statusCode wins over hosted Storage's HTTP 400; plain answers keep theirs", async () => {
  const answers: Record<string, { status: number; body: string }> = {
    '/storage/v1/object/b/too-big.png': {
      status: 400,
      body:
        '{"statusCode":"413","error":"Payload too large","message":"The object exceeded the maximum allowed size"}',
    },
    '/storage/v1/object/b/bad-type.png': {
      status: 400,
      body:
        '{"statusCode":"415","error":"invalid_mime_type","message":"mime type text/plain is not supported"}',
    },
    '/storage/v1/object/b/down.png': { status: 502, body: '<html>Bad gateway</html>' },
  }
  const server = Deno.serve({ hostname: '127.0.0.1', port: 0, onListen: () => {} }, async (req) => {
    await req.body?.cancel()
    const a = answers[new URL(req.url).pathname] ?? { status: 404, body: '{"statusCode":"404"}' }
    return new Response(a.body, { status: a.status, headers: { 'content-type': 'application/json' } })
  })
  const saved = Deno.env.get('SUPABASE_URL')
  Deno.env.set('SUPABASE_URL', `http://127.0.0.1:${server.addr.port}`)
  try {
    const statusOf = async (name: string) => {
      try {
        await uploadObject('b', name, new Uint8Array([1, 2, 3]), 'image/png')
      } catch (e) {
        assert.ok(e instanceof StorageError, String(e))
        return e.status
      }
      assert.fail('the upload should have failed')
    }
    assert.equal(await statusOf('too-big.png'), 413)
    assert.equal(await statusOf('bad-type.png'), 415)
    assert.equal(await statusOf('down.png'), 502, 'no JSON body: the HTTP status')
    assert.equal(
      storageErrorStatus(400, '{"statusCode":"0"}'),
      400,
      'a statusCode that is no error status is ignored',
    )
    assert.equal(storageErrorStatus(409, 'not json'), 409)
  } finally {
    if (saved === undefined) Deno.env.delete('SUPABASE_URL')
    else Deno.env.set('SUPABASE_URL', saved)
    await server.shutdown()
  }
})
