// Object keys and where their files live: every segment is checked (no traversal, no empty
// or control-character segments) before it becomes part of a path on disk.
import { JSON_BODY_LIMIT, readLimited } from '../body.ts'
import { fail } from './errors.ts'

export interface StorageContext {
  sql: import('postgres').Sql
  rootDir: string
  /** Signs and checks signed-URL tokens; the project's JWT secret (JWT_SECRET) by default. */
  jwtSecret?: string
  /** The request's peer address: whose renders a minute an anonymous render counts against. */
  clientAddress?: string
}

/** Percent-decodes and splits the request path; refuses traversal, empty and odd segments. */
export function splitPath(path: string): string[] {
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

export function checkSegment(s: string) {
  // deno-lint-ignore no-control-regex
  if (!s || s === '.' || s === '..' || /[\x00-\x1f\x7f\\]/.test(s)) {
    fail(
      400,
      'InvalidKey',
      'Invalid key: path segments must be non-empty, not "." or "..", without control characters',
    )
  }
}

/** Checks a key given in a JSON body (remove, list, move, copy) by the rules for keys in the URL. */
export function checkKey(key: unknown, allowEmpty = false): string {
  if (typeof key !== 'string') return fail(400, 'InvalidKey', 'Keys must be strings')
  if (key.length > 1024) fail(400, 'InvalidKey', 'Invalid key: longer than 1024 characters')
  if (!(allowEmpty && key === '')) key.split('/').forEach(checkSegment)
  return key
}

export const bucketDir = (ctx: StorageContext, bucket: string) =>
  `${ctx.rootDir.replace(/\/+$/, '')}/${bucket}`

export function filePath(ctx: StorageContext, bucket: string, name: string): string {
  // Belt and braces: the segments were checked already, but never leave the root.
  ;[bucket, ...name.split('/')].forEach(checkSegment)
  return `${bucketDir(ctx, bucket)}/${name}`
}

export const parentDir = (file: string) => file.slice(0, file.lastIndexOf('/'))

/** Removes the now-empty folders above a file, up to the bucket's folder, so that a later
 *  object may take a folder's name. Deno.remove refuses a folder that is not empty. */
export async function pruneEmptyDirs(ctx: StorageContext, bucket: string, file: string) {
  const stop = bucketDir(ctx, bucket)
  for (let d = parentDir(file); d.length > stop.length; d = parentDir(d)) {
    if (!(await Deno.remove(d).then(() => true, () => false))) return
  }
}

export const likeEscape = (s: string) => s.replace(/[\\%_]/g, (ch) => `\\${ch}`)

/** A search term (bucket and object lists): no control characters (Postgres refuses a NUL). */
export function checkSearch<T extends string | null>(search: T): T {
  // deno-lint-ignore no-control-regex
  if (search && /[\x00-\x1f\x7f]/.test(search)) {
    fail(400, 'InvalidRequest', 'search: must not contain control characters')
  }
  return search
}

export function intParam(v: unknown, dflt: number): number {
  const n = Number(v ?? dflt)
  return Number.isInteger(n) && n >= 0 ? Math.min(n, 10000) : dflt
}

/** A JSON body (list, remove, sign, move, copy), at most JSON_BODY_LIMIT. */
export async function readJson(req: Request): Promise<any> {
  const text = new TextDecoder().decode(await readLimited(req, JSON_BODY_LIMIT))
  try {
    return text ? JSON.parse(text) : {}
  } catch {
    return fail(400, 'InvalidRequest', 'The body is not valid JSON')
  }
}
