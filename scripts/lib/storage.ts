// A small local copy of Supabase Storage's HTTP API (what supabase-js's storage client uses):
// files on disk under <rootDir>/<bucket>/<name>, rows in storage.objects. Every row read or
// write runs as the caller's Postgres role with its JWT claims and request headers, so storage
// RLS policies and triggers apply as on Supabase. Bucket settings (limits, public) are read as
// the superuser, as Supabase Storage does, so uploads need no bucket policy. A token of a
// stopped or expired impersonation session is refused (401) before anything else.
import type postgres from 'postgres'
import { createHash } from 'node:crypto'
import { HttpError } from '../../functions/_shared/errors.ts'
import { isUserToken, verifyAccessToken } from '../../functions/_shared/jwt.ts'
import { BodyTooLarge, JSON_BODY_LIMIT, readLimited } from './body.ts'
import { parseMultipart } from './multipart.ts'

export interface StorageContext {
  sql: postgres.Sql
  rootDir: string
}

// The request's headers travel with its claims (a symbol key: never part of the claims' JSON).
const HEADERS = Symbol('request headers')
type Claims = Record<string, unknown> & { role: string; sub?: string; [HEADERS]?: string }
type Tx = postgres.TransactionSql

const ROLES = new Set(['anon', 'authenticated', 'service_role'])
const GLOBAL_SIZE_LIMIT = 50 * 1024 * 1024 // Supabase's default global upload limit (50 MiB)
const MULTIPART_ENVELOPE = 64 * 1024 // room for a form's boundaries, part headers and small fields
// Supabase routes under /object that this store does not implement (not bucket names).
const UNSUPPORTED = new Set(['sign', 'move', 'copy', 'upload', 'info', 'list-v2'])

class StorageError extends Error {
  constructor(readonly status: number, readonly error: string, message: string) {
    super(message)
  }
}
const fail = (status: number, error: string, message: string): never => {
  throw new StorageError(status, error, message)
}
const json = (status: number, body: unknown) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } })
const errorBody = (status: number, error: string, message: string) =>
  json(status, { statusCode: String(status), error, message })

export async function handleStorage(req: Request, path: string, ctx: StorageContext): Promise<Response> {
  try {
    return await route(req, path, ctx)
  } catch (e) {
    if (e instanceof StorageError) return errorBody(e.status, e.error, e.message)
    if (e instanceof BodyTooLarge) return errorBody(413, 'Payload too large', e.message)
    // Postgres errors a caller can cause: RLS refusals, duplicate keys, timeouts.
    const code = (e as { code?: string }).code
    if (code === 'PT401') return errorBody(401, 'Impersonation session ended', (e as Error).message)
    if (code === '42501') return errorBody(403, 'Unauthorized', 'new row violates row-level security policy')
    if (code === '23505') return errorBody(409, 'Duplicate', 'The resource already exists')
    if (code === '57014') return errorBody(504, 'DatabaseTimeout', 'The query timed out')
    // A value Postgres refuses (class 22: a NUL, a bad number or date) is the request's fault.
    if (code?.startsWith('22')) return errorBody(400, 'InvalidRequest', (e as Error).message)
    console.error('storage error', e)
    return errorBody(500, 'internal', 'Internal Server Error')
  }
}

async function route(req: Request, path: string, ctx: StorageContext): Promise<Response> {
  const [area, ...rest] = splitPath(path)
  const m = req.method
  const read = m === 'GET' || m === 'HEAD'
  if (area === 'bucket' && m === 'GET' && rest.length <= 1) {
    const caller = await identify(req, ctx)
    return rest.length
      ? getBucket(ctx, caller, rest[0])
      : listBuckets(ctx, caller, new URL(req.url).searchParams)
  }
  if (area === 'object' && rest.length) {
    const [first, ...more] = rest
    if (UNSUPPORTED.has(first)) fail(501, 'not_implemented', `/object/${first} is not supported locally`)
    if (first === 'list' && m === 'POST' && more.length === 1) {
      return list(ctx, await identify(req, ctx), more[0], await readJson(req))
    }
    if (first === 'public' && read && more.length >= 2) {
      return downloadPublic(req, ctx, more[0], more.slice(1).join('/'))
    }
    const [bucket, ...segs] = first === 'authenticated' && read ? more : rest
    const name = segs.join('/')
    if (m === 'DELETE' && !name) return removeMany(ctx, await identify(req, ctx), bucket, await readJson(req))
    if (name) {
      const caller = await identify(req, ctx)
      if (m === 'POST' || m === 'PUT') return upload(req, ctx, caller, bucket, name)
      if (read) return download(req, ctx, caller, bucket, name)
      if (m === 'DELETE') return removeOne(ctx, caller, bucket, name)
    }
  }
  return fail(404, 'not_found', `Route ${m}:/storage/v1${path} not found`)
}

// ---- keys and paths -------------------------------------------------------------------

/** Percent-decodes and splits the request path; refuses traversal, empty and odd segments. */
function splitPath(path: string): string[] {
  let decoded = ''
  try {
    decoded = decodeURIComponent(path)
  } catch {
    fail(400, 'InvalidKey', 'The path is not valid percent-encoding')
  }
  if (!decoded.startsWith('/')) fail(400, 'InvalidKey', 'Invalid path')
  const segs = decoded.slice(1).split('/')
  segs.forEach(checkSegment)
  return segs
}

function checkSegment(s: string) {
  // deno-lint-ignore no-control-regex
  if (!s || s === '.' || s === '..' || /[\x00-\x1f\x7f\\]/.test(s)) {
    fail(
      400,
      'InvalidKey',
      'Invalid key: path segments must be non-empty, not "." or "..", without control characters',
    )
  }
}

/** Checks a key given in a JSON body (remove, list) by the same rules as keys in the URL. */
function checkKey(key: unknown, allowEmpty = false): string {
  if (typeof key !== 'string') return fail(400, 'InvalidKey', 'Keys must be strings')
  if (key.length > 1024) fail(400, 'InvalidKey', 'Invalid key: longer than 1024 characters')
  if (!(allowEmpty && key === '')) key.split('/').forEach(checkSegment)
  return key
}

const bucketDir = (ctx: StorageContext, bucket: string) => `${ctx.rootDir.replace(/\/+$/, '')}/${bucket}`

function filePath(ctx: StorageContext, bucket: string, name: string): string {
  // Belt and braces: the segments were checked already, but never leave the root.
  ;[bucket, ...name.split('/')].forEach(checkSegment)
  return `${bucketDir(ctx, bucket)}/${name}`
}

/** Removes the now-empty folders above a file, up to the bucket's folder, so that a later
 *  object may take a folder's name. Deno.remove refuses a folder that is not empty. */
async function pruneEmptyDirs(ctx: StorageContext, bucket: string, file: string) {
  const stop = bucketDir(ctx, bucket)
  for (
    let d = file.slice(0, file.lastIndexOf('/'));
    d.length > stop.length;
    d = d.slice(0, d.lastIndexOf('/'))
  ) {
    if (!(await Deno.remove(d).then(() => true, () => false))) return
  }
}

// ---- identity -------------------------------------------------------------------------

/**
 * The caller's verified claims, from `Authorization: Bearer` or else the `apikey` header, by
 * /api's rules (functions/_shared/jwt.ts: HS256 with JWT_SECRET or ES256/RS256 against
 * JWKS_URL, `exp` required), and then: the role is one of the three API roles; a user's token
 * (role authenticated) has a `sub` and the `authenticated` audience; the anon and
 * service-role keys carry no audience.
 */
async function identify(req: Request, ctx: StorageContext): Promise<Claims> {
  const bearer = req.headers.get('authorization')?.match(/^Bearer\s+(\S+)$/i)?.[1]
  const token = bearer ?? req.headers.get('apikey')
  if (!token) return fail(400, 'Error', "headers must have required property 'authorization'")
  let claims: Record<string, unknown> = {}
  try {
    claims = await verifyAccessToken(token)
  } catch (e) {
    if (!(e instanceof HttpError)) throw e
    fail(403, 'Unauthorized', e.message === 'Token expired' ? 'jwt expired' : e.message)
  }
  // The role becomes `set local role`: only the three API roles, never e.g. postgres.
  if (typeof claims.role !== 'string' || !ROLES.has(claims.role)) {
    fail(403, 'Unauthorized', 'Invalid JWT role')
  }
  if (claims.role === 'authenticated' && !isUserToken(claims)) {
    fail(403, 'Unauthorized', 'A user token needs a sub and the authenticated audience')
  }
  if (claims.role !== 'authenticated' && claims.aud !== undefined) {
    fail(403, 'Unauthorized', `A ${claims.role} token carries no audience`)
  }
  const caller = Object.assign(claims as Claims, { [HEADERS]: JSON.stringify(Object.fromEntries(req.headers)) })
  // The same check as PostgREST's pre-request function, reads included (one round trip, only
  // for impersonation tokens).
  if (typeof caller.impersonation_session === 'string') {
    await asCaller(ctx, caller, (tx) => tx`select private.refuse_ended_impersonation()`)
  }
  return caller
}

/** Runs fn in a transaction as the caller, the way PostgREST does, so that RLS applies. */
function asCaller<T>(ctx: StorageContext, c: Claims, fn: (tx: Tx) => Promise<T>): Promise<T> {
  return ctx.sql.begin(async (tx) => {
    await tx.unsafe(`set local role ${c.role}`) // checked against ROLES in identify()
    await tx`select set_config('request.jwt.claims', ${JSON.stringify(c)}, true),
                    set_config('request.jwt.claim.sub', ${typeof c.sub === 'string' ? c.sub : ''}, true),
                    set_config('request.jwt.claim.role', ${c.role}, true),
                    set_config('request.headers', ${c[HEADERS] ?? '{}'}, true)`
    return await fn(tx)
  }) as Promise<T>
}

// ---- buckets --------------------------------------------------------------------------

const bucketColumns = (tx: Tx) =>
  tx`id, name, owner, owner_id, public, file_size_limit::float8 as file_size_limit, allowed_mime_types,
     created_at, updated_at, 'STANDARD' as type`

async function listBuckets(ctx: StorageContext, c: Claims, q: URLSearchParams) {
  const column = ['id', 'name', 'created_at', 'updated_at'].find((k) => k === q.get('sortColumn')) ?? 'name'
  const search = checkSearch(q.get('search'))
  const rows = await asCaller(ctx, c, (tx) =>
    tx`
    select ${bucketColumns(tx)} from storage.buckets
    where ${search ? tx`name ilike ${'%' + likeEscape(search) + '%'}` : tx`true`}
    order by ${tx(column)} ${q.get('sortOrder') === 'desc' ? tx`desc` : tx`asc`}
    limit ${intParam(q.get('limit'), 1000)} offset ${intParam(q.get('offset'), 0)}`)
  return json(200, rows)
}

async function getBucket(ctx: StorageContext, c: Claims, id: string) {
  const [row] = await asCaller(
    ctx,
    c,
    (tx) => tx`select ${bucketColumns(tx)} from storage.buckets where id = ${id}`,
  )
  return row ? json(200, row) : fail(404, 'Bucket not found', 'Bucket not found')
}

// ---- upload ---------------------------------------------------------------------------

function mimeAllowed(mime: string, allowed: string[] | null): boolean {
  if (!allowed?.length) return true
  const [type, sub] = mime.split(';')[0].trim().toLowerCase().split('/')
  return allowed.some((a) => {
    const [at, as] = a.trim().toLowerCase().split('/')
    return at === type && (as === '*' || as === sub)
  })
}

/** The file from a raw body (Content-Type header) or from a multipart form's file part. */
async function readUpload(req: Request, limit: number) {
  const type = req.headers.get('content-type') ?? ''
  const tooLarge = () => fail(413, 'Payload too large', 'The object exceeded the maximum allowed size')
  const boundary = /^multipart\/form-data/i.test(type) ? type.match(/boundary="?([^";]+)"?/i)?.[1] : undefined
  // Stop reading once the body passes the limit (declared or chunked), allowing for the
  // multipart envelope; the file itself is checked against the exact limit below.
  const body = await readLimited(req, limit + (boundary ? MULTIPART_ENVELOPE : 0)).catch((e) => {
    if (e instanceof BodyTooLarge) tooLarge()
    throw e
  })
  let file = {
    bytes: body as Uint8Array,
    mimetype: type,
    cacheControl: req.headers.get('cache-control')?.match(/max-age=(\d+)/)?.[1],
  }
  if (boundary) {
    const parts = parseMultipart(body, boundary, () => fail(400, 'InvalidRequest', 'Malformed multipart body'))
    const part = parts.find((p) => p.filename !== undefined) ?? parts.find((p) => p.name === '')
    if (!part) return fail(400, 'InvalidRequest', 'No file in the multipart body')
    const cache = parts.find((p) => p.name === 'cacheControl' && p.filename === undefined)
    file = {
      bytes: part.content,
      mimetype: part.type ?? '',
      cacheControl: cache && new TextDecoder().decode(cache.content),
    }
  }
  if (file.bytes.length > limit) tooLarge()
  return {
    ...file,
    mimetype: file.mimetype || 'application/octet-stream',
    cacheControl: file.cacheControl || '3600',
  }
}

async function upload(req: Request, ctx: StorageContext, c: Claims, bucketId: string, name: string) {
  if (name.length > 1024) fail(400, 'InvalidKey', 'Invalid key: longer than 1024 characters')
  const [bucket] = await ctx.sql`
    select file_size_limit::float8 as size_limit, allowed_mime_types from storage.buckets where id = ${bucketId}`
  if (!bucket) fail(404, 'Bucket not found', 'Bucket not found')
  const file = await readUpload(req, Math.min(bucket.size_limit ?? GLOBAL_SIZE_LIMIT, GLOBAL_SIZE_LIMIT))
  if (!mimeAllowed(file.mimetype, bucket.allowed_mime_types)) {
    fail(415, 'invalid_mime_type', `mime type ${file.mimetype} is not supported`)
  }
  const metadata = {
    eTag: `"${createHash('md5').update(file.bytes).digest('hex')}"`,
    size: file.bytes.length,
    mimetype: file.mimetype,
    cacheControl: `max-age=${file.cacheControl}`,
    lastModified: new Date().toISOString(),
    contentLength: file.bytes.length,
    httpStatusCode: 200,
  }
  const sub = typeof c.sub === 'string' ? c.sub : null
  const owner = sub && /^[0-9a-f]{8}-([0-9a-f]{4}-){3}[0-9a-f]{12}$/i.test(sub) ? sub : null
  const upsert = req.method === 'POST' && req.headers.get('x-upsert') === 'true'

  // The file is written inside the transaction, once the row statement has passed RLS and the
  // unique key: a refusal leaves neither a row nor a file (nor a folder).
  const final = filePath(ctx, bucketId, name)
  const temp = `${final}.${crypto.randomUUID()}.upload`
  const write = async () => {
    await Deno.mkdir(final.slice(0, final.lastIndexOf('/')), { recursive: true })
    await Deno.writeFile(temp, file.bytes)
    await Deno.rename(temp, final) // atomic: a reader sees the old file or the new one
  }
  try {
    const id = await asCaller(ctx, c, async (tx) => {
      const rows = req.method === 'PUT'
        ? await tx`update storage.objects
                   set metadata = ${
          tx.json(metadata)
        }, owner = ${owner}, owner_id = ${sub}, updated_at = now(),
                       version = gen_random_uuid()::text
                   where bucket_id = ${bucketId} and name = ${name} returning id`
        : await tx`insert into storage.objects (bucket_id, name, owner, owner_id, metadata, version)
                   values (${bucketId}, ${name}, ${owner}, ${sub}, ${
          tx.json(metadata)
        }, gen_random_uuid()::text)
                   ${
          upsert
            ? tx`on conflict (bucket_id, name) do update
                     set metadata = excluded.metadata, owner = excluded.owner, owner_id = excluded.owner_id,
                         version = excluded.version, updated_at = now()`
            : tx``
        }
                   returning id`
      if (!rows.length) fail(404, 'not_found', 'Object not found') // PUT of a missing or invisible object
      // Retry once: a concurrent delete may have pruned the folder between mkdir and write.
      await write().catch(write).catch(() =>
        fail(409, 'InvalidKey', `The key ${name} conflicts with an existing object or folder`)
      )
      return rows[0].id as string
    })
    return json(200, { Key: `${bucketId}/${name}`, Id: id })
  } catch (e) {
    await Deno.remove(temp).catch(() => {})
    await pruneEmptyDirs(ctx, bucketId, final)
    throw e
  }
}

// ---- download -------------------------------------------------------------------------

/** The type an object is served as: as uploaded, except HTML, served as text (as Supabase Storage does). */
function servedType(mimetype: string | undefined) {
  const type = mimetype || 'application/octet-stream'
  return /text\/html/i.test(type) ? 'text/plain' : type
}

async function serveFile(req: Request, ctx: StorageContext, bucket: string, name: string, meta: any) {
  let file: Deno.FsFile | undefined
  try {
    file = await Deno.open(filePath(ctx, bucket, name))
  } catch {
    fail(404, 'not_found', 'Object not found') // a row without its file
  }
  const headers: Record<string, string> = {
    'content-type': servedType(meta?.mimetype),
    'content-length': String((await file!.stat()).size),
    'cache-control': meta?.cacheControl ?? 'no-cache',
    // Browsers take the declared type as it is, never a guess from the bytes.
    'x-content-type-options': 'nosniff',
  }
  if (meta?.eTag) headers.etag = meta.eTag
  if (meta?.lastModified) headers['last-modified'] = new Date(meta.lastModified).toUTCString()
  const download = new URL(req.url).searchParams.get('download')
  if (download !== null) {
    headers['content-disposition'] = `attachment; filename="${
      encodeURIComponent(download || name.split('/').pop()!)
    }"`
  }
  if (req.method === 'HEAD') file!.close()
  return new Response(req.method === 'HEAD' ? null : file!.readable, { status: 200, headers })
}

async function downloadPublic(req: Request, ctx: StorageContext, bucketId: string, name: string) {
  const [b] = await ctx.sql`select public from storage.buckets where id = ${bucketId}`
  if (!b?.public) fail(400, 'not_found', 'Bucket not found or not public') // Supabase answers 400 here
  const [row] = await ctx
    .sql`select metadata from storage.objects where bucket_id = ${bucketId} and name = ${name}`
  if (!row) fail(404, 'not_found', 'Object not found')
  return serveFile(req, ctx, bucketId, name, row.metadata)
}

async function download(req: Request, ctx: StorageContext, c: Claims, bucketId: string, name: string) {
  const [row] = await asCaller(
    ctx,
    c,
    (tx) => tx`select metadata from storage.objects where bucket_id = ${bucketId} and name = ${name}`,
  )
  if (!row) fail(404, 'not_found', 'Object not found')
  return serveFile(req, ctx, bucketId, name, row.metadata)
}

// ---- delete ---------------------------------------------------------------------------

/** Deletes the rows RLS lets the caller delete, then their files. */
async function deleteObjects(ctx: StorageContext, c: Claims, bucketId: string, names: string[]) {
  const rows = await asCaller(ctx, c, (tx) =>
    tx`
    delete from storage.objects where bucket_id = ${bucketId} and name = any(${names}::text[])
    returning id, bucket_id, name, owner, owner_id, metadata, user_metadata, version,
              created_at, updated_at, last_accessed_at`)
  for (const r of rows) {
    const p = filePath(ctx, bucketId, r.name)
    await Deno.remove(p).catch(() => {})
    await pruneEmptyDirs(ctx, bucketId, p)
  }
  return rows
}

async function removeMany(ctx: StorageContext, c: Claims, bucketId: string, body: any) {
  const prefixes = body?.prefixes
  if (!Array.isArray(prefixes) || prefixes.length === 0 || prefixes.length > 1000) {
    fail(400, 'InvalidRequest', 'prefixes must be an array of 1 to 1000 keys')
  }
  const names = prefixes.map((p: unknown) => checkKey(typeof p === 'string' ? p.replace(/^\/+/, '') : p))
  return json(200, await deleteObjects(ctx, c, bucketId, names))
}

async function removeOne(ctx: StorageContext, c: Claims, bucketId: string, name: string) {
  const rows = await deleteObjects(ctx, c, bucketId, [name])
  return rows.length
    ? json(200, { message: 'Successfully deleted' })
    : fail(404, 'not_found', 'Object not found')
}

// ---- list -----------------------------------------------------------------------------

const SORTABLE = ['name', 'updated_at', 'created_at', 'last_accessed_at']

/** The entries directly under a prefix: its objects, and its folders (id null). */
async function list(ctx: StorageContext, c: Claims, bucketId: string, body: any) {
  const dir = checkKey(typeof body?.prefix === 'string' ? body.prefix.replace(/^\/+|\/+$/g, '') : '', true)
  const prefix = dir ? `${dir}/` : ''
  const search = checkSearch(typeof body?.search === 'string' ? body.search : '')
  const column = SORTABLE.find((k) => k === body?.sortBy?.column) ?? 'name'
  const desc = String(body?.sortBy?.order).toLowerCase() === 'desc'
  const rows = await asCaller(ctx, c, (tx) =>
    tx`
    with under as (
      select substr(name, char_length(${prefix}) + 1) as rest, id, updated_at, created_at, last_accessed_at, metadata
      from storage.objects where bucket_id = ${bucketId} and starts_with(name, ${prefix})
    ), entries as (
      select distinct split_part(rest, '/', 1) as name, null::uuid as id, null::timestamptz as updated_at,
             null::timestamptz as created_at, null::timestamptz as last_accessed_at, null::jsonb as metadata
      from under where strpos(rest, '/') > 0
      union all
      select rest, id, updated_at, created_at, last_accessed_at, metadata from under where strpos(rest, '/') = 0
    )
    select * from entries
    where ${search ? tx`name ilike ${likeEscape(search) + '%'}` : tx`true`}
    order by ${column === 'name' ? tx`name collate "C"` : tx(column)} ${
      desc ? tx`desc` : tx`asc`
    }, name collate "C"
    limit ${intParam(body?.limit, 100)} offset ${intParam(body?.offset, 0)}`)
  return json(200, rows)
}

// ---- small helpers --------------------------------------------------------------------

const likeEscape = (s: string) => s.replace(/[\\%_]/g, (ch) => `\\${ch}`)

/** A search term (bucket and object lists): no control characters (Postgres refuses a NUL). */
function checkSearch<T extends string | null>(search: T): T {
  // deno-lint-ignore no-control-regex
  if (search && /[\x00-\x1f\x7f]/.test(search)) fail(400, 'InvalidRequest', 'search: must not contain control characters')
  return search
}

function intParam(v: unknown, dflt: number): number {
  const n = Number(v ?? dflt)
  return Number.isInteger(n) && n >= 0 ? Math.min(n, 10000) : dflt
}

/** A JSON body (list, remove), at most JSON_BODY_LIMIT. */
async function readJson(req: Request): Promise<any> {
  const text = new TextDecoder().decode(await readLimited(req, JSON_BODY_LIMIT))
  try {
    return text ? JSON.parse(text) : {}
  } catch {
    return fail(400, 'InvalidRequest', 'The body is not valid JSON')
  }
}
