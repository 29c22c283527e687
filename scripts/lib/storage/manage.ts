// Move, copy, info and exists, with Storage's permission checks: a move is an UPDATE of the
// source row to its new bucket and name (the update policy must allow the old row and the new
// one); a copy needs to read the source (select) and to insert the destination (insert, and
// update as well with x-upsert). Each runs as the caller, so RLS decides; the file follows
// inside the same transaction.
import { asCaller, callerWriter, type Claims, ownerUuid } from './caller.ts'
import { fail, json } from './errors.ts'
import { checkKey, filePath, parentDir, pruneEmptyDirs, type StorageContext } from './keys.ts'
import { bucketSettings } from './buckets.ts'
import { publicObject, servedType, visibleObject, writeObject } from './objects.ts'

function moveBody(body: any) {
  const bucketId = body?.bucketId
  if (typeof bucketId !== 'string' || !bucketId) {
    fail(400, 'Error', "body must have required property 'bucketId'")
  }
  for (const k of ['sourceKey', 'destinationKey']) {
    if (typeof body?.[k] !== 'string') fail(400, 'Error', `body must have required property '${k}'`)
  }
  const destinationBucket = typeof body.destinationBucket === 'string' && body.destinationBucket
    ? checkKey(body.destinationBucket)
    : bucketId
  return {
    bucketId: checkKey(bucketId) as string,
    sourceKey: checkKey(body.sourceKey),
    destinationKey: checkKey(body.destinationKey),
    destinationBucket,
  }
}

/** POST /object/move {bucketId, sourceKey, destinationKey, destinationBucket?}. */
export async function move(ctx: StorageContext, c: Claims, body: any) {
  const { bucketId, sourceKey, destinationKey, destinationBucket } = moveBody(body)
  await bucketSettings(ctx, destinationBucket)
  const sub = typeof c.sub === 'string' ? c.sub : null
  const from = filePath(ctx, bucketId, sourceKey)
  const to = filePath(ctx, destinationBucket, destinationKey)
  const id = await asCaller(ctx, c, async (tx) => {
    const [row] = await tx`
      update storage.objects
      set bucket_id = ${destinationBucket}, name = ${destinationKey}, owner = ${
      ownerUuid(sub)
    }, owner_id = ${sub},
          version = gen_random_uuid()::text, updated_at = now()
      where bucket_id = ${bucketId} and name = ${sourceKey}
      returning id`
    if (!row) fail(404, 'not_found', 'Object not found') // missing, or not the caller's to update
    if (from !== to) {
      await Deno.mkdir(parentDir(to), { recursive: true })
      await Deno.rename(from, to).catch(async () => {
        await pruneEmptyDirs(ctx, destinationBucket, to)
        fail(409, 'InvalidKey', `The key ${destinationKey} conflicts with an existing object or folder`)
      })
    }
    return row.id as string
  })
  await pruneEmptyDirs(ctx, bucketId, from)
  return json(200, { message: 'Successfully moved', Id: id, Key: destinationKey })
}

/** POST /object/copy {bucketId, sourceKey, destinationKey, destinationBucket?}; x-upsert: true
 *  may replace the destination. */
export async function copy(req: Request, ctx: StorageContext, c: Claims, body: any) {
  const { bucketId, sourceKey, destinationKey, destinationBucket } = moveBody(body)
  await bucketSettings(ctx, destinationBucket)
  const source = await visibleObject(ctx, c, bucketId, sourceKey, 'metadata, user_metadata')
  const from = filePath(ctx, bucketId, sourceKey)
  const upsert = req.headers.get('x-upsert') === 'true'
  const w = callerWriter(ctx, c)
  const metadata = { ...(source.metadata ?? {}), lastModified: new Date().toISOString() }
  const id = await writeObject(
    ctx,
    w,
    destinationBucket,
    destinationKey,
    (temp) => Deno.copyFile(from, temp).catch(() => fail(404, 'not_found', 'Object not found')),
    async (tx) => {
      const [row] = await tx`
        insert into storage.objects (bucket_id, name, owner, owner_id, metadata, user_metadata, version)
        values (${destinationBucket}, ${destinationKey}, ${ownerUuid(w.sub)}, ${w.sub}, ${tx.json(metadata)},
                ${
        source.user_metadata === null ? null : tx.json(source.user_metadata)
      }, gen_random_uuid()::text)
        ${
        upsert
          ? tx`on conflict (bucket_id, name) do update
               set metadata = excluded.metadata, user_metadata = excluded.user_metadata, owner = excluded.owner,
                   owner_id = excluded.owner_id, version = excluded.version, updated_at = now()`
          : tx``
      }
        returning id`
      return row.id as string
    },
  )
  return json(200, { Id: id, Key: `${destinationBucket}/${destinationKey}` })
}

const INFO_COLUMNS = 'id, name, version, bucket_id, metadata, user_metadata, created_at, updated_at'

/** An object's row for info and exists: anyone's in a public bucket (as Storage reads those as
 *  the superuser), else as the caller sees it under RLS. */
async function findForInfo(ctx: StorageContext, c: Claims | null, bucket: string, name: string) {
  const b = await bucketSettings(ctx, bucket)
  if (b.public || !c) return publicObject(ctx, bucket, name, INFO_COLUMNS)
  return visibleObject(ctx, c, bucket, name, INFO_COLUMNS)
}

/** GET /object/info[/authenticated|/public]/<bucket>/<name>: Storage's info body. */
export async function info(ctx: StorageContext, c: Claims | null, bucket: string, name: string) {
  const obj = await findForInfo(ctx, c, bucket, name)
  const m = obj.metadata ?? {}
  return json(200, {
    id: obj.id,
    name: obj.name,
    version: obj.version,
    bucket_id: obj.bucket_id,
    size: m.size ?? null,
    content_type: m.mimetype ?? null,
    cache_control: m.cacheControl ?? null,
    etag: m.eTag ?? null,
    metadata: obj.user_metadata,
    last_modified: obj.updated_at,
    created_at: obj.created_at,
  }, { 'cache-control': 'no-cache', ...(m.eTag ? { etag: m.eTag } : {}) })
}

/** HEAD /object[/authenticated|/public]/<bucket>/<name> (storage-js `exists`): the object's
 *  headers without its body. */
export async function head(ctx: StorageContext, c: Claims | null, bucket: string, name: string) {
  const obj = await findForInfo(ctx, c, bucket, name)
  const m = obj.metadata ?? {}
  const headers: Record<string, string> = {
    'content-type': servedType(m.mimetype),
    'content-length': String(m.size ?? 0),
    'cache-control': m.cacheControl ?? 'no-cache',
    'x-content-type-options': 'nosniff',
  }
  if (m.eTag) headers.etag = m.eTag
  if (m.lastModified) headers['last-modified'] = new Date(m.lastModified).toUTCString()
  return new Response(null, { status: 200, headers })
}
