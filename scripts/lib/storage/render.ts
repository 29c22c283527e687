// GET /render/image/public|authenticated|sign/<bucket>/<name>: an image object transformed
// (transform.ts), under the same rules as the object itself: a public bucket's objects for
// anyone, others as the caller sees them under RLS, or through a signed image URL whose token
// carries the transformations. Nothing is cached: every request reads the object it may read
// and renders it anew. Rendering runs in one worker, one image at a time, with a time limit; an
// image that runs past it ends the worker (a fresh one takes the next).
import { sniffImageType } from '../../../functions/_shared/workout_photo.ts'
import type { Claims } from './caller.ts'
import { fail } from './errors.ts'
import type { StorageContext } from './keys.ts'
import { downloadHeader, openObject, publicObject, visibleObject } from './objects.ts'
import { verifySigned } from './signed.ts'
import type { Rendered } from './transform.ts'
import { fromTransformations, parseTransform, type TransformOptions } from './transform_options.ts'

/** The largest object rendered: Storage's imgproxy refuses sources past its own limit too. */
export const RENDER_SOURCE_LIMIT = 25 * 1024 * 1024
export const RENDER_TIMEOUT_MS = 20_000
/** Images waiting for the worker at most; past that a request is turned away (each holds its source). */
export const RENDER_QUEUE_LIMIT = 20

export type RenderAccess =
  | { kind: 'public' }
  | { kind: 'authenticated'; caller: Claims }
  | { kind: 'sign' }

export async function renderImage(
  req: Request,
  ctx: StorageContext,
  access: RenderAccess,
  bucket: string,
  name: string,
) {
  let options: TransformOptions
  let row: Record<string, any>
  let expires: string | undefined
  if (access.kind === 'sign') {
    const payload = await verifySigned(ctx, req, bucket, name)
    options = fromTransformations(String(payload.transformations ?? ''), payload.format)
    const [r] = await ctx
      .sql`select metadata from storage.objects where bucket_id = ${bucket} and name = ${name}`
    row = r ?? fail(404, 'not_found', 'Object not found')
    expires = new Date((payload.exp as number) * 1000).toUTCString()
  } else {
    options = parseTransform(Object.fromEntries(new URL(req.url).searchParams), 'querystring')
    row = access.kind === 'public'
      ? await publicObject(ctx, bucket, name)
      : await visibleObject(ctx, access.caller, bucket, name)
  }
  const file = await openObject(ctx, bucket, name)
  let bytes: Uint8Array
  try {
    if ((await file.stat()).size > RENDER_SOURCE_LIMIT) {
      fail(422, 'ImageProcessingError', `Source image is larger than ${RENDER_SOURCE_LIMIT / 1024 / 1024} MB`)
    }
    bytes = new Uint8Array(await new Response(file.readable).arrayBuffer())
  } finally {
    try {
      file.close()
    } catch { /* closed by reading it */ }
  }
  const source = sniffImageType(bytes)
  if (!source) return fail(422, 'ImageProcessingError', 'Source image type not supported')
  const out = await render(bytes, source, options, req.headers.get('accept'))
  const headers: Record<string, string> = {
    'content-type': out.contentType,
    'content-length': String(out.bytes.length),
    'cache-control': row.metadata?.cacheControl ?? 'no-cache',
    'x-content-type-options': 'nosniff',
    'x-transformations': describe(options),
    // The same URL gives WebP or not by the Accept header.
    vary: 'Accept',
    ...downloadHeader(req, name),
  }
  if (expires) headers.expires = expires
  return new Response(req.method === 'HEAD' ? null : out.bytes as Uint8Array<ArrayBuffer>, {
    status: 200,
    headers,
  })
}

const describe = (o: TransformOptions) => Object.entries(o).map(([k, v]) => `${k}:${v}`).join(',')

// ---- the worker ---------------------------------------------------------------------------

interface Job {
  message: { bytes: Uint8Array; source: string; options: TransformOptions; accept: string | null }
  resolve: (r: Rendered) => void
  reject: (e: Error) => void
  timer?: ReturnType<typeof setTimeout>
}

let worker: Worker | null = null
let running: Job | null = null
const waiting: Job[] = []

const unrenderable = (message: string) =>
  Object.assign(new Error(message), { storage: { status: 422, error: 'ImageProcessingError' } })

function settle(job: Job, outcome: Rendered | Error) {
  clearTimeout(job.timer)
  if (running === job) running = null
  if (outcome instanceof Error) job.reject(outcome)
  else job.resolve(outcome)
  next()
}

function endWorker(w: Worker) {
  w.terminate()
  if (worker === w) worker = null
}

function startWorker(): Worker {
  const w = new Worker(new URL('./render_worker.ts', import.meta.url), { type: 'module' })
  w.onmessage = (e: MessageEvent<Rendered | { error: string | null }>) => {
    if (worker !== w || !running) return
    const reply = e.data
    if (!('error' in reply)) return settle(running, reply)
    if (reply.error === null) endWorker(w) // the module may be in any state after a trap
    settle(running, unrenderable(reply.error ?? 'the image could not be rendered'))
  }
  w.onerror = (e) => {
    e.preventDefault()
    console.error('render worker:', e.message)
    const job = worker === w ? running : null
    endWorker(w)
    if (job) settle(job, unrenderable('the image could not be rendered'))
  }
  return w
}

function next() {
  if (running || waiting.length === 0) return
  const job = running = waiting.shift()!
  const w = worker ??= startWorker()
  job.timer = setTimeout(() => {
    endWorker(w)
    settle(job, unrenderable(`rendering took longer than ${RENDER_TIMEOUT_MS / 1000} s`))
  }, RENDER_TIMEOUT_MS)
  w.postMessage(job.message, [job.message.bytes.buffer as ArrayBuffer])
}

async function render(bytes: Uint8Array, source: string, options: TransformOptions, accept: string | null) {
  if (waiting.length >= RENDER_QUEUE_LIMIT) {
    fail(503, 'SlowDown', 'Too many images are being transformed; try again shortly')
  }
  try {
    return await new Promise<Rendered>((resolve, reject) => {
      waiting.push({ message: { bytes, source, options, accept }, resolve, reject })
      next()
    })
  } catch (e) {
    const s = (e as { storage?: { status: number; error: string } }).storage
    if (s) fail(s.status, s.error, (e as Error).message)
    throw e
  }
}

/** Ends the worker (tests, and a gateway shutting down). */
export function stopRenderWorker() {
  if (worker) endWorker(worker)
}
