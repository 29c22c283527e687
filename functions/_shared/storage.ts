// Supabase Storage through its HTTP API (/storage/v1/object/...) with the service role: for
// files the api function writes on a user's behalf (generated images), never for uploads a
// client chooses. The bucket's own limits (size, MIME types) apply on every write.
import { requiredEnv } from './env.ts'
import { impersonationHeaders } from './impersonation.ts'

const TIMEOUT_MS = 15_000

const encodeName = (name: string) => name.split('/').map(encodeURIComponent).join('/')

/**
 * The service role's credentials, or a user's (asUser: their access token, so storage policies
 * apply). The service role acting for an impersonated caller names the session, so the object
 * rows it writes are audited as the session's.
 */
function headers(extra: Record<string, string> = {}, asUser?: string) {
  if (asUser) return { authorization: `Bearer ${asUser}`, apikey: requiredEnv('SUPABASE_ANON_KEY'), ...extra }
  const key = requiredEnv('SUPABASE_SERVICE_ROLE_KEY')
  return { authorization: `Bearer ${key}`, apikey: key, ...impersonationHeaders(), ...extra }
}

export class StorageError extends Error {
  constructor(readonly status: number, message: string) {
    super(message)
  }
}

/**
 * The status of a failed Storage request. Hosted Storage answers most errors with HTTP 400 and
 * puts the real status in the body's `statusCode` ("413", "415", "409", ...), so that is read first.
 */
export function storageErrorStatus(httpStatus: number, body: string): number {
  try {
    const code = Number((JSON.parse(body) as { statusCode?: unknown }).statusCode)
    if (Number.isInteger(code) && code >= 400 && code <= 599) return code
  } catch {
    // not JSON: the HTTP status is all there is
  }
  return httpStatus
}

/**
 * The `{timestamp}` part of a new object's name: the time in ms and 64 random bits, so two
 * objects made in the same millisecond never share a name (uploads never overwrite: a clash
 * would be a failed write).
 */
export function uniqueStamp() {
  const random = crypto.getRandomValues(new Uint8Array(8))
  return `${Date.now()}-${Array.from(random, (b) => b.toString(16).padStart(2, '0')).join('')}`
}

/** The public address of an object in a public bucket. */
export function publicObjectUrl(bucket: string, name: string) {
  return `${requiredEnv('SUPABASE_URL')}/storage/v1/object/public/${bucket}/${encodeName(name)}`
}

/**
 * Stores a new object (never overwrites) and returns its public URL. Throws StorageError.
 * With `asUser` (an access token) it is written as that user, under the bucket's policies.
 */
export async function uploadObject(
  bucket: string,
  name: string,
  bytes: Uint8Array,
  contentType: string,
  asUser?: string,
): Promise<string> {
  const res = await fetch(`${requiredEnv('SUPABASE_URL')}/storage/v1/object/${bucket}/${encodeName(name)}`, {
    method: 'POST',
    headers: headers({
      'content-type': contentType,
      'cache-control': 'max-age=31536000',
      'x-upsert': 'false',
    }, asUser),
    body: bytes as Uint8Array<ArrayBuffer>,
    signal: AbortSignal.timeout(TIMEOUT_MS),
  })
  if (!res.ok) {
    const detail = await res.text().catch(() => '')
    const status = storageErrorStatus(res.status, detail)
    throw new StorageError(status, `storing ${bucket}/${name} failed: ${status} ${detail.slice(0, 300)}`)
  }
  await res.body?.cancel()
  return publicObjectUrl(bucket, name)
}

/** Deletes objects; best effort (logged), for cleaning up after a failed write. */
export async function removeObjects(bucket: string, names: string[]) {
  if (!names.length) return
  try {
    const res = await fetch(`${requiredEnv('SUPABASE_URL')}/storage/v1/object/${bucket}`, {
      method: 'DELETE',
      headers: headers({ 'content-type': 'application/json' }),
      body: JSON.stringify({ prefixes: names }),
      signal: AbortSignal.timeout(TIMEOUT_MS),
    })
    if (!res.ok) {
      console.error(`removing ${names.join(', ')} from ${bucket} failed: ${res.status} ${await res.text()}`)
    } else await res.body?.cancel()
  } catch (e) {
    console.error(`removing ${names.join(', ')} from ${bucket} failed`, e)
  }
}
