// A small local copy of Supabase Storage's HTTP API (what supabase-js's storage client uses):
// files on disk under <rootDir>/<bucket>/<name>, rows in storage.objects. Every row read or
// write runs as the caller's Postgres role with its JWT claims, so storage RLS policies apply
// exactly as on Supabase. Bucket limits are read as the superuser, as Supabase Storage does.
import type postgres from 'postgres'
import { errors as joseErrors, jwtVerify } from 'jose'
import { createHash } from 'node:crypto'

export interface StorageContext {
  sql: postgres.Sql
  jwtSecret: string
  rootDir: string
}

type Claims = Record<string, unknown> & { role: string; sub?: string }
type Tx = postgres.TransactionSql

const ROLES = new Set(['anon', 'authenticated', 'service_role'])
const GLOBAL_SIZE_LIMIT = 50 * 1024 * 1024 // Supabase's default global upload limit (50 MiB)
// First segments after /object that are routes, not buckets, in Supabase Storage.
const UNSUPPORTED = new Set(['sign', 'move', 'copy', 'upload', 'info', 'list-v2'])

class StorageError extends Error {
  constructor(readonly status: number, readonly error: string, message: string) {
    super(message)
  }
}
const fail = (status: number, error: string, message: string): never => {
  throw new StorageError(status, error, message)
}
const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } })
const errorResponse = (e: StorageError) =>
  json(e.status, { statusCode: String(e.status), error: e.error, message: e.message })

export async function handleStorage(req: Request, path: string, ctx: StorageContext): Promise<Response> {
  try {
    return await route(req, path, ctx)
  } catch (e) {
    if (e instanceof StorageError) return errorResponse(e)
    const pg = e as { code?: string; message?: string }
    // Postgres errors the caller can cause: RLS refusals, duplicates, timeouts.
    if (pg.code === '42501') return errorResponse(new StorageError(403, 'Unauthorized', 'new row violates row-level security policy'))
    if (pg.code === '23505') return errorResponse(new StorageError(409, 'Duplicate', 'The resource already exists'))
    if (pg.code === '57014') return errorResponse(new StorageError(504, 'DatabaseTimeout', 'The query timed out'))
    console.error('storage error', e)
    return errorResponse(new StorageError(500, 'internal', 'Internal Server Error'))
  }
}

async function route(req: Request, path: string, ctx: StorageContext): Promise<Response> {
  const url = new URL(req.url)
  const [area, ...rest] = splitPath(path)
  const m = req.method
  if (area === 'bucket' && m === 'GET' && rest.length <= 1) {
    const caller = await identify(req, ctx)
    return rest.length ? getBucket(ctx, caller, rest[0]) : listBuckets(ctx, caller, url.searchParams)
  }
  if (area === 'object' && rest.length) {
    const [first, ...more] = rest
    if (UNSUPPORTED.has(first)) fail(501, 'not_implemented', `/object/${first} is not supported by the local object store`)
    if (first === 'list' && m === 'POST' && more.length === 1) {
      return list(ctx, await identify(req, ctx), more[0], await readJson(req))
    }
    if (first === 'public' && (m === 'GET' || m === 'HEAD') && more.length >= 2) {
      return downloadPublic(req, ctx, more[0], more.slice(1))
    }
    const target = first === 'authenticated' && (m === 'GET' || m === 'HEAD') ? more : rest
    const [bucket, ...name] = target
    if (m === 'DELETE' && target.length === 1) return removeMany(ctx, await identify(req, ctx), bucket, await readJson(req))
    if (target.length >= 2) {
      const caller = await identify(req, ctx)
      if (m === 'POST' || m === 'PUT') return upload(req, ctx, caller, bucket, name)
      if (m === 'GET' || m === 'HEAD') return download(req, ctx, caller, bucket, name)
      if (m === 'DELETE') return removeOne(ctx, caller, bucket, name)
    }
  }
  return fail(404, 'not_found', `Route ${m}:/storage/v1${path} not found`)
}

// ---- paths --------------------------------------------------------------------------

/** Splits and percent-decodes the request path; refuses traversal, empty and odd segments. */
function splitPath(path: string): string[] {
  let decoded: string
  try {
    decoded = decodeURIComponent(path)
  } catch {
    return fail(400, 'InvalidKey', 'The path is not valid percent-encoding')
  }
  if (!decoded.startsWith('/')) fail(400, 'InvalidKey', 'Invalid path')
  const segs = decoded.slice(1).split('/')
  for (const s of segs) checkSegment(s)
  return segs
}

function checkSegment(s: string) {
  // deno-lint-ignore no-control-regex
  if (!s || s === '.' || s === '..' || /[\x00-\x1f\x7f\\]/.test(s)) {
    fail(400, 'InvalidKey', `Invalid key: path segments must be non-empty, not "." or "..", without control characters`)
  }
}

/** Checks a key given in a JSON body (remove, list) with the same rules as URL keys. */
function checkKey(key: unknown, allowEmpty = false): string {
  if (typeof key !== 'string') return fail(400, 'InvalidKey', 'Keys must be strings')
  if (allowEmpty && key === '') return key
  if (key.length > 1024) fail(400, 'InvalidKey', 'Key is too long')
  key.split('/').forEach(checkSegment)
  return key
}

function filePath(ctx: StorageContext, bucket: string, name: string): string {
  const root = ctx.rootDir.replace(/\/+$/, '')
  const p = `${root}/${bucket}/${name}`
  // Belt and braces: segments were checked, but never leave the root.
  if (!p.startsWith(`${root}/`) || p.split('/').some((s) => s === '..')) fail(400, 'InvalidKey', 'Invalid key')
  return p
}

// ---- identity -----------------------------------------------------------------------

const keys = new Map<string, Uint8Array>()

/** The caller's verified claims, from `Authorization: Bearer` or else the `apikey` header. */
async function identify(req: Request, ctx: StorageContext): Promise<Claims> {
  const bearer = req.headers.get('authorization')?.match(/^Bearer\s+(\S+)$/i)?.[1]
  const token = bearer ?? req.headers.get('apikey')
  if (!token) return fail(400, 'Error', "headers must have required property 'authorization'")
  let key = keys.get(ctx.jwtSecret)
  if (!key) keys.set(ctx.jwtSecret, key = new TextEncoder().encode(ctx.jwtSecret))
  let claims: Record<string, unknown>
  try {
    claims = (await jwtVerify(token, key, { algorithms: ['HS256'] })).payload
  } catch (e) {
    return fail(403, 'Unauthorized', e instanceof joseErrors.JWTExpired ? 'jwt expired' : 'invalid signature')
  }
  // The role becomes `set local role`: only the three API roles, never e.g. postgres.
  if (typeof claims.role !== 'string' || !ROLES.has(claims.role)) fail(403, 'Unauthorized', 'Invalid JWT role')
  return claims as Claims
}

/** Runs fn in a transaction as the caller, the way PostgREST does, so RLS applies. */
function asCaller<T>(ctx: StorageContext, c: Claims, fn: (tx: Tx) => Promise<T>): Promise<T> {
  return ctx.sql.begin(async (tx) => {
    await tx.unsafe(`set local role ${c.role}`) // validated against ROLES in identify()
    await tx`select set_config('request.jwt.claims', ${JSON.stringify(c)}, true),
                    set_config('request.jwt.claim.sub', ${typeof c.sub === 'string' ? c.sub : ''}, true),
                    set_config('request.jwt.claim.role', ${c.role}, true)`
    return await fn(tx)
  }) as Promise<T>
}

// ---- buckets ------------------------------------------------------------------------

interface Bucket {
  id: string
  public: boolean
  file_size_limit: number | null
  allowed_mime_types: string[] | null
}

/** The bucket's settings, read as the superuser like Supabase Storage does for uploads. */
async function findBucket(ctx: StorageContext, id: string): Promise<Bucket> {
  const [b] = await ctx.sql<Bucket[]>`
    select id, public, file_size_limit::float8 as file_size_limit, allowed_mime_types
    from storage.buckets where id = ${id}`
  return b ?? fail(404, 'Bucket not found', 'Bucket not found')
}

const bucketColumns = (tx: Tx) =>
  tx`id, name, owner, owner_id, public, file_size_limit::float8 as file_size_limit, allowed_mime_types,
     created_at, updated_at, 'STANDARD' as type`

async function listBuckets(ctx: StorageContext, c: Claims, q: URLSearchParams) {
  const sortColumn = ['id', 'name', 'created_at', 'updated_at'].includes(q.get('sortColumn') ?? '') ? q.get('sortColumn')! : 'name'
  const rows = await asCaller(ctx, c, (tx) => tx`
    select ${bucketColumns(tx)} from storage.buckets
    where ${q.get('search') ? tx`name ilike ${'%' + likeEscape(q.get('search')!) + '%'}` : tx`true`}
    order by ${tx(sortColumn)} ${q.get('sortOrder') === 'desc' ? tx`desc` : tx`asc`}
    limit ${intParam(q.get('limit'), 1000)} offset ${intParam(q.get('offset'), 0)}`)
  return json(200, rows)
}

async function getBucket(ctx: StorageContext, c: Claims, id: string) {
  const [row] = await asCaller(ctx, c, (tx) => tx`select ${bucketColumns(tx)} from storage.buckets where id = ${id}`)
  return row ? json(200, row) : fail(404, 'Bucket not found', 'Bucket not found')
}

// ---- upload -------------------------------------------------------------------------

function mimeAllowed(mime: string, allowed: string[] | null): boolean {
  if (!allowed || allowed.length === 0) return true
  const [type, sub] = mime.split(';')[0].trim().toLowerCase().split('/')
  return allowed.some((a) => {
    const [at, as] = a.trim().toLowerCase().split('/')
    return at === type && (as === '*' || as === sub)
  })
}

interface Incoming {
  bytes: Uint8Array
  mimetype: string
  cacheControl: string
}

/** Raw body (Content-Type header) or a multipart form with the file in its file part. */
async function readUpload(req: Request, limit: number): Promise<Incoming> {
  const type = req.headers.get('content-type') ?? ''
  const declared = Number(req.headers.get('content-length') ?? 'NaN')
  const tooLarge = () => fail(413, 'Payload too large', 'The object exceeded the maximum allowed size')
  const boundary = /^multipart\/form-data/i.test(type) ? type.match(/boundary="?([^";]+)"?/i)?.[1] : undefined
  // Room for the multipart envelope before the file part itself is measured.
  if (declared > (boundary ? limit + 64 * 1024 : limit)) tooLarge()
  const body = new Uint8Array(await req.arrayBuffer())
  if (boundary) {
    const parts = parseMultipart(body, boundary)
    const file = parts.find((p) => p.filename !== undefined) ?? parts.find((p) => p.name === '')
    if (!file) return fail(400, 'InvalidRequest', 'No file in the multipart body')
    if (file.content.length > limit) tooLarge()
    const cache = parts.find((p) => p.name === 'cacheControl' && p.filename === undefined)
    return {
      bytes: file.content,
      mimetype: file.type || 'application/octet-stream',
      cacheControl: cache ? new TextDecoder().decode(cache.content) : '3600',
    }
  }
  if (body.length > limit) tooLarge()
  return {
    bytes: body,
    mimetype: type || 'application/octet-stream',
    cacheControl: req.headers.get('cache-control')?.match(/max-age=(\d+)/)?.[1] ?? '3600',
  }
}

interface Part {
  name?: string
  filename?: string
  type?: string
  content: Uint8Array
}

/** A small multipart/form-data parser: Deno's Request.formData() drops the field named ''
 *  that storage-js puts the file under. */
function parseMultipart(body: Uint8Array, boundary: string): Part[] {
  const enc = new TextEncoder()
  const malformed = () => fail(400, 'InvalidRequest', 'Malformed multipart body')
  const delim = enc.encode(`\r\n--${boundary}`)
  const parts: Part[] = []
  // The first delimiter may sit at the very start, without the leading CRLF.
  let pos = indexOf(body, delim.subarray(2), 0)
  if (pos < 0) malformed()
  pos += delim.length - 2
  while (body[pos] !== 45 || body[pos + 1] !== 45) { // "--" closes the body
    if (body[pos] !== 13 || body[pos + 1] !== 10) malformed()
    const next = indexOf(body, delim, pos + 2)
    if (next < 0) malformed()
    const part = body.subarray(pos + 2, next)
    const split = indexOf(part, enc.encode('\r\n\r\n'), 0)
    if (split < 0) malformed()
    const head = new TextDecoder().decode(part.subarray(0, split))
    const disposition = head.match(/^content-disposition:(.*)$/im)?.[1] ?? ''
    parts.push({
      name: disposition.match(/\bname="([^"]*)"/i)?.[1],
      filename: disposition.match(/\bfilename="([^"]*)"/i)?.[1],
      type: head.match(/^content-type:\s*(.*?)\s*$/im)?.[1],
      content: part.subarray(split + 4),
    })
    pos = next + delim.length
  }
  return parts
}

function indexOf(hay: Uint8Array, needle: Uint8Array, from: number): number {
  for (let i = hay.indexOf(needle[0], from); i >= 0 && i + needle.length <= hay.length; i = hay.indexOf(needle[0], i + 1)) {
    let j = 1
    while (j < needle.length && hay[i + j] === needle[j]) j++
    if (j === needle.length) return i
  }
  return -1
}

async function upload(req: Request, ctx: StorageContext, c: Claims, bucketId: string, segs: string[]) {
  const name = segs.join('/')
  if (name.length > 1024) fail(400, 'InvalidKey', 'Key is too long')
  const bucket = await findBucket(ctx, bucketId)
  const limit = Math.min(bucket.file_size_limit ?? GLOBAL_SIZE_LIMIT, GLOBAL_SIZE_LIMIT)
  const file = await readUpload(req, limit)
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

  // The file is written only after the row statement passed RLS and the unique key, inside
  // the transaction: a refusal leaves neither a row nor a file (nor a folder).
  const final = filePath(ctx, bucketId, name)
  const temp = `${final}.${crypto.randomUUID()}.upload`
  try {
    const id = await asCaller(ctx, c, async (tx) => {
      const meta = tx.json(metadata)
      const rows = req.method === 'PUT'
        ? await tx`update storage.objects
                   set metadata = ${meta}, owner = ${owner}, owner_id = ${sub}, updated_at = now(),
                       version = gen_random_uuid()::text
                   where bucket_id = ${bucketId} and name = ${name} returning id`
        : await tx`insert into storage.objects (bucket_id, name, owner, owner_id, metadata, version)
                   values (${bucketId}, ${name}, ${owner}, ${sub}, ${meta}, gen_random_uuid()::text)
                   ${upsert ? tx`on conflict (bucket_id, name) do update
                     set metadata = excluded.metadata, owner = excluded.owner, owner_id = excluded.owner_id,
                         version = excluded.version, updated_at = now()` : tx``}
                   returning id`
      if (!rows.length) fail(404, 'not_found', 'Object not found') // PUT of a missing or invisible object
      try {
        await Deno.mkdir(final.slice(0, final.lastIndexOf('/')), { recursive: true })
        await Deno.writeFile(temp, file.bytes)
        await Deno.rename(temp, final) // atomic: readers see the old or the new file
      } catch {
        fail(409, 'InvalidKey', `The key ${name} conflicts with an existing object or folder on disk`)
      }
      return rows[0].id as string
    })
    return json(200, { Key: `${bucketId}/${name}`, Id: id })
  } catch (e) {
    await Deno.remove(temp).catch(() => {})
    await pruneEmptyDirs(ctx, bucketId, final)
    throw e
  }
}

/** Removes the folders above a file that are now empty, up to the bucket's folder, so that a
 *  later object may take a folder's name. Deno.remove fails on a folder that is not empty. */
async function pruneEmptyDirs(ctx: StorageContext, bucketId: string, file: string) {
  const stop = filePath(ctx, bucketId, '_').slice(0, -2)
  for (let d = file.slice(0, file.lastIndexOf('/')); d.length > stop.length; d = d.slice(0, d.lastIndexOf('/'))) {
    if (!(await Deno.remove(d).then(() => true, () => false))) return
  }
}

// ---- download -----------------------------------------------------------------------

async function serveFile(req: Request, ctx: StorageContext, bucket: string, name: string, meta: any) {
  const url = new URL(req.url)
  let file: Deno.FsFile
  try {
    file = await Deno.open(filePath(ctx, bucket, name))
  } catch {
    return fail(404, 'not_found', 'Object not found')
  }
  const size = (await file.stat()).size
  const headers: Record<string, string> = {
    'content-type': meta?.mimetype ?? 'application/octet-stream',
    'content-length': String(size),
    'cache-control': meta?.cacheControl ?? 'no-cache',
  }
  if (meta?.eTag) headers.etag = meta.eTag
  if (meta?.lastModified) headers['last-modified'] = new Date(meta.lastModified).toUTCString()
  if (url.searchParams.has('download')) {
    const as = url.searchParams.get('download') || name.split('/').pop()!
    headers['content-disposition'] = `attachment; filename="${encodeURIComponent(as)}"`
  }
  if (req.method === 'HEAD') {
    file.close()
    return new Response(null, { status: 200, headers })
  }
  return new Response(file.readable, { status: 200, headers })
}

async function downloadPublic(req: Request, ctx: StorageContext, bucketId: string, segs: string[]) {
  const name = segs.join('/')
  const [b] = await ctx.sql`select public from storage.buckets where id = ${bucketId}`
  if (!b?.public) fail(400, 'not_found', 'Bucket not found or not public') // Supabase answers 400 here
  const [row] = await ctx.sql`select metadata from storage.objects where bucket_id = ${bucketId} and name = ${name}`
  if (!row) fail(404, 'not_found', 'Object not found')
  return serveFile(req, ctx, bucketId, name, row.metadata)
}

async function download(req: Request, ctx: StorageContext, c: Claims, bucketId: string, segs: string[]) {
  const name = segs.join('/')
  const [row] = await asCaller(ctx, c, (tx) =>
    tx`select metadata from storage.objects where bucket_id = ${bucketId} and name = ${name}`)
  if (!row) fail(404, 'not_found', 'Object not found')
  return serveFile(req, ctx, bucketId, name, row.metadata)
}

// ---- delete -------------------------------------------------------------------------

const objectColumns = (tx: Tx) =>
  tx`id, bucket_id, name, owner, owner_id, metadata, user_metadata, version, created_at, updated_at, last_accessed_at`

/** Deletes the rows RLS lets the caller delete, then their files. */
async function deleteObjects(ctx: StorageContext, c: Claims, bucketId: string, names: string[]) {
  const rows = await asCaller(ctx, c, (tx) => tx`
    delete from storage.objects where bucket_id = ${bucketId} and name = any(${names}::text[])
    returning ${objectColumns(tx)}`)
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

async function removeOne(ctx: StorageContext, c: Claims, bucketId: string, segs: string[]) {
  const rows = await deleteObjects(ctx, c, bucketId, [segs.join('/')])
  return rows.length ? json(200, { message: 'Successfully deleted' }) : fail(404, 'not_found', 'Object not found')
}

// ---- list ---------------------------------------------------------------------------

const SORTABLE = new Set(['name', 'updated_at', 'created_at', 'last_accessed_at'])

/** Entries directly under the prefix: objects, and folders (id null) for deeper names. */
async function list(ctx: StorageContext, c: Claims, bucketId: string, body: any) {
  const raw = checkKey(typeof body?.prefix === 'string' ? body.prefix.replace(/^\/+|\/+$/g, '') : '', true)
  const prefix = raw ? `${raw}/` : ''
  const search = typeof body?.search === 'string' ? body.search : ''
  const column = SORTABLE.has(body?.sortBy?.column) ? body.sortBy.column : 'name'
  const desc = String(body?.sortBy?.order ?? '').toLowerCase() === 'desc'
  const rows = await asCaller(ctx, c, (tx) => tx`
    with under as (
      select split_part(substr(name, char_length(${prefix}) + 1), '/', 1) as entry,
             strpos(substr(name, char_length(${prefix}) + 1), '/') > 0 as is_folder,
             id, updated_at, created_at, last_accessed_at, metadata
      from storage.objects
      where bucket_id = ${bucketId} and starts_with(name, ${prefix})
    ), entries as (
      select distinct entry as name, null::uuid as id, null::timestamptz as updated_at,
             null::timestamptz as created_at, null::timestamptz as last_accessed_at, null::jsonb as metadata
      from under where is_folder
      union all
      select entry, id, updated_at, created_at, last_accessed_at, metadata from under where not is_folder
    )
    select * from entries
    where ${search ? tx`name ilike ${likeEscape(search) + '%'}` : tx`true`}
    order by ${column === 'name' ? tx`name collate "C"` : tx(column)} ${desc ? tx`desc` : tx`asc`}, name collate "C"
    limit ${intParam(body?.limit, 100)} offset ${intParam(body?.offset, 0)}`)
  return json(200, rows)
}

// ---- small helpers ------------------------------------------------------------------

function likeEscape(s: string) {
  return s.replace(/[\\%_]/g, (ch) => `\\${ch}`)
}

function intParam(v: unknown, dflt: number): number {
  const n = Number(v ?? dflt)
  return Number.isInteger(n) && n >= 0 ? Math.min(n, 10000) : dflt
}

async function readJson(req: Request): Promise<any> {
  const text = await req.text()
  if (!text) return {}
  return parseJson(text) ?? fail(400, 'InvalidRequest', 'The body is not valid JSON')
}

function parseJson(s: string): any {
  try {
    return JSON.parse(s)
  } catch {
    return null
  }
}
