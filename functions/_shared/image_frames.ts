// The size of every frame of an image, read from the container's own headers without decoding
// a pixel: GIF (logical screen and each image descriptor), PNG (IHDR, and APNG's acTL and
// fcTL), WebP (VP8, VP8L, VP8X and each ANMF frame) and JPEG (the first SOF). A decoder
// allocates what these headers say, so a photo is judged by them before it is decoded
// (a decompression bomb is a small file whose headers ask for gigapixels). Linear in the
// file's length; a truncated or malformed header is MalformedImage. The type itself is read
// from the bytes too (sniffImageType): a declared Content-Type proves nothing.

export interface Frame {
  width: number
  height: number
  left: number
  top: number
}

export interface ImageFrames {
  /** The canvas the frames are drawn on (GIF logical screen, PNG IHDR, WebP canvas). */
  width: number
  height: number
  frames: Frame[]
  /** How many frames a decoder may make: at least frames.length (APNG's acTL may announce more). */
  frameCount: number
}

/** The image types accepted anywhere: check-in photos, pack images, Storage's renders. */
export const IMAGE_TYPES = ['image/jpeg', 'image/png', 'image/gif', 'image/webp'] as const
export type ImageType = typeof IMAGE_TYPES[number]

const startsWith = (bytes: Uint8Array, sig: number[], at = 0) => sig.every((b, i) => bytes[at + i] === b)

/** The image type the bytes really are, or null when they are none of the accepted four. */
export function sniffImageType(bytes: Uint8Array): ImageType | null {
  if (startsWith(bytes, [0xff, 0xd8, 0xff])) return 'image/jpeg'
  if (startsWith(bytes, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'image/png'
  if (
    startsWith(bytes, [0x47, 0x49, 0x46, 0x38]) && (bytes[4] === 0x37 || bytes[4] === 0x39) &&
    bytes[5] === 0x61
  ) {
    return 'image/gif'
  }
  if (startsWith(bytes, [0x52, 0x49, 0x46, 0x46]) && startsWith(bytes, [0x57, 0x45, 0x42, 0x50], 8)) {
    return 'image/webp'
  }
  return null
}

export class MalformedImage extends Error {}

const fail = (what: string): never => {
  throw new MalformedImage(what)
}

class Reader {
  constructor(readonly bytes: Uint8Array) {}
  private need(at: number, n: number) {
    if (at < 0 || at + n > this.bytes.length) fail('the file ends inside a header')
  }
  u8(at: number) {
    this.need(at, 1)
    return this.bytes[at]
  }
  u16le(at: number) {
    this.need(at, 2)
    return this.bytes[at] | this.bytes[at + 1] << 8
  }
  u16be(at: number) {
    this.need(at, 2)
    return this.bytes[at] << 8 | this.bytes[at + 1]
  }
  u24le(at: number) {
    this.need(at, 3)
    return this.bytes[at] | this.bytes[at + 1] << 8 | this.bytes[at + 2] << 16
  }
  u32le(at: number) {
    this.need(at, 4)
    return (this.bytes[at] | this.bytes[at + 1] << 8 | this.bytes[at + 2] << 16 |
      this.bytes[at + 3] << 24) >>> 0
  }
  u32be(at: number) {
    this.need(at, 4)
    return (this.bytes[at] << 24 | this.bytes[at + 1] << 16 | this.bytes[at + 2] << 8 |
      this.bytes[at + 3]) >>> 0
  }
  text(at: number, n: number) {
    this.need(at, n)
    return String.fromCharCode(...this.bytes.subarray(at, at + n))
  }
}

/** Every frame's size and place, as the file's headers declare them. Throws MalformedImage. */
export function imageFrames(bytes: Uint8Array, kind: ImageType): ImageFrames {
  const r = new Reader(bytes)
  switch (kind) {
    case 'image/gif':
      return gifFrames(r)
    case 'image/png':
      return pngFrames(r)
    case 'image/webp':
      return webpFrames(r)
    case 'image/jpeg':
      return jpegFrames(r)
  }
}

// GIF: blocks after the logical screen descriptor and its colour table. Like ImageMagick's
// reader, a byte that starts no block is skipped (so no frame can hide behind one).
function gifFrames(r: Reader): ImageFrames {
  const width = r.u16le(6)
  const height = r.u16le(8)
  const packed = r.u8(10)
  let at = 13 + (packed & 0x80 ? 3 * 2 ** ((packed & 0x07) + 1) : 0)
  const frames: Frame[] = []
  const skipSubBlocks = () => {
    for (let size = r.u8(at++); size !== 0; size = r.u8(at++)) at += size
  }
  while (at < r.bytes.length) {
    const block = r.bytes[at++]
    if (block === 0x3b) break // trailer
    if (block === 0x21) { // extension: label, then sub-blocks
      at++
      skipSubBlocks()
    } else if (block === 0x2c) { // image descriptor
      frames.push({
        left: r.u16le(at),
        top: r.u16le(at + 2),
        width: r.u16le(at + 4),
        height: r.u16le(at + 6),
      })
      const local = r.u8(at + 8)
      at += 9 + (local & 0x80 ? 3 * 2 ** ((local & 0x07) + 1) : 0)
      at++ // LZW minimum code size
      skipSubBlocks()
    }
  }
  if (frames.length === 0) fail('a GIF without an image')
  return { width, height, frames, frameCount: frames.length }
}

// PNG: chunks after the signature; IHDR first. The default image counts as a frame, and so
// does each APNG frame control chunk (fcTL), whether or not the decoder plays them.
function pngFrames(r: Reader): ImageFrames {
  if (r.text(12, 4) !== 'IHDR') fail('a PNG whose first chunk is not IHDR')
  const width = r.u32be(16)
  const height = r.u32be(20)
  const frames: Frame[] = [{ width, height, left: 0, top: 0 }]
  let declared = 0
  let at = 8
  while (at + 8 <= r.bytes.length) {
    const length = r.u32be(at)
    const type = r.text(at + 4, 4)
    if (type === 'acTL') declared = r.u32be(at + 8)
    if (type === 'fcTL') {
      frames.push({
        width: r.u32be(at + 12),
        height: r.u32be(at + 16),
        left: r.u32be(at + 20),
        top: r.u32be(at + 24),
      })
    }
    if (type === 'IEND') break
    at += 12 + length
  }
  // An acTL that announces more frames than it carries still counts what it announces.
  return { width, height, frames, frameCount: Math.max(frames.length, declared + 1) }
}

/** The size a VP8 (lossy) or VP8L (lossless) bitstream declares, at its chunk's data. */
function webpBitstreamSize(r: Reader, type: string, data: number): [number, number] | null {
  if (type === 'VP8 ') {
    if (r.u8(data + 3) !== 0x9d || r.u8(data + 4) !== 0x01 || r.u8(data + 5) !== 0x2a) {
      fail('a VP8 chunk without its start code')
    }
    return [r.u16le(data + 6) & 0x3fff, r.u16le(data + 8) & 0x3fff]
  }
  if (type === 'VP8L') {
    if (r.u8(data) !== 0x2f) fail('a VP8L chunk without its signature')
    const bits = r.u32le(data + 1)
    return [(bits & 0x3fff) + 1, ((bits >>> 14) & 0x3fff) + 1]
  }
  return null
}

// WebP: RIFF chunks. A simple file is one VP8 or VP8L bitstream; an extended one (VP8X) has a
// canvas, and when animated, one ANMF chunk per frame (whose own bitstream must fit it).
function webpFrames(r: Reader): ImageFrames {
  const end = Math.min(r.bytes.length, 8 + r.u32le(4))
  let canvas: [number, number] | null = null
  let single: [number, number] | null = null
  const frames: Frame[] = []
  let at = 12
  while (at + 8 <= end) {
    const type = r.text(at, 4)
    const size = r.u32le(at + 4)
    const data = at + 8
    if (type === 'VP8X') {
      // Only the first counts for a decoder; the largest counts here.
      const declared: [number, number] = [r.u24le(data + 4) + 1, r.u24le(data + 7) + 1]
      if (!canvas || declared[0] * declared[1] > canvas[0] * canvas[1]) canvas = declared
    } else if (type === 'ANMF') {
      const frame = {
        left: 2 * r.u24le(data),
        top: 2 * r.u24le(data + 3),
        width: r.u24le(data + 6) + 1,
        height: r.u24le(data + 9) + 1,
      }
      // The frame's bitstream (after ALPH, if any) is decoded at its own size.
      let sub = data + 16
      while (sub + 8 <= Math.min(end, data + size)) {
        const inner = webpBitstreamSize(r, r.text(sub, 4), sub + 8)
        if (inner) {
          frame.width = Math.max(frame.width, inner[0])
          frame.height = Math.max(frame.height, inner[1])
        }
        sub += 8 + r.u32le(sub + 4) + (r.u32le(sub + 4) & 1)
      }
      frames.push(frame)
    } else single ??= webpBitstreamSize(r, type, data)
    at = data + size + (size & 1)
  }
  if (!canvas && !single) fail('a WebP without an image')
  const [width, height] = canvas ?? single!
  if (frames.length === 0) {
    frames.push({ width: single?.[0] ?? width, height: single?.[1] ?? height, left: 0, top: 0 })
  }
  return { width, height, frames, frameCount: frames.length }
}

// JPEG: marker segments up to the first start of frame (SOF0-SOF15 but DHT, JPG and DAC),
// which gives the one image's size.
function jpegFrames(r: Reader): ImageFrames {
  let at = 2
  for (;;) {
    if (r.u8(at) !== 0xff) fail('a JPEG segment that does not start with a marker')
    let marker = r.u8(at + 1)
    while (marker === 0xff) marker = r.u8(++at + 1) // fill bytes
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      const height = r.u16be(at + 5)
      const width = r.u16be(at + 7)
      return { width, height, frames: [{ width, height, left: 0, top: 0 }], frameCount: 1 }
    }
    if (marker === 0xda || marker === 0xd9) fail('a JPEG without a frame header')
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd8)) {
      at += 2
      continue
    }
    at += 2 + r.u16be(at + 2)
  }
}
