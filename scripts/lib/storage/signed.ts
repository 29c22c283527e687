// Signed URLs, as Supabase Storage makes them: a JWT signed with the project's JWT secret (HS256)
// carrying {url: "<bucket>/<name>", iat, exp} (and the transformations of a signed image URL,
// or the owner and upsert flag of a signed upload URL). Only a caller who may read the object
// (RLS on storage.objects) gets a download URL, and only one who may insert it an upload URL;
// the URL itself is then the permission, checked here, and the object is read or written as
// the superuser.
import { errors, jwtVerify, SignJWT } from 'jose'
import { asCaller, callerWriter, type Claims, ownerUuid, superuserWriter, testAsCaller } from './caller.ts'
import { fail, json } from './errors.ts'
import { checkKey, type StorageContext } from './keys.ts'
import { bucketSettings } from './buckets.ts'
import { serveFile, upload, visibleObject } from './objects.ts'
import { transformationsOf } from './transform_options.ts'

/** How long a signed upload URL lasts: Storage's default (2 hours). */
export const UPLOAD_URL_SECONDS = 2 * 60 * 60

function secret(ctx: StorageContext) {
  const s = ctx.jwtSecret ?? Deno.env.get('JWT_SECRET') ?? Deno.env.get('SUPABASE_JWT_SECRET')
  if (!s) throw new Error('storage: JWT_SECRET is not set')
  return new TextEncoder().encode(s)
}

async function signToken(ctx: StorageContext, payload: Record<string, unknown>, expiresIn: number) {
  const now = Math.floor(Date.now() / 1000)
  return await new SignJWT({ ...payload, iat: now, exp: now + expiresIn })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .sign(secret(ctx))
}

/**
 * The claims of a signed URL's token for <bucket>/<name>; Storage's 400s otherwise. A token is
 * good for what it was made for only (stricter than Storage, which takes either kind at
 * either URL): an upload token (it carries `upsert`) never downloads, a download token never
 * uploads.
 */
export async function verifySigned(
  ctx: StorageContext,
  req: Request,
  bucket: string,
  name: string,
  purpose: 'download' | 'upload' = 'download',
) {
  const token = new URL(req.url).searchParams.get('token')
  if (!token) return fail(400, 'Error', "querystring must have required property 'token'")
  let payload: Record<string, unknown> = {}
  try {
    payload =
      (await jwtVerify(token, secret(ctx), { algorithms: ['HS256'], requiredClaims: ['exp'] })).payload
  } catch (e) {
    // The messages Storage passes on from its JWT library.
    const message = e instanceof errors.JWTExpired
      ? 'jwt expired'
      : e instanceof errors.JWSSignatureVerificationFailed
      ? 'invalid signature'
      : e instanceof errors.JOSEError
      ? 'jwt malformed'
      : null
    if (!message) throw e
    fail(400, 'InvalidJWT', message)
  }
  if (payload.url !== `${bucket}/${name}`) fail(400, 'InvalidSignature', 'The url do not match the signature')
  if ((typeof payload.upsert === 'boolean') !== (purpose === 'upload')) {
    fail(400, 'InvalidSignature', `This is not a signed ${purpose} URL`)
  }
  return payload
}

/** The latest expiry (in seconds) a Date can hold: an Expires header past it is "Invalid Date". */
const LAST_DATE_SECONDS = 8.64e12

/**
 * A signed URL's lifetime in seconds: an integer >= 1 (Storage's body schema), then Storage's
 * assertValidNumericJWTExpiration: `exp` in milliseconds must stay a safe integer. Here `exp`
 * must also be a date (year 275760 at most), a bound hosted Storage leaves to its JWT library.
 */
function expiresInOf(body: any): number {
  const n = body?.expiresIn
  if (!Number.isInteger(n) || n < 1) fail(400, 'Error', 'body/expiresIn must be an integer >= 1')
  const now = Math.floor(Date.now() / 1000)
  const latest = Math.min(Math.floor(Number.MAX_SAFE_INTEGER / 1000), LAST_DATE_SECONDS) - now
  if (!Number.isSafeInteger(n) || n > latest) fail(400, 'InvalidParameter', 'Invalid Parameter expiresIn')
  return n
}

/** POST /object/sign/<bucket>/<name> {expiresIn, transform?} → {signedURL}. */
export async function signOne(ctx: StorageContext, c: Claims, bucket: string, name: string, body: any) {
  const expiresIn = expiresInOf(body)
  await visibleObject(ctx, c, bucket, name, 'id')
  const url = `${bucket}/${name}`
  const transform = body?.transform && typeof body.transform === 'object' ? body.transform : undefined
  const transformations = transform ? transformationsOf(transform) : ''
  const claims: Record<string, unknown> = { url }
  if (transformations) claims.transformations = transformations
  if (transformations && typeof transform.format === 'string' && transform.format) {
    claims.format = transform.format
  }
  const token = await signToken(ctx, claims, expiresIn)
  const path = transformations ? 'render/image' : 'object'
  return json(200, { signedURL: `/${path}/sign/${url}?token=${token}` })
}

/** POST /object/sign/<bucket> {expiresIn, paths} → [{error, path, signedURL}] in the order asked. */
export async function signMany(ctx: StorageContext, c: Claims, bucket: string, body: any) {
  const expiresIn = expiresInOf(body)
  const paths = body?.paths
  if (
    !Array.isArray(paths) || paths.length === 0 || paths.length > 1000 ||
    paths.some((p) => typeof p !== 'string')
  ) {
    fail(400, 'Error', 'body/paths must be an array of 1 to 1000 strings')
  }
  const rows = await asCaller(
    ctx,
    c,
    (tx) => tx`select name from storage.objects where bucket_id = ${bucket} and name = any(${paths}::text[])`,
  )
  const visible = new Set(rows.map((r) => r.name as string))
  const out = []
  for (const path of paths as string[]) {
    if (!visible.has(path)) {
      out.push({
        error: 'Either the object does not exist or you do not have access to it',
        path,
        signedURL: null,
      })
      continue
    }
    const url = `${bucket}/${path}`
    out.push({
      error: null,
      path,
      signedURL: `/object/sign/${url}?token=${await signToken(ctx, { url }, expiresIn)}`,
    })
  }
  return json(200, out)
}

/** GET|HEAD /object/sign/<bucket>/<name>?token=… : the object, for whoever holds the URL. */
export async function downloadSigned(req: Request, ctx: StorageContext, bucket: string, name: string) {
  const payload = await verifySigned(ctx, req, bucket, name)
  const [row] = await ctx
    .sql`select metadata from storage.objects where bucket_id = ${bucket} and name = ${name}`
  if (!row) fail(404, 'not_found', 'Object not found')
  const res = await serveFile(req, ctx, bucket, name, row.metadata)
  res.headers.set('expires', new Date((payload.exp as number) * 1000).toUTCString())
  return res
}

/** POST /object/upload/sign/<bucket>/<name> → {url, token}, if the caller may insert it now
 *  (with `x-upsert: true`, replace it). */
export async function signUpload(req: Request, ctx: StorageContext, c: Claims, bucket: string, name: string) {
  checkKey(name)
  await bucketSettings(ctx, bucket)
  const upsert = req.headers.get('x-upsert') === 'true'
  const w = callerWriter(ctx, c)
  await testAsCaller(
    ctx,
    c,
    (tx) =>
      tx`insert into storage.objects (bucket_id, name, owner, owner_id, version)
       values (${bucket}, ${name}, ${ownerUuid(w.sub)}, ${w.sub}, 'signed-upload-check')
       ${upsert ? tx`on conflict (bucket_id, name) do update set version = excluded.version` : tx``}`,
  )
  const url = `${bucket}/${name}`
  const claims: Record<string, unknown> = { owner: w.sub ?? undefined, url, upsert }
  // Made in an impersonation session: the upload is that session's write (audited, refused once it ends).
  if (typeof c.impersonation_session === 'string') claims.impersonation_session = c.impersonation_session
  const token = await signToken(ctx, claims, UPLOAD_URL_SECONDS)
  return json(200, { url: `/object/upload/sign/${url}?token=${token}`, token })
}

/** PUT /object/upload/sign/<bucket>/<name>?token=… : stores the file for the URL's signer. */
export async function uploadSigned(req: Request, ctx: StorageContext, bucket: string, name: string) {
  const payload = await verifySigned(ctx, req, bucket, name, 'upload')
  const owner = typeof payload.owner === 'string' ? payload.owner : null
  const session = typeof payload.impersonation_session === 'string'
    ? payload.impersonation_session
    : undefined
  const res = await upload(req, ctx, superuserWriter(ctx, owner, session), bucket, name, {
    mode: 'insert',
    upsert: payload.upsert === true,
  })
  return json(200, res)
}
