// The local object store (/storage/v1, scripts/lib/storage/) through supabase-js's storage
// client and raw HTTP against the live stack, plus the in-process handler with a temporary
// root to check what lands on disk. Each run makes its own buckets and policies.
import { strict as assert } from 'node:assert'
import {
  ANON_KEY,
  API_URL,
  asStorage,
  clientAs,
  createUser,
  JWT_SECRET,
  SERVICE_ROLE_KEY,
  signClaims,
  sql,
  type TestUser,
} from './_helpers.ts'
import { handleStorage } from '../scripts/lib/storage/mod.ts'

const run = crypto.randomUUID().slice(0, 8)
const PRIV = `storage-test-priv-${run}` // 1 KiB limit, text/plain and image/*
const PUB = `storage-test-pub-${run}` // public, no limits
const STORAGE = `${API_URL}/storage/v1`
const text = (s: string, type = 'text/plain') => new Blob([s], { type })

async function setup() {
  await sql`insert into storage.buckets (id, name, public, file_size_limit, allowed_mime_types) values
    (${PRIV}, ${PRIV}, false, 1024, array[${'text/plain'}, ${'image/*'}]::text[]),
    (${PUB}, ${PUB}, true, null, null)`
  const own = (b: string) =>
    `bucket_id = '${b}' and (storage.foldername(name))[1] = (select auth.uid())::text`
  // Bucket ids are generated above ([a-z0-9-]), so inlining them is safe.
  await sql.unsafe(`
    create policy "st_${run}_priv_own" on storage.objects for all to authenticated
      using (${own(PRIV)}) with check (${own(PRIV)});
    create policy "st_${run}_pub_own" on storage.objects for all to authenticated
      using (${own(PUB)}) with check (${own(PUB)});
    create policy "st_${run}_pub_read" on storage.objects for select to anon, authenticated
      using (bucket_id = '${PUB}');
    create policy "st_${run}_pub_bucket" on storage.buckets for select to anon, authenticated
      using (id = '${PUB}');`)
}

async function cleanup() {
  const service = clientAs(SERVICE_ROLE_KEY).storage
  for (const b of [PRIV, PUB]) {
    const names = (await sql`select name from storage.objects where bucket_id = ${b}`).map((r) =>
      r.name as string
    )
    if (names.length) await service.from(b).remove(names) // takes the files off the gateway's disk too
  }
  await sql.unsafe(`
    drop policy if exists "st_${run}_priv_own" on storage.objects;
    drop policy if exists "st_${run}_pub_own" on storage.objects;
    drop policy if exists "st_${run}_pub_read" on storage.objects;
    drop policy if exists "st_${run}_pub_bucket" on storage.buckets;`)
  await asStorage(sql, async (tx) => {
    await tx`delete from storage.objects where bucket_id in (${PRIV}, ${PUB})`
    await tx`delete from storage.buckets where id in (${PRIV}, ${PUB})`
  })
}

async function raw(
  method: string,
  path: string,
  o: { token?: string; body?: BodyInit; headers?: Record<string, string> } = {},
) {
  const headers: Record<string, string> = { ...o.headers }
  if (o.token) headers.authorization = `Bearer ${o.token}`
  const res = await fetch(`${STORAGE}${path}`, { method, headers, body: o.body })
  const t = await res.text()
  let body: any = t
  try {
    body = JSON.parse(t)
  } catch { /* not JSON */ }
  return { status: res.status, body, headers: res.headers }
}

const rowCount = async (bucket: string, name: string) =>
  (await sql`select count(*)::int as n from storage.objects where bucket_id = ${bucket} and name = ${name}`)[
    0
  ].n

const exists = (p: string) => Deno.stat(p).then(() => true, () => false)

Deno.test(
  { name: 'storage: local object store', sanitizeResources: false, sanitizeOps: false },
  async (t) => {
    await setup()
    try {
      const A = await createUser({ prefix: 'storage-a' })
      const B = await createUser({ prefix: 'storage-b' })
      const a = clientAs(A.token).storage
      const b = clientAs(B.token).storage
      const service = clientAs(SERVICE_ROLE_KEY).storage
      const key = `${A.id}/notes/hello.txt`

      await t.step('upload through supabase-js (multipart) stores the row as the caller', async () => {
        const { data, error } = await a.from(PRIV).upload(key, text('hello world'))
        assert.equal(error, null)
        assert.equal(data!.path, key)
        assert.equal(data!.fullPath, `${PRIV}/${key}`)
        const [row] =
          await sql`select id, owner, owner_id, metadata from storage.objects where bucket_id = ${PRIV} and name = ${key}`
        assert.equal(row.id, data!.id)
        assert.equal(row.owner, A.id)
        assert.equal(row.owner_id, A.id)
        assert.equal(row.metadata.size, 11)
        assert.equal(row.metadata.mimetype, 'text/plain')
        assert.equal(row.metadata.cacheControl, 'max-age=3600')
        assert.match(row.metadata.eTag, /^"[0-9a-f]{32}"$/)
      })

      await t.step('the owner downloads; another user and anon get Object not found', async () => {
        const mine = await a.from(PRIV).download(key)
        assert.equal(mine.error, null)
        assert.equal(await mine.data!.text(), 'hello world')
        assert.equal(mine.data!.type, 'text/plain')
        const theirs = await b.from(PRIV).download(key)
        assert.equal(theirs.data, null)
        assert.ok(theirs.error)
        const res = await raw('GET', `/object/${PRIV}/${key}`, { token: B.token })
        assert.equal(res.status, 404)
        assert.equal(res.body.message, 'Object not found')
        assert.equal(
          (await raw('GET', `/object/authenticated/${PRIV}/${key}`, { token: B.token })).status,
          404,
        )
        assert.equal(
          (await raw('GET', `/object/${PRIV}/${key}`, { headers: { apikey: ANON_KEY } })).status,
          404,
        )
        // service_role bypasses RLS
        const svc = await service.from(PRIV).download(key)
        assert.equal(await svc.data!.text(), 'hello world')
      })

      await t.step("RLS: a user cannot upload into another user's folder", async () => {
        const intruder = `${B.id}/intruder.txt`
        const { error } = await a.from(PRIV).upload(intruder, text('x'))
        assert.equal((error as any)?.statusCode, '403')
        assert.equal(await rowCount(PRIV, intruder), 0)
      })

      await t.step("the bucket's size limit refuses the upload and writes nothing", async () => {
        const big = `${A.id}/big.txt`
        const multipart = await a.from(PRIV).upload(big, text('x'.repeat(2000)))
        assert.equal((multipart.error as any)?.status, 413)
        assert.equal((multipart.error as any)?.statusCode, '413')
        const rawBody = await a.from(PRIV).upload(big, new Uint8Array(1025), { contentType: 'text/plain' })
        assert.equal((rawBody.error as any)?.statusCode, '413')
        assert.equal(await rowCount(PRIV, big), 0)
        // exactly at the limit is fine
        const edge = await a.from(PRIV).upload(`${A.id}/edge.txt`, new Uint8Array(1024), {
          contentType: 'text/plain',
        })
        assert.equal(edge.error, null)
      })

      await t.step("the bucket's MIME types are enforced, wildcards included", async () => {
        const pdf = await a.from(PRIV).upload(`${A.id}/doc.pdf`, text('%PDF', 'application/pdf'))
        assert.equal((pdf.error as any)?.statusCode, '415')
        assert.match(pdf.error!.message, /application\/pdf/)
        assert.equal(await rowCount(PRIV, `${A.id}/doc.pdf`), 0)
        const png = await a.from(PRIV).upload(
          `${A.id}/pic.png`,
          new Blob([new Uint8Array([137, 80, 78, 71])], { type: 'image/png' }),
        )
        assert.equal(png.error, null)
        // a string body goes raw with supabase-js's default 'text/plain;charset=UTF-8'
        const str = await a.from(PRIV).upload(`${A.id}/plain.txt`, 'plain body')
        assert.equal(str.error, null)
        const [row] =
          await sql`select metadata from storage.objects where bucket_id = ${PRIV} and name = ${`${A.id}/plain.txt`}`
        assert.equal(row.metadata.mimetype, 'text/plain;charset=UTF-8')
      })

      await t.step('upsert: duplicate refused unless x-upsert; update replaces', async () => {
        const dup = await a.from(PRIV).upload(key, text('second'))
        assert.equal((dup.error as any)?.statusCode, '409')
        assert.equal(await (await a.from(PRIV).download(key)).data!.text(), 'hello world')
        const up = await a.from(PRIV).upload(key, text('upserted'), { upsert: true })
        assert.equal(up.error, null)
        assert.equal(await (await a.from(PRIV).download(key)).data!.text(), 'upserted')
        const upd = await a.from(PRIV).update(key, text('updated'))
        assert.equal(upd.error, null)
        assert.equal(await (await a.from(PRIV).download(key)).data!.text(), 'updated')
        assert.equal(await rowCount(PRIV, key), 1)
        const missing = await a.from(PRIV).update(`${A.id}/nope.txt`, text('x'))
        assert.equal((missing.error as any)?.statusCode, '404')
        // B may not overwrite A's object even with upsert
        const hijack = await b.from(PRIV).upload(key, text('hijack'), { upsert: true })
        assert.ok(hijack.error)
        assert.equal(await (await a.from(PRIV).download(key)).data!.text(), 'updated')
      })

      await t.step('list shows the entries directly under a prefix, folders with id null', async () => {
        for (const n of ['listing/a.txt', 'listing/sub/b.txt', 'listing/sub/c.txt', 'listing/z.txt']) {
          assert.equal((await a.from(PRIV).upload(`${A.id}/${n}`, text(n))).error, null)
        }
        const { data, error } = await a.from(PRIV).list(`${A.id}/listing`)
        assert.equal(error, null)
        assert.deepEqual(data!.map((e) => e.name), ['a.txt', 'sub', 'z.txt'])
        const sub = data!.find((e) => e.name === 'sub')!
        assert.equal(sub.id, null)
        assert.equal(data!.find((e) => e.name === 'a.txt')!.metadata.size, 'listing/a.txt'.length)
        const inner = await a.from(PRIV).list(`${A.id}/listing/sub`)
        assert.deepEqual(inner.data!.map((e) => e.name), ['b.txt', 'c.txt'])
        const search = await a.from(PRIV).list(`${A.id}/listing`, { search: 'z' })
        assert.deepEqual(search.data!.map((e) => e.name), ['z.txt'])
        const desc = await a.from(PRIV).list(`${A.id}/listing`, { sortBy: { column: 'name', order: 'desc' } })
        assert.deepEqual(desc.data!.map((e) => e.name), ['z.txt', 'sub', 'a.txt'])
        const page = await a.from(PRIV).list(`${A.id}/listing`, { limit: 2, offset: 1 })
        assert.deepEqual(page.data!.map((e) => e.name), ['sub', 'z.txt'])
        const top = await a.from(PRIV).list()
        assert.deepEqual(top.data!.map((e) => e.name), [A.id])
        const other = await b.from(PRIV).list(`${A.id}/listing`)
        assert.deepEqual(other.data, [])
      })

      await t.step('public bucket: download without auth; private bucket refused that way', async () => {
        const avatar = `${A.id}/avatar.png`
        const bytes = new Uint8Array([137, 80, 78, 71, 1, 2, 3])
        assert.equal((await a.from(PUB).upload(avatar, new Blob([bytes], { type: 'image/png' }))).error, null)
        const url = a.from(PUB).getPublicUrl(avatar).data.publicUrl
        assert.equal(url, `${STORAGE}/object/public/${PUB}/${avatar}`)
        const res = await fetch(url) // no headers at all
        assert.equal(res.status, 200)
        assert.equal(res.headers.get('content-type'), 'image/png')
        assert.deepEqual(new Uint8Array(await res.arrayBuffer()), bytes)
        const priv = await raw('GET', `/object/public/${PRIV}/${key}`)
        assert.equal(priv.status, 400)
        assert.notEqual(priv.body, 'updated')
        assert.equal((await raw('GET', `/object/public/${PUB}/${A.id}/missing.png`)).status, 404)
        // the public-read policy lets anon list the bucket
        const anonList = await clientAs().storage.from(PUB).list(A.id)
        assert.deepEqual(anonList.data!.map((e) => e.name), ['avatar.png'])
      })

      await t.step(
        'every object is served with X-Content-Type-Options: nosniff, and HTML as text/plain',
        async () => {
          const page = `${A.id}/page.html`
          assert.equal(
            (await a.from(PUB).upload(page, text('<script>alert(1)</script>', 'text/html'))).error,
            null,
          )
          for (
            const [what, res] of [
              ['public', await fetch(`${STORAGE}/object/public/${PUB}/${page}`)],
              ['public HEAD', await fetch(`${STORAGE}/object/public/${PUB}/${page}`, { method: 'HEAD' })],
              [
                'authenticated',
                await fetch(`${STORAGE}/object/authenticated/${PUB}/${page}`, {
                  headers: { authorization: `Bearer ${A.token}` },
                }),
              ],
              [
                'private',
                await fetch(`${STORAGE}/object/${PRIV}/${key}`, {
                  headers: { authorization: `Bearer ${A.token}` },
                }),
              ],
              ['public image', await fetch(`${STORAGE}/object/public/${PUB}/${A.id}/avatar.png`)],
            ] as const
          ) {
            await res.body?.cancel()
            assert.equal(res.status, 200, what)
            assert.equal(res.headers.get('x-content-type-options'), 'nosniff', what)
            assert.doesNotMatch(
              res.headers.get('content-type') ?? '',
              /html/,
              `${what}: never served as HTML`,
            )
          }
        },
      )

      await t.step('remove deletes only what RLS allows', async () => {
        const victim = `${A.id}/listing/z.txt`
        const denied = await b.from(PRIV).remove([victim])
        assert.deepEqual(denied.data, [])
        assert.equal(await rowCount(PRIV, victim), 1)
        const done = await a.from(PRIV).remove([victim, `${A.id}/does-not-exist.txt`])
        assert.equal(done.error, null)
        assert.deepEqual(done.data!.map((r) => r.name), [victim])
        assert.equal(await rowCount(PRIV, victim), 0)
        assert.equal((await raw('GET', `/object/${PRIV}/${victim}`, { token: SERVICE_ROLE_KEY })).status, 404)
        // DELETE /object/{bucket}/{path}
        const single = `${A.id}/listing/a.txt`
        assert.equal((await raw('DELETE', `/object/${PRIV}/${single}`, { token: B.token })).status, 404)
        assert.equal((await raw('DELETE', `/object/${PRIV}/${single}`, { token: A.token })).status, 200)
        assert.equal(await rowCount(PRIV, single), 0)
      })

      await t.step('path traversal and malformed keys are refused with 400', async () => {
        const headers = { 'content-type': 'text/plain' }
        for (
          const p of [
            `${A.id}/..%2F..%2F..%2Fescape.txt`,
            `${A.id}//double.txt`,
            '%2Fetc%2Fpasswd',
            `${A.id}/.`,
          ]
        ) {
          const res = await raw('POST', `/object/${PRIV}/${p}`, { token: A.token, body: 'x', headers })
          assert.equal(res.status, 400, p)
          assert.equal(res.body.statusCode, '400')
        }
        assert.equal(
          (await raw('GET', `/object/public/${PUB}/..%2F${PRIV}%2F${A.id}%2Fnotes%2Fhello.txt`)).status,
          400,
        )
        assert.equal((await a.from(PRIV).remove(['../../x'])).error?.message.includes('Invalid key'), true)
        assert.equal((await a.from(PRIV).list('../..')).data, null)
        assert.equal(
          (await sql`select count(*)::int as n from storage.objects where name like '%..%'`)[0].n,
          0,
        )
      })

      await t.step('bad tokens and non-API roles are refused', async () => {
        const wrongSecret = await signClaims(
          { sub: A.id, role: 'authenticated' },
          'not-the-secret-not-the-secret-123',
        )
        const bad = await raw('GET', `/object/${PRIV}/${key}`, { token: wrongSecret })
        assert.equal(bad.status, 403)
        assert.deepEqual([bad.body.statusCode, bad.body.error], ['403', 'Unauthorized'])
        // a validly signed token must not turn into `set role postgres`
        const superuser = await signClaims({ sub: A.id, role: 'postgres' }, JWT_SECRET)
        assert.equal((await raw('GET', `/object/${PRIV}/${key}`, { token: superuser })).status, 403)
        assert.equal((await raw('GET', '/bucket', { token: superuser })).status, 403)
        const expired = await signClaims(
          { sub: A.id, role: 'authenticated', aud: 'authenticated' },
          JWT_SECRET,
          -60,
        )
        const exp = await raw('GET', `/object/${PRIV}/${key}`, { token: expired })
        assert.equal(exp.status, 403)
        assert.equal(exp.body.message, 'jwt expired')
        assert.equal((await raw('GET', `/object/${PRIV}/${key}`)).status, 400)
      })

      await t.step('buckets are read under RLS; service_role sees all', async () => {
        const all = await service.listBuckets()
        const ids = all.data!.map((x) => x.id)
        assert.ok(ids.includes(PRIV) && ids.includes(PUB))
        const priv = await service.getBucket(PRIV)
        assert.equal(priv.data!.public, false)
        assert.equal(priv.data!.file_size_limit, 1024)
        assert.deepEqual(priv.data!.allowed_mime_types, ['text/plain', 'image/*'])
        assert.equal((await a.getBucket(PUB)).data!.public, true)
        assert.equal((await a.getBucket(PRIV)).data, null)
        const mine = (await a.listBuckets()).data!.map((x) => x.id)
        assert.ok(mine.includes(PUB) && !mine.includes(PRIV))
      })

      await t.step(
        "search and prefix with control characters are 400 in Storage's error shape, never 500",
        async () => {
          const json = { 'content-type': 'application/json' }
          const bad: [string, string, string | undefined, RegExp][] = [
            ['POST', `/object/list/${PUB}`, JSON.stringify({ prefix: '', search: '\u0000' }), /^search: /],
            ['POST', `/object/list/${PUB}`, JSON.stringify({ prefix: '', search: 'a\u001fb' }), /^search: /],
            [
              'POST',
              `/object/list/${PUB}`,
              JSON.stringify({ prefix: `${A.id}/\u0000` }),
              /control characters/,
            ],
            ['GET', '/bucket?search=%00', undefined, /^search: /],
            ['GET', '/bucket?search=a%7Fb', undefined, /^search: /],
          ]
          for (const [method, path, body, message] of bad) {
            const res = await raw(method, path, { token: A.token, body, headers: body ? json : {} })
            assert.equal(res.status, 400, `${method} ${path} ${body}: ${JSON.stringify(res.body)}`)
            assert.equal(res.body.statusCode, '400')
            assert.equal(typeof res.body.error, 'string')
            assert.match(res.body.message, message)
          }
          // Ordinary searches still answer.
          const listed = await raw('POST', `/object/list/${PUB}`, {
            token: A.token,
            body: JSON.stringify({ prefix: '', search: 'zz-none' }),
            headers: json,
          })
          assert.deepEqual([listed.status, listed.body], [200, []])
          const buckets = await raw('GET', `/bucket?search=${encodeURIComponent(PUB)}`, { token: A.token })
          assert.deepEqual([buckets.status, buckets.body.map((x: { id: string }) => x.id)], [200, [PUB]])
        },
      )

      await t.step(
        "a value Postgres refuses (class 22) is 400 in Storage's error shape, not 500",
        async () => {
          const refusing = {
            begin: () =>
              Promise.reject(
                Object.assign(new Error('invalid byte sequence for encoding "UTF8": 0x00'), {
                  code: '22021',
                }),
              ),
          } as unknown as typeof sql
          const res = await handleStorage(
            new Request('http://local/storage/v1/bucket', {
              headers: { authorization: `Bearer ${A.token}` },
            }),
            '/bucket',
            { sql: refusing, rootDir: '/nonexistent' },
          )
          assert.equal(res.status, 400)
          assert.deepEqual(await res.json(), {
            statusCode: '400',
            error: 'InvalidRequest',
            message: 'invalid byte sequence for encoding "UTF8": 0x00',
          })
        },
      )

      await t.step('on disk: files land under <root>/<bucket>/<name>; refusals leave nothing', async () => {
        await onDisk(A, B)
      })
    } finally {
      await cleanup()
      await sql.end()
    }
  },
)

/** The handler in-process with a temporary root, so the test can look at the files. */
async function onDisk(A: TestUser, B: TestUser) {
  const root = await Deno.makeTempDir({ prefix: 'storage-test-' })
  const ctx = { sql, rootDir: `${root}/objects` }
  const call = (method: string, path: string, o: { token?: string; body?: BodyInit; type?: string } = {}) => {
    const headers: Record<string, string> = {}
    if (o.token) headers.authorization = `Bearer ${o.token}`
    if (o.type) headers['content-type'] = o.type
    // The path is passed as is: no URL parser normalises the dots away first.
    return handleStorage(
      new Request(`http://local/storage/v1/x`, { method, headers, body: o.body }),
      path,
      ctx,
    )
  }
  const dir = `${ctx.rootDir}/${PRIV}/${A.id}/disk`
  const listDir = async (d: string) => (await Array.fromAsync(Deno.readDir(d))).map((e) => e.name).sort()
  try {
    const ok = await call('POST', `/object/${PRIV}/${A.id}/disk/ok.txt`, {
      token: A.token,
      body: 'on disk',
      type: 'text/plain',
    })
    assert.equal(ok.status, 200)
    assert.equal((await ok.json()).Key, `${PRIV}/${A.id}/disk/ok.txt`)
    assert.equal(await Deno.readTextFile(`${dir}/ok.txt`), 'on disk')

    const big = await call('POST', `/object/${PRIV}/${A.id}/disk/big.txt`, {
      token: A.token,
      body: 'x'.repeat(1025),
      type: 'text/plain',
    })
    assert.equal(big.status, 413)
    assert.deepEqual(await big.json(), {
      statusCode: '413',
      error: 'Payload too large',
      message: 'The object exceeded the maximum allowed size',
    })
    const pdf = await call('POST', `/object/${PRIV}/${A.id}/disk/a.pdf`, {
      token: A.token,
      body: 'x',
      type: 'application/pdf',
    })
    assert.equal(pdf.status, 415)
    assert.equal((await pdf.json()).error, 'invalid_mime_type')
    const dup = await call('POST', `/object/${PRIV}/${A.id}/disk/ok.txt`, {
      token: A.token,
      body: 'other',
      type: 'text/plain',
    })
    assert.equal(dup.status, 409)
    assert.deepEqual(await listDir(dir), ['ok.txt']) // no stray temp files either
    assert.equal(await Deno.readTextFile(`${dir}/ok.txt`), 'on disk')

    const rls = await call('POST', `/object/${PRIV}/${B.id}/disk/x.txt`, {
      token: A.token,
      body: 'x',
      type: 'text/plain',
    })
    assert.equal(rls.status, 403)
    assert.equal(await exists(`${ctx.rootDir}/${PRIV}/${B.id}`), false) // not even a folder

    for (
      const p of [
        `/object/${PRIV}/${A.id}/../../escape.txt`,
        `/object/../escape.txt`,
        `/object/${PRIV}/${A.id}/a\\b.txt`,
      ]
    ) {
      const res = await call('POST', p, { token: A.token, body: 'x', type: 'text/plain' })
      assert.equal(res.status, 400, p)
    }
    assert.equal(await exists(`${ctx.rootDir}/${PRIV}/escape.txt`), false)
    assert.equal(await exists(`${ctx.rootDir}/escape.txt`), false)
    assert.equal(await exists(`${root}/escape.txt`), false)

    const del = await call('DELETE', `/object/${PRIV}`, {
      token: A.token,
      body: JSON.stringify({ prefixes: [`${A.id}/disk/ok.txt`] }),
      type: 'application/json',
    })
    assert.equal(del.status, 200)
    assert.equal((await del.json()).length, 1)
    assert.equal(await exists(`${dir}/ok.txt`), false)
    assert.equal(await exists(dir), false) // emptied folders go too
    assert.equal(await rowCount(PRIV, `${A.id}/disk/ok.txt`), 0)
  } finally {
    await Deno.remove(root, { recursive: true })
  }
}
