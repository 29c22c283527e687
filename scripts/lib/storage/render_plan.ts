// What a transformation will make of a source, decided before anything is decoded (from the
// source's header size): the resize and crop (plan), the output type (outputType), and what it
// costs. The cost bounds the work one request may ask for: AVIF, several times slower to encode
// than WebP, is made only up to AVIF_MAX_PIXELS (larger asks get WebP, which every browser
// that shows AVIF shows too); and a render whose source and output together pass HEAVY_COST is
// heavy, queued in a lane of its own (render_queue.ts) so that small renders never wait for it.
import type { ImageType } from '../../../functions/_shared/image_frames.ts'
import type { TransformOptions } from './transform_options.ts'

/** The largest AVIF made (1024x1024); past it the output is WebP. */
export const AVIF_MAX_PIXELS = 1024 * 1024
/** Encoding work per output pixel, relative to JPEG (measured with magick-wasm, rounded up). */
const ENCODE_WEIGHT: Record<string, number> = {
  'image/jpeg': 1,
  'image/gif': 1,
  'image/png': 2,
  'image/webp': 2,
  'image/avif': 6,
}
/** Past this cost (source pixels + weighted output pixels) a render is heavy: about 1 s of a
 *  core. A 1024x1024 tone icon shown at any size up to 1000x1000 WebP is light. */
export const HEAVY_COST = 4_000_000

/** The output type: the asked format, else WebP for a client that accepts it (as Storage's
 *  imgproxy detects), else the source's own. */
export function outputType(source: ImageType, o: TransformOptions, accept: string | null): string {
  if (o.format === 'avif') return 'image/avif'
  if (o.format === 'webp') return 'image/webp'
  if (o.format === undefined && accept && /\bimage\/webp\b/i.test(accept)) return 'image/webp'
  return source
}

/** The size to resize to and the box to crop to, from the source size and the options. */
export function plan(w0: number, h0: number, o: TransformOptions) {
  let { width: w, height: h } = o
  if (!w && !h) return { resize: null, crop: null }
  const mode = o.resize ?? 'cover'
  if (mode === 'fill' && w && h) return { resize: { w, h, exact: true }, crop: null }
  w ??= Math.max(1, Math.round((w0 * h!) / h0))
  h ??= Math.max(1, Math.round((h0 * w) / w0))
  const scale = Math.min(1, mode === 'contain' ? Math.min(w / w0, h / h0) : Math.max(w / w0, h / h0))
  const rw = Math.max(1, Math.round(w0 * scale))
  const rh = Math.max(1, Math.round(h0 * scale))
  const resize = scale < 1 ? { w: rw, h: rh, exact: true } : null
  const cw = Math.min(w, rw)
  const ch = Math.min(h, rh)
  const crop = mode !== 'contain' && (cw < rw || ch < rh) ? { w: cw, h: ch } : null
  return { resize, crop }
}

/** The output's pixels for a w0 x h0 source (either way up: EXIF may turn it). */
export function outputPixels(w0: number, h0: number, o: TransformOptions): number {
  const pixels = (w: number, h: number) => {
    const { resize, crop } = plan(w, h, o)
    const out = crop ?? resize ?? { w, h }
    return out.w * out.h
  }
  return Math.max(pixels(w0, h0), pixels(h0, w0))
}

export interface BoundedRender {
  /** The options to render with (an AVIF past AVIF_MAX_PIXELS asked as WebP). */
  options: TransformOptions
  contentType: string
  cost: number
  heavy: boolean
}

/** The render a request may have, for a source whose header says w0 x h0. */
export function boundRender(
  w0: number,
  h0: number,
  source: ImageType,
  asked: TransformOptions,
  accept: string | null,
): BoundedRender {
  const pixels = outputPixels(w0, h0, asked)
  let options = asked
  let contentType = outputType(source, asked, accept)
  if (contentType === 'image/avif' && pixels > AVIF_MAX_PIXELS) {
    options = { ...asked, format: 'webp' }
    contentType = 'image/webp'
  }
  const cost = w0 * h0 + pixels * ENCODE_WEIGHT[contentType]
  return { options, contentType, cost, heavy: cost > HEAVY_COST }
}
