// Image transformation options, as Storage reads them (query string, a signed URL's body, or
// the `transformations` string inside a signed image URL's token) and checks them: width and
// height whole numbers (0 = not given, else clamped to 1..2000 as Storage's default limits),
// resize cover|contain|fill, format origin|avif|webp, quality 20..100.
import { fail } from './errors.ts'

export interface TransformOptions {
  width?: number
  height?: number
  resize?: 'cover' | 'contain' | 'fill'
  format?: 'origin' | 'avif' | 'webp'
  quality?: number
}

export const SIZE_MIN = 1
export const SIZE_MAX = 2000
const RESIZE = ['cover', 'contain', 'fill'] as const
const FORMATS = ['origin', 'avif', 'webp'] as const

const clamp = (n: number, min: number, max: number) => Math.min(Math.max(n, min), max)

/** Checks raw options (strings from a query, or JSON values); `where` names them in errors. */
export function parseTransform(
  raw: Record<string, unknown>,
  where: 'querystring' | 'body/transform',
): TransformOptions {
  const out: TransformOptions = {}
  const int = (k: 'width' | 'height' | 'quality') => {
    const v = raw[k]
    if (v === undefined || v === null || v === '') return undefined
    const n = typeof v === 'number' ? v : /^\d+$/.test(String(v)) ? Number(v) : NaN
    if (!Number.isInteger(n) || n < 0) fail(400, 'Error', `${where}/${k} must be a whole number`)
    return n
  }
  const width = int('width')
  const height = int('height')
  const quality = int('quality')
  if (width) out.width = clamp(width, SIZE_MIN, SIZE_MAX)
  if (height) out.height = clamp(height, SIZE_MIN, SIZE_MAX)
  if (quality !== undefined) {
    if (quality < 20 || quality > 100) fail(400, 'Error', `${where}/quality must be between 20 and 100`)
    out.quality = quality
  }
  for (const [k, allowed] of [['resize', RESIZE], ['format', FORMATS]] as const) {
    const v = raw[k]
    if (v === undefined || v === null || v === '') continue
    if (!(allowed as readonly unknown[]).includes(v)) {
      fail(400, 'Error', `${where}/${k} must be one of ${allowed.join(', ')}`)
    }
    ;(out as Record<string, unknown>)[k] = v
  }
  return out
}

/** The options as Storage writes them into a signed image URL's token ("height:64,width:64,…"). */
export function transformationsOf(raw: Record<string, unknown>): string {
  const o = parseTransform(raw, 'body/transform')
  const parts: string[] = []
  if (o.height) parts.push(`height:${o.height}`)
  if (o.width) parts.push(`width:${o.width}`)
  if ((o.width || o.height) && o.resize) parts.push(`resize:${o.resize}`)
  if (o.quality) parts.push(`quality:${o.quality}`)
  if (o.format && o.format !== 'origin') parts.push(`format:${o.format}`)
  return parts.join(',')
}

/** Reads back a token's transformations string (signed by us, but checked all the same). */
export function fromTransformations(s: string, format?: unknown): TransformOptions {
  const raw: Record<string, unknown> = {}
  for (const part of s.split(',')) {
    const [k, v] = part.split(':')
    if (['height', 'width', 'quality', 'resize', 'format'].includes(k)) raw[k] = v
  }
  if (typeof format === 'string' && format) raw.format = format
  return parseTransform(raw, 'querystring')
}
