// Buckets: list, read, create, update, empty and delete, each as the caller (RLS on
// storage.buckets and storage.objects decides, as on Supabase; the service role passes).
// A bucket's settings (limits, public) are read as the superuser, as Supabase Storage does, so
// uploads need no bucket policy.
import { asCaller, type Claims, ownerUuid, type Tx } from './caller.ts'
import { fail, json } from './errors.ts'
import {
  bucketDir,
  checkSearch,
  checkSegment,
  filePath,
  intParam,
  likeEscape,
  type StorageContext,
} from './keys.ts'

const bucketColumns = (tx: Tx) =>
  tx`id, name, owner, owner_id, public, file_size_limit::float8 as file_size_limit, allowed_mime_types,
     created_at, updated_at, 'STANDARD' as type`

export async function listBuckets(ctx: StorageContext, c: Claims, q: URLSearchParams) {
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

export async function getBucket(ctx: StorageContext, c: Claims, id: string) {
  const [row] = await asCaller(
    ctx,
    c,
    (tx) => tx`select ${bucketColumns(tx)} from storage.buckets where id = ${id}`,
  )
  return row ? json(200, row) : fail(404, 'Bucket not found', 'Bucket not found')
}

/** A bucket's settings, read as the superuser (as Storage does); 404 when there is none. */
export async function bucketSettings(ctx: StorageContext, bucketId: string) {
  const [b] = await ctx.sql`
    select public, file_size_limit::float8 as size_limit, allowed_mime_types from storage.buckets where id = ${bucketId}`
  if (!b) fail(404, 'Bucket not found', 'Bucket not found')
  return b as { public: boolean; size_limit: number | null; allowed_mime_types: string[] | null }
}

// ---- create, update, empty, delete --------------------------------------------------------

const UNITS: Record<string, number> = { B: 1, KB: 1024, MB: 1024 ** 2, GB: 1024 ** 3 }

/** file_size_limit as Storage takes it: bytes, or "20GB" / "20MB" / "30KB" / "3B"; null for none. */
function sizeLimit(v: unknown): number | null | undefined {
  if (v === undefined) return undefined
  if (v === null || v === 0 || v === '') return null
  if (typeof v === 'number' && Number.isInteger(v) && v > 0) return v
  const m = typeof v === 'string' ? v.trim().toUpperCase().match(/^(\d+(?:\.\d+)?)\s*(B|KB|MB|GB)?$/) : null
  if (!m) return fail(400, 'InvalidRequest', 'Invalid file size format, hint: use 20GB / 20MB / 30KB / 3B')
  return Math.round(Number(m[1]) * UNITS[m[2] ?? 'B'])
}

function mimeTypes(v: unknown): string[] | null | undefined {
  if (v === undefined) return undefined
  if (v === null) return null
  if (!Array.isArray(v) || v.some((t) => typeof t !== 'string' || !/^[\w.+-]+\/[\w.+*-]+$/.test(t))) {
    fail(400, 'InvalidRequest', 'allowed_mime_types must be a list of types such as image/png or image/*')
  }
  return (v as string[]).length ? v as string[] : null
}

/** Storage's bucket-name rule, and a name that is also a safe folder name on disk. */
function bucketName(v: unknown): string {
  if (typeof v !== 'string' || !v || v.length > 100 || !/^[\w!\-.*'() &$@=;:+,?]+$/.test(v)) {
    fail(400, 'Invalid Input', 'Bucket name invalid')
  }
  checkSegment(v as string)
  return v as string
}

/** POST /bucket {name, id?, public?, file_size_limit?, allowed_mime_types?} → {name}. */
export async function createBucket(ctx: StorageContext, c: Claims, body: any) {
  const name = bucketName(body?.name)
  const id = body?.id === undefined ? name : bucketName(body.id)
  const owner = typeof c.sub === 'string' ? c.sub : null
  await asCaller(
    ctx,
    c,
    (tx) =>
      tx`insert into storage.buckets (id, name, owner, owner_id, public, file_size_limit, allowed_mime_types)
       values (${id}, ${name}, ${ownerUuid(owner)}, ${owner},
               ${body?.public === true}, ${sizeLimit(body?.file_size_limit) ?? null}, ${
        mimeTypes(body?.allowed_mime_types) ?? null
      })`,
  )
  return json(200, { name: id })
}

/** PUT /bucket/<id> {public?, file_size_limit?, allowed_mime_types?}. */
export async function updateBucket(ctx: StorageContext, c: Claims, id: string, body: any) {
  const limit = sizeLimit(body?.file_size_limit)
  const types = mimeTypes(body?.allowed_mime_types)
  const rows = await asCaller(ctx, c, (tx) =>
    tx`update storage.buckets set
         public = ${typeof body?.public === 'boolean' ? tx`${body.public}` : tx`public`},
         file_size_limit = ${limit === undefined ? tx`file_size_limit` : tx`${limit}`},
         allowed_mime_types = ${types === undefined ? tx`allowed_mime_types` : tx`${types}::text[]`},
         updated_at = now()
       where id = ${id} returning id`)
  return rows.length
    ? json(200, { message: 'Successfully updated' })
    : fail(404, 'Bucket not found', 'Bucket not found')
}

/** POST /bucket/<id>/empty: every object and its file. The service role only, as Storage
 *  registers this route (its role check comes before the bucket is looked up). */
export async function emptyBucket(ctx: StorageContext, c: Claims, id: string) {
  if (c.role !== 'service_role') fail(403, 'Unauthorized', 'Access denied: Invalid role')
  await bucketSettings(ctx, id)
  const rows = await asCaller(
    ctx,
    c,
    (tx) => tx`delete from storage.objects where bucket_id = ${id} returning name`,
  )
  for (const r of rows) {
    try {
      await Deno.remove(filePath(ctx, id, r.name))
    } catch { /* no file, or a name no file can have */ }
  }
  await removeEmptyFolders(bucketDir(ctx, id))
  return json(200, { message: 'Successfully emptied' })
}

/**
 * DELETE /bucket/<id>: only an empty bucket, as Storage refuses the others. The delete runs as
 * the caller first, so whether a bucket has objects (409) is told only to who may delete it; to
 * anyone else it is not found (404), as a bucket they cannot see is. The objects' foreign key
 * refuses a bucket that still has any.
 */
export async function deleteBucket(ctx: StorageContext, c: Claims, id: string) {
  await bucketSettings(ctx, id)
  const rows = await asCaller(ctx, c, (tx) => tx`delete from storage.buckets where id = ${id} returning id`)
    .catch((e) => {
      if ((e as { code?: string }).code === '23503') {
        fail(409, 'InvalidRequest', 'The bucket you tried to delete is not empty')
      }
      throw e
    })
  if (!rows.length) fail(404, 'Bucket not found', 'Bucket not found') // not the caller's to delete
  await Deno.remove(bucketDir(ctx, id), { recursive: true }).catch(() => {})
  return json(200, { message: 'Successfully deleted' })
}

/** Removes the empty folders under a bucket's folder (left by emptying it). */
async function removeEmptyFolders(dir: string): Promise<boolean> {
  let empty = true
  try {
    for await (const e of Deno.readDir(dir)) {
      if (!e.isDirectory || !(await removeEmptyFolders(`${dir}/${e.name}`))) empty = false
    }
  } catch {
    return false
  }
  return empty && await Deno.remove(dir).then(() => true, () => false)
}
