// A local copy of Supabase Storage's HTTP API (what supabase-js's storage client uses), served
// by the gateway at /storage/v1: buckets, objects (upload, download, list, remove, move,
// copy, info, exists), signed download and upload URLs, and image transformations. Files live
// on disk under <rootDir>/<bucket>/<name>, rows in storage.objects; every row is read or
// written as the caller (caller.ts), so storage policies apply as on Supabase.
import { callerWriter, identify } from './caller.ts'
import { storagePreflight, withStorageCors } from './cors.ts'
import { errorResponse, fail, json } from './errors.ts'
import { readJson, splitPath, type StorageContext } from './keys.ts'
import { list } from './list.ts'
import { copy, head, info, move } from './manage.ts'
import { createBucket, deleteBucket, emptyBucket, getBucket, listBuckets, updateBucket } from './buckets.ts'
import { download, downloadPublic, removeMany, removeOne, upload } from './objects.ts'
import { renderImage } from './render.ts'
import { downloadSigned, signMany, signOne, signUpload, uploadSigned } from './signed.ts'

export type { StorageContext } from './keys.ts'

/** Routes Supabase Storage has that this store answers 501 to, with the reason (docs/local_stack.md). */
const NOT_SERVED: Record<string, string> = {
  'list-v2': 'listV2 (cursor-paged listing) is not supported locally; use list() with limit and offset',
  'upload/resumable': 'resumable (TUS) uploads are not supported locally; upload() takes files up to 50 MB',
}
/** Whole Storage APIs this store answers 501 to. */
const NOT_SERVED_AREAS: Record<string, string> = {
  upload: NOT_SERVED['upload/resumable'], // TUS's own endpoint, /upload/resumable
  s3: 'the S3 protocol is not supported locally; use the Storage API (supabase.storage)',
  iceberg: 'analytics (Iceberg) buckets are not supported locally',
  vector: 'vector buckets are not supported locally',
}

/** Answers a request under /storage/v1 (`path` is what follows it), CORS included. */
export async function handleStorage(req: Request, path: string, ctx: StorageContext): Promise<Response> {
  if (req.method === 'OPTIONS') return storagePreflight(req)
  let res: Response
  try {
    res = await route(req, path, ctx)
  } catch (e) {
    res = errorResponse(e)
  }
  return withStorageCors(res)
}

async function route(req: Request, path: string, ctx: StorageContext): Promise<Response> {
  const [area, ...rest] = splitPath(path)
  if (NOT_SERVED_AREAS[area]) fail(501, 'not_implemented', NOT_SERVED_AREAS[area])
  const m = req.method
  const read = m === 'GET' || m === 'HEAD'
  const name = (segs: string[]) => segs.join('/')

  if (area === 'bucket') {
    if (m === 'GET' && rest.length <= 1) {
      const caller = await identify(req, ctx)
      return rest.length
        ? getBucket(ctx, caller, rest[0])
        : listBuckets(ctx, caller, new URL(req.url).searchParams)
    }
    if (m === 'POST' && rest.length === 0) {
      return createBucket(ctx, await identify(req, ctx), await readJson(req))
    }
    if (m === 'PUT' && rest.length === 1) {
      return updateBucket(ctx, await identify(req, ctx), rest[0], await readJson(req))
    }
    if (m === 'POST' && rest.length === 2 && rest[1] === 'empty') {
      return emptyBucket(ctx, await identify(req, ctx), rest[0])
    }
    if (m === 'DELETE' && rest.length === 1) return deleteBucket(ctx, await identify(req, ctx), rest[0])
  }

  if (area === 'render' && rest[0] === 'image' && read && rest.length >= 4) {
    const [, kind, bucket, ...segs] = rest
    if (kind === 'public') return renderImage(req, ctx, { kind }, bucket, name(segs))
    if (kind === 'sign') return renderImage(req, ctx, { kind }, bucket, name(segs))
    if (kind === 'authenticated') {
      return renderImage(req, ctx, { kind, caller: await identify(req, ctx) }, bucket, name(segs))
    }
  }

  if (area === 'object' && rest.length) {
    const [first, ...more] = rest
    const reason = NOT_SERVED[first] ?? NOT_SERVED[`${first}/${more[0]}`]
    if (reason) fail(501, 'not_implemented', reason)

    if (first === 'list' && m === 'POST' && more.length === 1) {
      return list(ctx, await identify(req, ctx), more[0], await readJson(req))
    }
    if (first === 'move' && m === 'POST' && !more.length) {
      return move(ctx, await identify(req, ctx), await readJson(req))
    }
    if (first === 'copy' && m === 'POST' && !more.length) {
      return copy(req, ctx, await identify(req, ctx), await readJson(req))
    }
    if (first === 'sign' && more.length === 1 && m === 'POST') {
      return signMany(ctx, await identify(req, ctx), more[0], await readJson(req))
    }
    if (first === 'sign' && more.length >= 2) {
      const [bucket, ...segs] = more
      if (m === 'POST') return signOne(ctx, await identify(req, ctx), bucket, name(segs), await readJson(req))
      if (read) return downloadSigned(req, ctx, bucket, name(segs))
    }
    if (first === 'upload' && more[0] === 'sign' && more.length >= 3) {
      const [, bucket, ...segs] = more
      if (m === 'POST') return signUpload(req, ctx, await identify(req, ctx), bucket, name(segs))
      if (m === 'PUT') return uploadSigned(req, ctx, bucket, name(segs))
    }
    if (first === 'info' && m === 'GET' && more.length >= 2) {
      const scope = more[0] === 'public' || more[0] === 'authenticated' ? more[0] : null
      const [bucket, ...segs] = scope ? more.slice(1) : more
      if (segs.length) {
        // The public route needs no token; the others read as the caller.
        const caller = scope === 'public' ? null : await identify(req, ctx)
        return info(ctx, caller, bucket, name(segs))
      }
    }
    if (first === 'public' && read && more.length >= 2) {
      return m === 'HEAD'
        ? head(ctx, null, more[0], name(more.slice(1)))
        : downloadPublic(req, ctx, more[0], name(more.slice(1)))
    }
    const [bucket, ...segs] = first === 'authenticated' && read ? more : rest
    const key = name(segs)
    if (m === 'DELETE' && !key) return removeMany(ctx, await identify(req, ctx), bucket, await readJson(req))
    if (key) {
      const caller = await identify(req, ctx)
      if (m === 'POST' || m === 'PUT') {
        const upsert = m === 'POST' && req.headers.get('x-upsert') === 'true'
        const res = await upload(req, ctx, callerWriter(ctx, caller), bucket, key, {
          mode: m === 'PUT' ? 'update' : 'insert',
          upsert,
        })
        return json(200, res)
      }
      if (m === 'HEAD') return head(ctx, caller, bucket, key)
      if (m === 'GET') return download(req, ctx, caller, bucket, key)
      if (m === 'DELETE') return removeOne(ctx, caller, bucket, key)
    }
  }
  return fail(404, 'not_found', `Route ${m}:/storage/v1${path} not found`)
}
