// Objects: upload, download and delete.
// Files live on disk under <rootDir>/<bucket>/<name>, rows in storage.objects. Bucket settings
// (limits, public) are read as the superuser (buckets.ts).
import { createHash } from 'node:crypto'
import { BodyTooLarge, readLimited } from '../body.ts'
import { parseMultipart } from '../multipart.ts'
import { asCaller, type Claims, ownerUuid, type Tx, type Writer } from './caller.ts'
import { bucketSettings } from './buckets.ts'
import { fail, json, StorageError } from './errors.ts'
import { checkKey, filePath, parentDir, pruneEmptyDirs, type StorageContext } from './keys.ts'

const GLOBAL_SIZE_LIMIT = 50 * 1024 * 1024 // Supabase's default global upload limit (50 MiB)
const MULTIPART_ENVELOPE = 64 * 1024 // room for a form's boundaries, part headers and small fields

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
  const xMetadata = req.headers.get('x-metadata')
  let file = {
    bytes: body as Uint8Array,
    mimetype: type,
    cacheControl: req.headers.get('cache-control')?.match(/max-age=(\d+)/)?.[1],
    userMetadata: xMetadata === null ? undefined : userMetadataOf(fromBase64(xMetadata)),
  }
  if (boundary) {
    const parts = parseMultipart(
      body,
      boundary,
      () => fail(400, 'InvalidRequest', 'Malformed multipart body'),
    )
    const part = parts.find((p) => p.filename !== undefined) ?? parts.find((p) => p.name === '')
    if (!part) return fail(400, 'InvalidRequest', 'No file in the multipart body')
    const field = (name: string) => {
      const p = parts.find((p) => p.name === name && p.filename === undefined)
      return p && new TextDecoder().decode(p.content)
    }
    const metadata = field('metadata')
    file = {
      bytes: part.content,
      mimetype: part.type ?? '',
      cacheControl: field('cacheControl'),
      userMetadata: metadata === undefined ? undefined : userMetadataOf(metadata),
    }
  }
  if (file.bytes.length > limit) tooLarge()
  return {
    ...file,
    mimetype: file.mimetype || 'application/octet-stream',
    // Seconds only: storage-js sends "undefined" when uploadToSignedUrl is given no cacheControl.
    cacheControl: /^\d+$/.test(file.cacheControl?.trim() ?? '') ? file.cacheControl!.trim() : '3600',
  }
}

function fromBase64(s: string): string {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Uint8Array.from(atob(s), (c) => c.charCodeAt(0)))
  } catch {
    return fail(400, 'InvalidRequest', 'x-metadata must be base64-encoded JSON')
  }
}

/** The object's own metadata (storage-js `metadata`: a form field, or the x-metadata header). */
function userMetadataOf(text: string): Record<string, unknown> {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch { /* refused below */ }
  if (!value || typeof value !== 'object' || Array.isArray(value)) {
    fail(400, 'InvalidRequest', 'metadata must be a JSON object')
  }
  return value as Record<string, unknown>
}

export const md5ETag = (bytes: Uint8Array) => `"${createHash('md5').update(bytes).digest('hex')}"`

/**
 * Stores the request's file as <bucket>/<name>: a new row (mode insert; with upsert it may
 * replace one) or an existing row's new content (mode update), written by `w`.
 */
export async function upload(
  req: Request,
  ctx: StorageContext,
  w: Writer,
  bucketId: string,
  name: string,
  o: { mode: 'insert' | 'update'; upsert: boolean },
) {
  if (name.length > 1024) fail(400, 'InvalidKey', 'Invalid key: longer than 1024 characters')
  const bucket = await bucketSettings(ctx, bucketId)
  const file = await readUpload(req, Math.min(bucket.size_limit ?? GLOBAL_SIZE_LIMIT, GLOBAL_SIZE_LIMIT))
  if (!mimeAllowed(file.mimetype, bucket.allowed_mime_types)) {
    fail(415, 'invalid_mime_type', `mime type ${file.mimetype} is not supported`)
  }
  const metadata = {
    eTag: md5ETag(file.bytes),
    size: file.bytes.length,
    mimetype: file.mimetype,
    cacheControl: `max-age=${file.cacheControl}`,
    lastModified: new Date().toISOString(),
    contentLength: file.bytes.length,
    httpStatusCode: 200,
  }
  const owner = ownerUuid(w.sub)
  const id = await writeObject(
    ctx,
    w,
    bucketId,
    name,
    (temp) => Deno.writeFile(temp, file.bytes),
    async (tx) => {
      const userMetadata = file.userMetadata === undefined ? null : tx.json(file.userMetadata as never)
      const rows = o.mode === 'update'
        ? await tx`update storage.objects
                 set metadata = ${tx.json(metadata)}, user_metadata = ${userMetadata}, owner = ${owner},
                     owner_id = ${w.sub}, updated_at = now(), version = gen_random_uuid()::text
                 where bucket_id = ${bucketId} and name = ${name} returning id`
        : await tx`insert into storage.objects (bucket_id, name, owner, owner_id, metadata, user_metadata, version)
                 values (${bucketId}, ${name}, ${owner}, ${w.sub}, ${tx.json(metadata)}, ${userMetadata},
                         gen_random_uuid()::text)
                 ${
          o.upsert
            ? tx`on conflict (bucket_id, name) do update
                   set metadata = excluded.metadata, user_metadata = excluded.user_metadata, owner = excluded.owner,
                       owner_id = excluded.owner_id, version = excluded.version, updated_at = now()`
            : tx``
        }
                 returning id`
      if (!rows.length) fail(404, 'not_found', 'Object not found') // an update of a missing or invisible object
      return rows[0].id as string
    },
  )
  return { Key: `${bucketId}/${name}`, Id: id }
}

/**
 * Runs the row statement as `w`, then writes the file inside the same transaction, once the
 * statement has passed RLS and the unique key: a refusal leaves neither a row nor a file (nor
 * a folder). `fill` writes the content under a temporary name beside the file; a rename makes
 * it visible whole.
 */
export async function writeObject<T>(
  ctx: StorageContext,
  w: Writer,
  bucketId: string,
  name: string,
  fill: (temp: string) => Promise<void>,
  statement: (tx: Tx) => Promise<T>,
): Promise<T> {
  const final = filePath(ctx, bucketId, name)
  const temp = `${final}.${crypto.randomUUID()}.upload`
  const write = async () => {
    await Deno.mkdir(parentDir(final), { recursive: true })
    await fill(temp)
    await Deno.rename(temp, final) // atomic: a reader sees the old file or the new one
  }
  try {
    return await w.run(async (tx) => {
      const result = await statement(tx)
      // Retry once: a concurrent delete may have pruned the folder between mkdir and write.
      await write().catch(write).catch((e) => {
        if (e instanceof StorageError) throw e // the content's own refusal (a copy's missing source)
        fail(409, 'InvalidKey', `The key ${name} conflicts with an existing object or folder`)
      })
      return result
    })
  } catch (e) {
    await Deno.remove(temp).catch(() => {})
    await pruneEmptyDirs(ctx, bucketId, final)
    throw e
  }
}

// ---- download -------------------------------------------------------------------------

/** The type an object is served as: as uploaded, except HTML, served as text (as Supabase Storage does). */
export function servedType(mimetype: string | undefined) {
  const type = mimetype || 'application/octet-stream'
  return /text\/html/i.test(type) ? 'text/plain' : type
}

/** `Content-Disposition` for `?download` / `?download=name` (the object's own name when empty). */
export function downloadHeader(req: Request, name: string): Record<string, string> {
  const download = new URL(req.url).searchParams.get('download')
  if (download === null) return {}
  return {
    'content-disposition': `attachment; filename="${encodeURIComponent(download || name.split('/').pop()!)}"`,
  }
}

/** Opens an object's file; a row without its file is Object not found. */
export async function openObject(ctx: StorageContext, bucket: string, name: string): Promise<Deno.FsFile> {
  try {
    return await Deno.open(filePath(ctx, bucket, name))
  } catch {
    return fail(404, 'not_found', 'Object not found')
  }
}

export async function serveFile(req: Request, ctx: StorageContext, bucket: string, name: string, meta: any) {
  const file = await openObject(ctx, bucket, name)
  const size = (await file.stat()).size
  const headers: Record<string, string> = {
    'content-type': servedType(meta?.mimetype),
    'content-length': String(size),
    'cache-control': meta?.cacheControl ?? 'no-cache',
    'accept-ranges': 'bytes',
    // Browsers take the declared type as it is, never a guess from the bytes.
    'x-content-type-options': 'nosniff',
    ...downloadHeader(req, name),
  }
  if (meta?.eTag) headers.etag = meta.eTag
  if (meta?.lastModified) headers['last-modified'] = new Date(meta.lastModified).toUTCString()
  const done = (status: number, body: BodyInit | null = null) => {
    if (body === null) file.close()
    return new Response(body, { status, headers })
  }
  // A browser's cached copy is still good: 304 without a body.
  const ifNoneMatch = req.headers.get('if-none-match')
  if (
    meta?.eTag && ifNoneMatch &&
    ifNoneMatch.split(',').some((t) => t.trim().replace(/^W\//, '') === meta.eTag)
  ) {
    delete headers['content-length']
    return done(304)
  }
  const range = req.headers.get('range')
  if (range && req.method !== 'HEAD') {
    const r = byteRange(range, size)
    if (r === 'unsatisfiable') {
      file.close()
      return json(416, {
        statusCode: '416',
        error: 'InvalidRange',
        message: 'The requested range is not satisfiable',
      }, {
        'content-range': `bytes */${size}`,
      })
    }
    if (r) {
      headers['content-range'] = `bytes ${r.start}-${r.end}/${size}`
      headers['content-length'] = String(r.end - r.start + 1)
      await file.seek(r.start, Deno.SeekMode.Start)
      return done(206, limitStream(file.readable, r.end - r.start + 1))
    }
  }
  return done(200, req.method === 'HEAD' ? null : file.readable)
}

/** One `bytes=` range (a list of several is served whole, as a server may); null to ignore it. */
function byteRange(header: string, size: number): { start: number; end: number } | 'unsatisfiable' | null {
  const m = header.trim().match(/^bytes=(\d*)-(\d*)$/)
  if (!m || (m[1] === '' && m[2] === '')) return null
  if (m[1] === '') {
    const suffix = Number(m[2])
    if (suffix === 0) return 'unsatisfiable'
    return { start: Math.max(0, size - suffix), end: size - 1 }
  }
  const start = Number(m[1])
  const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1)
  if (start >= size || end < start) return 'unsatisfiable'
  return { start, end }
}

/** The first `length` bytes of a stream, then it is cancelled (closing the file). */
function limitStream(stream: ReadableStream<Uint8Array>, length: number): ReadableStream<Uint8Array> {
  const reader = stream.getReader()
  let left = length
  return new ReadableStream({
    async pull(controller) {
      const { done, value } = await reader.read()
      if (done) return controller.close()
      const chunk = value.length > left ? value.subarray(0, left) : value
      left -= chunk.length
      controller.enqueue(chunk)
      if (left === 0) {
        controller.close()
        await reader.cancel()
      }
    },
    cancel: () => reader.cancel(),
  })
}

/** The object's row read as the superuser, in a public bucket only (400 otherwise, as Supabase answers). */
export async function publicObject(
  ctx: StorageContext,
  bucketId: string,
  name: string,
  columns = 'metadata',
) {
  const [b] = await ctx.sql`select public from storage.buckets where id = ${bucketId}`
  if (!b?.public) fail(400, 'not_found', 'Bucket not found or not public')
  const [row] = await ctx.sql`select ${ctx.sql.unsafe(columns)} from storage.objects
                              where bucket_id = ${bucketId} and name = ${name}`
  return row ?? fail(404, 'not_found', 'Object not found')
}

/** The object's row as the caller sees it under RLS, or Object not found. */
export async function visibleObject(
  ctx: StorageContext,
  c: Claims,
  bucketId: string,
  name: string,
  columns = 'metadata',
) {
  const [row] = await asCaller(
    ctx,
    c,
    (tx) =>
      tx`select ${tx.unsafe(columns)} from storage.objects where bucket_id = ${bucketId} and name = ${name}`,
  )
  return row ?? fail(404, 'not_found', 'Object not found')
}

export async function downloadPublic(req: Request, ctx: StorageContext, bucketId: string, name: string) {
  const row = await publicObject(ctx, bucketId, name)
  return serveFile(req, ctx, bucketId, name, row.metadata)
}

export async function download(req: Request, ctx: StorageContext, c: Claims, bucketId: string, name: string) {
  const row = await visibleObject(ctx, c, bucketId, name)
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

export async function removeMany(ctx: StorageContext, c: Claims, bucketId: string, body: any) {
  const prefixes = body?.prefixes
  if (!Array.isArray(prefixes) || prefixes.length === 0 || prefixes.length > 1000) {
    fail(400, 'InvalidRequest', 'prefixes must be an array of 1 to 1000 keys')
  }
  const names = prefixes.map((p: unknown) => checkKey(typeof p === 'string' ? p.replace(/^\/+/, '') : p))
  return json(200, await deleteObjects(ctx, c, bucketId, names))
}

export async function removeOne(ctx: StorageContext, c: Claims, bucketId: string, name: string) {
  const rows = await deleteObjects(ctx, c, bucketId, [name])
  return rows.length
    ? json(200, { message: 'Successfully deleted' })
    : fail(404, 'not_found', 'Object not found')
}
