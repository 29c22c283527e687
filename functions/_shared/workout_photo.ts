// Check-in photos (SPEC Limits, workout rule 6): the type is read from the bytes (a declared
// Content-Type proves nothing), and the capture time and GPS position from EXIF with exifr,
// which reads JPEG, PNG (eXIf) and HEIC but not WebP or GIF. Values are read raw: the capture
// time stays the camera's local wall-clock time plus its offset when the camera wrote one; the
// database applies the offset, or the window's own time zone when there is none.
import { ImageMagick, initializeImageMagick, MagickFormat, MagickImageInfo, MagickReadSettings } from '@imagemagick/magick-wasm'
import exifr from 'exifr'

export const PHOTO_LIMIT_BYTES = 10 * 1024 * 1024
export const PHOTO_TYPES = ['image/jpeg', 'image/png', 'image/gif', 'image/webp'] as const
export type PhotoType = typeof PHOTO_TYPES[number]

const startsWith = (bytes: Uint8Array, sig: number[], at = 0) => sig.every((b, i) => bytes[at + i] === b)

/** The image type the bytes really are, or null when they are none of the accepted four. */
export function sniffImageType(bytes: Uint8Array): PhotoType | null {
  if (startsWith(bytes, [0xff, 0xd8, 0xff])) return 'image/jpeg'
  if (startsWith(bytes, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'image/png'
  if (startsWith(bytes, [0x47, 0x49, 0x46, 0x38]) && (bytes[4] === 0x37 || bytes[4] === 0x39) && bytes[5] === 0x61) {
    return 'image/gif'
  }
  if (startsWith(bytes, [0x52, 0x49, 0x46, 0x46]) && startsWith(bytes, [0x57, 0x45, 0x42, 0x50], 8)) return 'image/webp'
  return null
}

export const PHOTO_EXTENSIONS: Record<PhotoType, string> = {
  'image/jpeg': 'jpg',
  'image/png': 'png',
  'image/gif': 'gif',
  'image/webp': 'webp',
}

export interface PhotoFacts {
  /** Wall-clock capture time as the camera wrote it, ISO without zone: 2026-11-22T07:15:00. */
  takenLocal: string | null
  /** The camera's UTC offset in minutes (OffsetTimeOriginal), when it wrote one. */
  offsetMinutes: number | null
  latitude: number | null
  longitude: number | null
}

const NONE: PhotoFacts = { takenLocal: null, offsetMinutes: null, latitude: null, longitude: null }

/** "2026:11:22 07:15:00" → "2026-11-22T07:15:00" (null unless a real date-time). */
export function exifDateTime(raw: unknown): string | null {
  if (typeof raw !== 'string') return null
  const m = raw.trim().match(/^(\d{4}):(\d{2}):(\d{2})[ T](\d{2}):(\d{2}):(\d{2})/)
  if (!m) return null
  const iso = `${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6]}`
  const t = new Date(`${iso}Z`)
  return isNaN(t.getTime()) || !t.toISOString().startsWith(`${m[1]}-${m[2]}-${m[3]}T${m[4]}`) ? null : iso
}

/** "+02:00" / "-05:30" → minutes east of UTC. */
export function exifOffset(raw: unknown): number | null {
  if (typeof raw !== 'string') return null
  const m = raw.trim().match(/^([+-])(\d{2}):(\d{2})$/)
  if (!m || Number(m[2]) > 14 || Number(m[3]) > 59) return null
  return (m[1] === '-' ? -1 : 1) * (Number(m[2]) * 60 + Number(m[3]))
}

function gpsCoordinate(value: unknown, ref: unknown, limit: number): number | null {
  const parts = Array.isArray(value) ? value.map(Number) : typeof value === 'number' ? [value] : null
  if (!parts || parts.some((n) => !Number.isFinite(n))) return null
  const [deg = 0, min = 0, sec = 0] = parts
  let decimal = deg + min / 60 + sec / 3600
  if (ref === 'S' || ref === 'W') decimal = -decimal
  return Math.abs(decimal) <= limit ? Math.round(decimal * 1e8) / 1e8 : null
}

/** Capture time and position from EXIF; a photo without them (or unreadable EXIF) gives nulls. */
export async function readPhotoFacts(bytes: Uint8Array, type: PhotoType): Promise<PhotoFacts> {
  if (type !== 'image/jpeg' && type !== 'image/png') return NONE // exifr reads neither WebP nor GIF
  let tags: Record<string, unknown> | undefined
  try {
    tags = await exifr.parse(bytes, {
      tiff: true, exif: true, gps: true, ifd1: false, xmp: false, icc: false, iptc: false, jfif: false, ihdr: false,
      reviveValues: false, translateValues: false, translateKeys: true, mergeOutput: true,
    })
  } catch {
    return NONE
  }
  if (!tags) return NONE
  const takenLocal = exifDateTime(tags.DateTimeOriginal) ?? exifDateTime(tags.CreateDate) ?? exifDateTime(tags.DateTime)
  const latitude = gpsCoordinate(tags.GPSLatitude, tags.GPSLatitudeRef, 90)
  const longitude = gpsCoordinate(tags.GPSLongitude, tags.GPSLongitudeRef, 180)
  return {
    takenLocal,
    offsetMinutes: takenLocal ? exifOffset(tags.OffsetTimeOriginal ?? tags.OffsetTime) : null,
    latitude: latitude !== null && longitude !== null ? latitude : null,
    longitude: latitude !== null && longitude !== null ? longitude : null,
  }
}

// ---- Stripping: what is stored carries no metadata ----------------------------------------
// A stored check-in photo is public, so it must not carry the uploader's EXIF (GPS, camera,
// serial numbers), XMP, IPTC, comments or text chunks. The photo is decoded and encoded again
// with ImageMagick (magick-wasm: WebAssembly, runs in Deno and in Supabase edge functions),
// after auto-orienting (the EXIF orientation is applied to the pixels, so the picture still
// stands the right way without the tag) and stripping every profile. Re-encoding, rather than
// cutting known segments, leaves nothing the encoder did not write itself. The facts the
// review needs are read from the original bytes first (readPhotoFacts).

/** Decoded size limit: a 10 MB file may still decode to a huge bitmap (a decompression bomb). */
export const PHOTO_MAX_PIXELS = 40_000_000

const MAGICK_FORMAT: Record<PhotoType, MagickFormat> = {
  'image/jpeg': MagickFormat.Jpeg,
  'image/png': MagickFormat.Png,
  'image/gif': MagickFormat.Gif,
  'image/webp': MagickFormat.WebP,
}

let magickReady: Promise<void> | undefined
/** Loads the ImageMagick WebAssembly module once per worker (about 0.25 s). */
export function loadImageMagick(): Promise<void> {
  magickReady ??= Deno.readFile(new URL(import.meta.resolve('@imagemagick/magick-wasm/magick.wasm')))
    .then((wasm) => initializeImageMagick(wasm))
    .catch((e) => {
      magickReady = undefined
      throw e
    })
  return magickReady
}

/** The photo could not be decoded as the image its bytes claim to be, or is too large. */
export class UnreadablePhoto extends Error {}

/**
 * The photo as it is stored: decoded (only as the type its bytes were sniffed as), turned
 * upright, every profile, comment and text chunk dropped, and encoded again in the same
 * format (every frame of an animated GIF or WebP). Throws UnreadablePhoto.
 */
export async function strippedPhoto(bytes: Uint8Array, type: PhotoType): Promise<Uint8Array> {
  await loadImageMagick()
  const format = MAGICK_FORMAT[type]
  try {
    const info = MagickImageInfo.create(bytes, new MagickReadSettings({ format }))
    if (info.width * info.height > PHOTO_MAX_PIXELS) {
      throw new UnreadablePhoto(`at most ${PHOTO_MAX_PIXELS / 1_000_000} megapixels (this one is ${info.width}x${info.height})`)
    }
    return ImageMagick.readCollection(bytes, new MagickReadSettings({ format }), (frames) => {
      for (const frame of frames) {
        frame.autoOrient()
        frame.strip()
      }
      let out: Uint8Array | undefined
      frames.write(format, (data) => {
        out = new Uint8Array(data) // a copy: data lives in the module's memory
      })
      if (!out?.length) throw new UnreadablePhoto('the image could not be encoded again')
      return out
    })
  } catch (e) {
    if (e instanceof UnreadablePhoto) throw e
    throw new UnreadablePhoto(`not a readable ${type.slice(6).toUpperCase()} image`)
  }
}

/** Hex SHA-256 of the stored bytes: the same picture stripped of its metadata hashes the same. */
export async function photoHash(bytes: Uint8Array): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>))
  return Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('')
}
