// Check-in photos (SPEC Limits, workout rule 6): the type is read from the bytes (a declared
// Content-Type proves nothing), and the capture time and GPS position from EXIF with exifr,
// which reads JPEG, PNG (eXIf) and HEIC but not WebP or GIF. Values are read raw: the capture
// time stays the camera's local wall-clock time plus its offset when the camera wrote one; the
// database applies the offset, or the window's own time zone when there is none.
import {
  FilterType,
  ImageMagick,
  type IMagickImage,
  MagickGeometry,
  MagickReadSettings,
  Orientation,
  PixelIntensityMethod,
} from '@imagemagick/magick-wasm'
import exifr from 'exifr'
import { IMAGE_TYPES, type ImageType } from '../../../_shared/image_frames.ts'
import { checkImageSize, DECODE_LIMITS, UnreadableImage } from '../../../_shared/image_size.ts'
import { loadImageMagick, MAGICK_FORMAT } from '../../../_shared/magick.ts'

export const PHOTO_LIMIT_BYTES = 10 * 1024 * 1024
export const PHOTO_TYPES = IMAGE_TYPES
export const PHOTO_EXTENSIONS: Record<ImageType, string> = {
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
export async function readPhotoFacts(bytes: Uint8Array, type: ImageType): Promise<PhotoFacts> {
  if (type !== 'image/jpeg' && type !== 'image/png') return NONE // exifr reads neither WebP nor GIF
  let tags: Record<string, unknown> | undefined
  try {
    tags = await exifr.parse(bytes, {
      tiff: true,
      exif: true,
      gps: true,
      ifd1: false,
      xmp: false,
      icc: false,
      iptc: false,
      jfif: false,
      ihdr: false,
      reviveValues: false,
      translateValues: false,
      translateKeys: true,
      mergeOutput: true,
    })
  } catch {
    return NONE
  }
  if (!tags) return NONE
  const takenLocal = exifDateTime(tags.DateTimeOriginal) ?? exifDateTime(tags.CreateDate) ??
    exifDateTime(tags.DateTime)
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
//
// Decoding is bounded before it starts: the container's own headers (_shared/image_size.ts) give
// every frame's size, and a photo whose frames ask for too much is refused without decoding
// (a 158 KB GIF can declare ten 6000x6000 frames). ImageMagick's resource limits are the
// second line. Where the runtime has Web Workers (the local stack: every function shares the
// gateway's one thread), decoding runs in a worker with a wall-clock limit, so a slow photo
// holds up no other request; Supabase's edge runtime has no workers, but runs each function
// in its own isolate with CPU-time and memory limits of its own.

/** A decode that takes longer than this (in the worker) is given up as unreadable. */
export const PHOTO_DECODE_TIMEOUT_MS = 20_000

/** checkImageSize with a check-in photo's limits: the most any image is decoded at. */
export const checkPhotoSize = (bytes: Uint8Array, type: ImageType) =>
  checkImageSize(bytes, type, DECODE_LIMITS)

export interface PreparedPhoto {
  /** What is stored: upright, without metadata, in the format it came in. */
  stored: Uint8Array
  /**
   * The 64-bit difference hash (dHash) of the upright first frame, as a signed 64-bit integer
   * in decimal; null when the picture is too plain to compare (almost one colour).
   */
  dhash: string | null
  /**
   * The dHash of the first frame as sent, before its EXIF orientation turned it; null unless
   * that turned it. A copy of a stored (upright, tagless) photo given an orientation tag is
   * still found by it.
   */
  dhashAsSent: string | null
}

/**
 * dHash: the picture in grey, averaged down to 9x8, one bit per pair of horizontal
 * neighbours (left brighter than right). It survives re-encoding, resizing and small edits
 * (a few bits change), so it finds a picture used before even when its bytes differ.
 */
function differenceHash(image: IMagickImage): string | null {
  const grey = image.clone((small) => {
    small.grayscale(PixelIntensityMethod.Rec709Luma)
    const size = new MagickGeometry(9, 8)
    size.ignoreAspectRatio = true
    small.resize(size, FilterType.Box)
    return small.getPixels((pixels) => pixels.toByteArray(0, 0, 9, 8, 'R'))
  })
  if (!grey || grey.length < 72) return null
  // Less than 8 of 256 grey levels between its brightest and darkest areas: nothing to compare.
  if (Math.max(...grey) - Math.min(...grey) < 8) return null
  let hash = 0n
  for (let y = 0; y < 8; y++) {
    for (let x = 0; x < 8; x++) hash = hash << 1n | (grey[y * 9 + x] > grey[y * 9 + x + 1] ? 1n : 0n)
  }
  return BigInt.asIntN(64, hash).toString()
}

/**
 * Decodes the photo (only as the type its bytes were sniffed as), turns it upright, drops
 * every profile, comment and text chunk, hashes its picture and encodes it again in the same
 * format (every frame of an animated GIF or WebP), on the calling thread. Call checkPhotoSize
 * first. Throws UnreadableImage.
 */
export async function decodePhoto(bytes: Uint8Array, type: ImageType): Promise<PreparedPhoto> {
  await loadImageMagick()
  const format = MAGICK_FORMAT[type]
  try {
    return ImageMagick.readCollection(bytes, new MagickReadSettings({ format }), (frames) => {
      const turned = frames[0].orientation !== Orientation.Undefined &&
        frames[0].orientation !== Orientation.TopLeft
      const dhashAsSent = turned ? differenceHash(frames[0]) : null
      for (const frame of frames) {
        frame.autoOrient()
        frame.strip()
      }
      const dhash = differenceHash(frames[0])
      let stored: Uint8Array | undefined
      frames.write(format, (data) => {
        stored = new Uint8Array(data) // a copy: data lives in the module's memory
      })
      if (!stored?.length) throw new UnreadableImage('the image could not be encoded again')
      return { stored, dhash, dhashAsSent }
    })
  } catch (e) {
    // A trap inside the module (out of memory, a bug) is no verdict on the photo.
    if (e instanceof UnreadableImage || e instanceof WebAssembly.RuntimeError) throw e
    throw new UnreadableImage(`not a readable ${type.slice(6).toUpperCase()} image`)
  }
}

// ---- The decoding worker --------------------------------------------------------------------
// One worker, one photo at a time (in arrival order). A photo that runs past the time limit,
// or traps the module (whose memory may then be in any state), ends the worker and is refused;
// a fresh worker takes the next photo.

interface Job {
  bytes: Uint8Array
  type: ImageType
  resolve: (photo: PreparedPhoto) => void
  reject: (e: Error) => void
  timer?: ReturnType<typeof setTimeout>
}
type WorkerReply = PreparedPhoto | { error: string | null }

let worker: Worker | null = null
let running: Job | null = null
const waiting: Job[] = []

const workersAvailable = () => typeof Worker === 'function' && !('EdgeRuntime' in globalThis)

function settle(job: Job, outcome: PreparedPhoto | Error) {
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
  const w = new Worker(new URL('./photo_worker.ts', import.meta.url), { type: 'module' })
  w.onmessage = (e: MessageEvent<WorkerReply>) => {
    if (worker !== w || !running) return
    const reply = e.data
    if (!('error' in reply)) settle(running, reply)
    else if (reply.error !== null) settle(running, new UnreadableImage(reply.error))
    else {
      endWorker(w)
      settle(running, new UnreadableImage('the image could not be decoded'))
    }
  }
  w.onerror = (e) => {
    e.preventDefault()
    console.error('photo worker:', e.message)
    const job = worker === w ? running : null
    endWorker(w)
    if (job) settle(job, new UnreadableImage('the image could not be decoded'))
  }
  return w
}

function next() {
  if (running || waiting.length === 0) return
  const job = running = waiting.shift()!
  const w = worker ??= startWorker()
  job.timer = setTimeout(() => {
    endWorker(w)
    settle(job, new UnreadableImage(`decoding took longer than ${PHOTO_DECODE_TIMEOUT_MS / 1000} s`))
  }, PHOTO_DECODE_TIMEOUT_MS)
  w.postMessage({ bytes: job.bytes, type: job.type })
}

/**
 * The photo as it is stored, and its picture's hash: checked by its headers first (see
 * checkPhotoSize), then decoded in the worker (or on this thread where there are none).
 * Throws UnreadableImage.
 */
export async function preparePhoto(bytes: Uint8Array, type: ImageType): Promise<PreparedPhoto> {
  checkPhotoSize(bytes, type)
  if (!workersAvailable()) return await decodePhoto(bytes, type)
  return await new Promise((resolve, reject) => {
    waiting.push({ bytes, type, resolve, reject })
    next()
  })
}
