// GET /render/image/public|authenticated|sign/<bucket>/<name>: an image object transformed
// (transform.ts), under the same rules as the object itself: a public bucket's objects for
// anyone, others as the caller sees them under RLS, or through a signed image URL whose token
// carries the transformations. What a request may cost is bounded, in this order, once the
// caller's right to the object is checked:
//   - a render made before for this version of the object and these options is answered from
//     the render cache (render_cache.ts), at no cost;
//   - otherwise the client (the user of a user token, else the address) starts at most
//     RENDERS_PER_MINUTE renders a minute (render_rate.ts): past it 429 SlowDown;
//   - the source is judged from its headers (25 megapixels at most, as a check-in photo) and the
//     output bounded (render_plan.ts: 2000x2000 at most, AVIF only up to 1024x1024);
//   - rendering runs in two workers with a time limit (an image that runs past it ends its
//     worker; a fresh one takes the next), through a fair queue (render_queue.ts): one client's
//     images use one worker at a time and a few places in line, and heavy renders one worker
//     at most, so a small icon never waits behind a large image.
import { sniffImageType } from '../../../functions/_shared/image_frames.ts'
import { checkImageSize, DECODE_LIMITS, UnreadableImage } from '../../../functions/_shared/image_size.ts'
import type { Claims } from './caller.ts'
import { fail, StorageError } from './errors.ts'
import type { StorageContext } from './keys.ts'
import { downloadHeader, openObject, publicObject, visibleObject } from './objects.ts'
import { verifySigned } from './signed.ts'
import type { Rendered } from './transform.ts'
import { fromTransformations, parseTransform, type TransformOptions } from './transform_options.ts'
import { type FairLimits, FairQueue, QueueFull } from './render_queue.ts'
import { type CachedRender, RenderCache, renderKey } from './render_cache.ts'
import { RenderRate } from './render_rate.ts'
import { boundRender } from './render_plan.ts'

/** The largest object rendered: Storage's imgproxy refuses sources past its own limit too. */
export const RENDER_SOURCE_LIMIT = 25 * 1024 * 1024
export const RENDER_TIMEOUT_MS = 20_000
/** Images waiting for a worker at most, in all; past that a request is turned away (each holds its source). */
export const RENDER_QUEUE_LIMIT = 20

export const renderCache = new RenderCache()
const renderRate = new RenderRate()

export type RenderAccess =
  | { kind: 'public' }
  | { kind: 'authenticated'; caller: Claims }
  | { kind: 'sign' }

const ROW = 'id, version, updated_at, metadata, owner_id'

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
    const [r] = await ctx.sql`
      select ${ctx.sql.unsafe(ROW)} from storage.objects where bucket_id = ${bucket} and name = ${name}`
    row = r ?? fail(404, 'not_found', 'Object not found')
    expires = new Date((payload.exp as number) * 1000).toUTCString()
  } else {
    options = parseTransform(Object.fromEntries(new URL(req.url).searchParams), 'querystring')
    row = access.kind === 'public'
      ? await publicObject(ctx, bucket, name, ROW)
      : await visibleObject(ctx, access.caller, bucket, name, ROW)
  }
  const accept = req.headers.get('accept')
  const key = renderKey(
    { bucket, name, id: row.id, version: row.version, eTag: row.metadata?.eTag ?? null, updatedAt: row.updated_at },
    options as Record<string, unknown>,
    /\bimage\/webp\b/i.test(accept ?? ''),
  )
  let out = renderCache.get(key)
  const cached = out !== undefined
  if (!out) {
    const wait = renderRate.take(rateClient(access, ctx))
    if (wait) fail(429, 'SlowDown', `Rate limit exceeded, retry in ${wait} seconds`)
    out = await renderFresh(ctx, access, bucket, name, row, options, accept)
    renderCache.set(key, out)
  }
  if (!('bytes' in out)) return fail(out.status, out.error, out.message)
  const headers: Record<string, string> = {
    'content-type': out.contentType,
    'content-length': String(out.bytes.length),
    'cache-control': row.metadata?.cacheControl ?? 'no-cache',
    'x-content-type-options': 'nosniff',
    'x-transformations': describe(options),
    // Local only: whether the render cache answered.
    'x-render-cache': cached ? 'hit' : 'miss',
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

/** Reads, judges and renders the object; an unrenderable image is its 422 (cached as such). */
async function renderFresh(
  ctx: StorageContext,
  access: RenderAccess,
  bucket: string,
  name: string,
  row: Record<string, any>,
  asked: TransformOptions,
  accept: string | null,
): Promise<CachedRender> {
  const unrenderable = (message: string) => ({ status: 422, error: 'ImageProcessingError', message })
  const file = await openObject(ctx, bucket, name)
  let bytes: Uint8Array
  try {
    if ((await file.stat()).size > RENDER_SOURCE_LIMIT) {
      return unrenderable(`Source image is larger than ${RENDER_SOURCE_LIMIT / 1024 / 1024} MB`)
    }
    bytes = new Uint8Array(await new Response(file.readable).arrayBuffer())
  } finally {
    try {
      file.close()
    } catch { /* closed by reading it */ }
  }
  const source = sniffImageType(bytes)
  if (!source) return unrenderable('Source image type not supported')
  let size
  try {
    size = checkImageSize(bytes, source, DECODE_LIMITS)
  } catch (e) {
    if (e instanceof UnreadableImage) return unrenderable(e.message)
    throw e
  }
  const bounded = boundRender(size.width, size.height, source, asked, accept)
  try {
    return await render(renderClient(access, bucket, row), bounded.heavy, {
      bytes,
      source,
      options: bounded.options,
      accept,
    })
  } catch (e) {
    if (e instanceof StorageError && e.status === 422) return unrenderable(e.message)
    throw e
  }
}

/** Whose renders a minute a request counts against: a user's, else the address's (the anon
 *  key is everyone's, so it names no client). */
function rateClient(access: RenderAccess, ctx: StorageContext) {
  if (access.kind === 'authenticated' && typeof access.caller.sub === 'string') return `user:${access.caller.sub}`
  return `address:${ctx.clientAddress ?? 'unknown'}`
}

/**
 * Whose share of the render queue a request uses: the signed-in caller's; for a public or
 * signed URL (no caller), the image's owner, whose uploads are what make a render slow.
 */
function renderClient(access: RenderAccess, bucket: string, row: Record<string, any>) {
  if (access.kind === 'authenticated') return `user:${access.caller.sub ?? access.caller.role}`
  return row.owner_id ? `owner:${row.owner_id}` : `bucket:${bucket}`
}

const describe = (o: TransformOptions) => Object.entries(o).map(([k, v]) => `${k}:${v}`).join(',')

// ---- the workers ---------------------------------------------------------------------------

interface Message {
  bytes: Uint8Array
  source: string
  options: TransformOptions
  accept: string | null
}

/** Two workers (the machine's cores are shared); one client's images use one of them at a
 *  time, and heavy renders one of them at most. */
export const RENDER_LIMITS: FairLimits = {
  slots: 2,
  perClientRunning: 1,
  perClientWaiting: 4,
  waiting: RENDER_QUEUE_LIMIT,
  heavySlots: 1,
}

const idle: Worker[] = []
const all = new Set<Worker>()

const unrenderable = (message: string) =>
  Object.assign(new Error(message), { storage: { status: 422, error: 'ImageProcessingError' } })

function endWorker(w: Worker) {
  w.terminate()
  all.delete(w)
}

/** Renders one image on an idle worker (or a new one), with the time limit. */
function renderOnWorker(message: Message): Promise<Rendered> {
  const w = idle.pop() ?? new Worker(new URL('./render_worker.ts', import.meta.url), { type: 'module' })
  all.add(w)
  return new Promise<Rendered>((resolve, reject) => {
    let done = false
    // keep: the worker takes the next image; otherwise it ends (a trap may leave the module in
    // any state, and a render past the limit is still running).
    const finish = (outcome: Rendered | Error, keep: boolean) => {
      if (done) return
      done = true
      clearTimeout(timer)
      w.onmessage = null
      w.onerror = null
      if (keep && all.has(w)) idle.push(w)
      else endWorker(w)
      if (outcome instanceof Error) reject(outcome)
      else resolve(outcome)
    }
    const timer = setTimeout(
      () => finish(unrenderable(`rendering took longer than ${RENDER_TIMEOUT_MS / 1000} s`), false),
      RENDER_TIMEOUT_MS,
    )
    w.onmessage = (e: MessageEvent<Rendered | { error: string | null }>) => {
      const reply = e.data
      if (!('error' in reply)) return finish(reply, true)
      finish(unrenderable(reply.error ?? 'the image could not be rendered'), reply.error !== null)
    }
    w.onerror = (e) => {
      e.preventDefault()
      console.error('render worker:', e.message)
      finish(unrenderable('the image could not be rendered'), false)
    }
    w.postMessage(message, [message.bytes.buffer as ArrayBuffer])
  })
}

const queue = new FairQueue<Message, Rendered>(RENDER_LIMITS, renderOnWorker)

/** A client's heavy and light renders wait in lines of their own: its icons never wait behind
 *  its large images. */
async function render(client: string, heavy: boolean, message: Message) {
  try {
    return await queue.submit(`${client}:${heavy ? 'heavy' : 'light'}`, message, heavy)
  } catch (e) {
    if (e instanceof QueueFull) fail(503, 'SlowDown', e.message)
    const s = (e as { storage?: { status: number; error: string } }).storage
    if (s) fail(s.status, s.error, (e as Error).message)
    throw e
  }
}

/** Ends the workers (tests, and a gateway shutting down). */
export function stopRenderWorker() {
  for (const w of all) endWorker(w)
  idle.length = 0
}
