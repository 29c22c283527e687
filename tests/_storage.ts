// Shared pieces for the storage tests: a private and a public bucket made for one test file,
// each with "own folder" policies (a user writes, and in the private bucket reads, only under
// <their id>/), a browser-like fetch that enforces CORS as a browser does, and a PNG maker.
import { createClient } from '@supabase/supabase-js'
import { encode } from 'fast-png'
import { ANON_KEY, API_URL, asStorage, clientAs, SERVICE_ROLE_KEY, sql } from './_helpers.ts'

export const STORAGE = `${API_URL}/storage/v1`

export interface TestBuckets {
  priv: string
  pub: string
  cleanup(): Promise<void>
}

/** A private and a public bucket with own-folder policies, for one test file. */
export async function makeBuckets(prefix: string): Promise<TestBuckets> {
  const run = crypto.randomUUID().slice(0, 8)
  const priv = `${prefix}-priv-${run}`
  const pub = `${prefix}-pub-${run}`
  await sql`insert into storage.buckets (id, name, public) values (${priv}, ${priv}, false), (${pub}, ${pub}, true)`
  const own = (b: string) =>
    `bucket_id = '${b}' and (storage.foldername(name))[1] = (select auth.uid())::text`
  // Bucket ids are generated above ([a-z0-9-]), so inlining them is safe.
  await sql.unsafe(`
    create policy "${run}_priv_own" on storage.objects for all to authenticated using (${
    own(priv)
  }) with check (${own(priv)});
    create policy "${run}_pub_own" on storage.objects for all to authenticated using (${
    own(pub)
  }) with check (${own(pub)});
    create policy "${run}_pub_read" on storage.objects for select to anon, authenticated using (bucket_id = '${pub}');`)
  return {
    priv,
    pub,
    async cleanup() {
      const service = clientAs(SERVICE_ROLE_KEY).storage
      for (const b of [priv, pub]) {
        const names = (await sql`select name from storage.objects where bucket_id = ${b}`).map((r) =>
          r.name as string
        )
        if (names.length) await service.from(b).remove(names) // takes the files off the gateway's disk too
      }
      await sql.unsafe(`
        drop policy if exists "${run}_priv_own" on storage.objects;
        drop policy if exists "${run}_pub_own" on storage.objects;
        drop policy if exists "${run}_pub_read" on storage.objects;`)
      await asStorage(sql, async (tx) => {
        await tx`delete from storage.objects where bucket_id in (${priv}, ${pub})`
        await tx`delete from storage.buckets where id in (${priv}, ${pub})`
      })
    },
  }
}

export const PAGE_ORIGIN = 'http://localhost:3000'

// Request headers a page may send without asking (the CORS-safelisted ones; content-type only
// with a form or text type).
const SAFELISTED = new Set(['accept', 'accept-language', 'content-language'])
const SIMPLE_TYPE = /^(application\/x-www-form-urlencoded|multipart\/form-data|text\/plain)(;|$)/i

/**
 * fetch as a page on http://localhost:3000 sees it: a request a browser would preflight is
 * preflighted (OPTIONS with Access-Control-Request-Method/-Headers), and a request whose
 * preflight or response does not allow the page fails with "Failed to fetch", as in a browser.
 * `log` collects every preflight made.
 */
export function browserFetch(log: string[] = []): typeof fetch {
  return async (input, init) => {
    const req = new Request(input, init)
    const fail = (why: string): never => {
      throw new TypeError(`Failed to fetch (CORS: ${why}) ${req.method} ${req.url}`)
    }
    const unsafe = [...req.headers.keys()].filter((h) =>
      !SAFELISTED.has(h) && !(h === 'content-type' && SIMPLE_TYPE.test(req.headers.get(h)!))
    )
    const simpleMethod = ['GET', 'HEAD', 'POST'].includes(req.method)
    if (unsafe.length || !simpleMethod) {
      const pre = await fetch(req.url, {
        method: 'OPTIONS',
        headers: {
          origin: PAGE_ORIGIN,
          'access-control-request-method': req.method,
          ...(unsafe.length ? { 'access-control-request-headers': unsafe.sort().join(',') } : {}),
        },
      })
      await pre.body?.cancel()
      log.push(`${req.method} ${new URL(req.url).pathname}`)
      if (!pre.ok) fail(`preflight answered ${pre.status}`)
      const origin = pre.headers.get('access-control-allow-origin')
      if (origin !== '*' && origin !== PAGE_ORIGIN) fail(`preflight allows origin ${origin}`)
      const methods = (pre.headers.get('access-control-allow-methods') ?? '').split(',').map((s) =>
        s.trim().toUpperCase()
      )
      if (!simpleMethod && !methods.includes(req.method) && !methods.includes('*')) {
        fail(`method ${req.method} not allowed`)
      }
      const allowed = (pre.headers.get('access-control-allow-headers') ?? '').split(',').map((s) =>
        s.trim().toLowerCase()
      )
      for (const h of unsafe) {
        if (!allowed.includes(h) && !allowed.includes('*')) fail(`header ${h} not allowed`)
      }
    }
    const headers = new Headers(req.headers)
    headers.set('origin', PAGE_ORIGIN)
    const res = await fetch(new Request(req, { headers }))
    const origin = res.headers.get('access-control-allow-origin')
    if (origin !== '*' && origin !== PAGE_ORIGIN) {
      await res.body?.cancel()
      fail(`response allows origin ${origin}`)
    }
    return res
  }
}

/** A supabase-js client for a browser page: every request goes through browserFetch. */
export function browserClientAs(token: string | undefined, log: string[] = []) {
  return createClient(API_URL, ANON_KEY, {
    auth: { persistSession: false, autoRefreshToken: false },
    global: { fetch: browserFetch(log), ...(token ? { headers: { Authorization: `Bearer ${token}` } } : {}) },
  })
}

/** A width x height PNG: a left half red and a right half blue (so a crop shows). */
export function png(width: number, height: number): Uint8Array {
  const data = new Uint8Array(width * height * 4)
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 4
      data.set(x < width / 2 ? [220, 30, 30, 255] : [30, 30, 220, 255], i)
    }
  }
  return encode({ width, height, data, channels: 4, depth: 8 })
}
