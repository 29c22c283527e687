// Test photos for the workout check-in tests: real (decodable) JPEG, PNG, WebP and GIF images
// carrying metadata as cameras and apps write it (EXIF: a TIFF block with DateTimeOriginal,
// OffsetTimeOriginal, GPS and Orientation; XMP; IPTC; comments), a PNG without any, a check for
// metadata left in stored bytes, and small helpers for the local time zone the tests work in.
import { encode } from 'fast-png'
import {
  ImageMagick,
  MagickColor,
  MagickFormat,
  MagickImage,
  MagickImageInfo,
  MagickReadSettings,
  NoiseType,
} from '@imagemagick/magick-wasm'
import { loadImageMagick } from '../functions/_shared/magick.ts'

await loadImageMagick()

type Entry = { tag: number; type: 'ascii' | 'short' | 'long' | 'rational'; value: string | number | number[] }

const TYPE_CODE = { ascii: 2, short: 3, long: 4, rational: 5 }
const dataBytes = (e: Entry) =>
  e.type === 'ascii'
    ? (e.value as string).length + 1
    : e.type === 'long'
    ? 4
    : e.type === 'short'
    ? 2
    : 8 * ((e.value as number[]).length / 2)
const outOfLine = (e: Entry) => (dataBytes(e) > 4 ? dataBytes(e) : 0)
const ifdSize = (entries: Entry[]) =>
  2 + entries.length * 12 + 4 + entries.reduce((n, e) => n + outOfLine(e), 0)

function writeIfd(view: DataView, offset: number, entries: Entry[]) {
  let data = offset + 2 + entries.length * 12 + 4
  view.setUint16(offset, entries.length, true)
  entries.forEach((e, i) => {
    const at = offset + 2 + i * 12
    view.setUint16(at, e.tag, true)
    view.setUint16(at + 2, TYPE_CODE[e.type], true)
    const count = e.type === 'ascii'
      ? (e.value as string).length + 1
      : e.type === 'rational'
      ? (e.value as number[]).length / 2
      : 1
    view.setUint32(at + 4, count, true)
    const target = outOfLine(e) ? data : at + 8
    if (outOfLine(e)) {
      view.setUint32(at + 8, data, true)
      data += outOfLine(e)
    }
    if (e.type === 'ascii') {
      ;[...(e.value as string)].forEach((ch, k) => view.setUint8(target + k, ch.charCodeAt(0)))
    } else if (e.type === 'long') view.setUint32(target, e.value as number, true)
    else if (e.type === 'short') view.setUint16(target, e.value as number, true)
    else (e.value as number[]).forEach((n, k) => view.setUint32(target + 4 * k, n, true))
  })
  view.setUint32(offset + 2 + entries.length * 12, 0, true)
}

const dms = (decimal: number) => {
  const abs = Math.abs(decimal)
  const deg = Math.floor(abs)
  const min = Math.floor((abs - deg) * 60)
  const sec = Math.round(((abs - deg) * 60 - min) * 60 * 1000)
  return [deg, 1, min, 1, sec, 1000]
}

export interface ExifFacts {
  /** Camera wall clock "YYYY:MM:DD HH:MM:SS". */
  taken: string
  /** "+HH:MM" */
  offset?: string
  gps?: { lat: number; lng: number }
  /** EXIF orientation (6: the camera was turned 90° clockwise). */
  orientation?: number
}

/** The TIFF block of an APP1 / eXIf / EXIF chunk: DateTimeOriginal, OffsetTimeOriginal, GPS, Orientation. */
export function exifBlock(o: ExifFacts): Uint8Array {
  const exif: Entry[] = [{ tag: 0x9003, type: 'ascii', value: o.taken }]
  if (o.offset) exif.push({ tag: 0x9011, type: 'ascii', value: o.offset })
  const gps: Entry[] = o.gps
    ? [
      { tag: 0x0001, type: 'ascii', value: o.gps.lat >= 0 ? 'N' : 'S' },
      { tag: 0x0002, type: 'rational', value: dms(o.gps.lat) },
      { tag: 0x0003, type: 'ascii', value: o.gps.lng >= 0 ? 'E' : 'W' },
      { tag: 0x0004, type: 'rational', value: dms(o.gps.lng) },
    ]
    : []
  // IFD0 entries in tag order: Orientation (0x0112), ExifIFD (0x8769), GPSIFD (0x8825).
  const ifd0: Entry[] = []
  if (o.orientation) ifd0.push({ tag: 0x0112, type: 'short', value: o.orientation })
  const exifPointer: Entry = { tag: 0x8769, type: 'long', value: 0 }
  ifd0.push(exifPointer)
  const gpsPointer: Entry = { tag: 0x8825, type: 'long', value: 0 }
  if (gps.length) ifd0.push(gpsPointer)
  const exifAt = 8 + ifdSize(ifd0)
  const gpsAt = exifAt + ifdSize(exif)
  exifPointer.value = exifAt
  gpsPointer.value = gpsAt
  const tiff = new Uint8Array(gpsAt + (gps.length ? ifdSize(gps) : 0))
  const view = new DataView(tiff.buffer)
  tiff.set([0x49, 0x49, 0x2a, 0x00], 0)
  view.setUint32(4, 8, true)
  writeIfd(view, 8, ifd0)
  writeIfd(view, exifAt, exif)
  if (gps.length) writeIfd(view, gpsAt, gps)
  return tiff
}

/** An XMP packet giving a GPS position and a creation time, as phone apps write it. */
export function xmpPacket(o: ExifFacts): Uint8Array {
  const pos = o.gps ?? { lat: 0, lng: 0 }
  return new TextEncoder().encode(
    '<?xpacket begin="" id="W5M0MpCehiHzreSzNTczkc9d"?><x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF ' +
      'xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description rdf:about="" ' +
      'xmlns:exif="http://ns.adobe.com/exif/1.0/" xmlns:xmp="http://ns.adobe.com/xap/1.0/" ' +
      `exif:GPSLatitude="${pos.lat}" exif:GPSLongitude="${pos.lng}" xmp:CreateDate="${o.taken}"/>` +
      '</rdf:RDF></x:xmpmeta><?xpacket end="w"?>',
  )
}

/** An IPTC record naming a place (city 2:90, sublocation 2:92). */
export function iptcRecord(): Uint8Array {
  const field = (tag: number, text: string) => {
    const t = new TextEncoder().encode(text)
    return [0x1c, 2, tag, t.length >> 8, t.length & 0xff, ...t]
  }
  return new Uint8Array([...field(90, 'Springfield'), ...field(92, '742 Evergreen Terrace')])
}

/**
 * A small real picture of random pixels (each photo's picture differs, and none is one plain
 * colour), with the metadata set as profiles.
 */
function picture(
  format: MagickFormat,
  o: ExifFacts | null,
  profiles: { xmp?: boolean; iptc?: boolean } = {},
) {
  const image = MagickImage.create()
  image.read(
    Uint8Array.from({ length: 16 * 8 * 3 }, rand),
    new MagickReadSettings({ format: MagickFormat.Rgb, width: 16, height: 8 }),
  )
  try {
    if (o) {
      image.setProfile('exif', new Uint8Array([...new TextEncoder().encode('Exif\0\0'), ...exifBlock(o)]))
    }
    if (o && profiles.xmp) image.setProfile('xmp', xmpPacket(o))
    if (profiles.iptc) image.setProfile('iptc', iptcRecord())
    let out = new Uint8Array()
    image.write(format, (d) => {
      out = new Uint8Array(d)
    })
    return out
  } finally {
    image.dispose()
  }
}
const rand = () => Math.floor(Math.random() * 256)

/**
 * A real 16x8 JPEG whose EXIF (APP1) says when (camera wall clock, offset "+HH:MM"), where and
 * which way up; an XMP APP1 and an IPTC APP13 segment on request.
 */
export function jpegWithExif(
  o: ExifFacts,
  profiles: { xmp?: boolean; iptc?: boolean } = {},
  jpeg: Uint8Array = plainJpeg(),
): Uint8Array {
  const segment = (
    marker: number,
    payload: number[],
  ) => [0xff, marker, (payload.length + 2) >> 8, (payload.length + 2) & 0xff, ...payload]
  const ascii = (text: string) => [...new TextEncoder().encode(text)]
  const segments = [...segment(0xe1, [...ascii('Exif\0\0'), ...exifBlock(o)])]
  if (profiles.xmp) {
    segments.push(...segment(0xe1, [...ascii('http://ns.adobe.com/xap/1.0/\0'), ...xmpPacket(o)]))
  }
  if (profiles.iptc) {
    const iptc = [...iptcRecord()]
    const resource = [
      ...ascii('8BIM'),
      0x04,
      0x04,
      0,
      0,
      0,
      0,
      iptc.length >> 8,
      iptc.length & 0xff,
      ...iptc,
      ...(iptc.length % 2 ? [0] : []),
    ]
    segments.push(...segment(0xed, [...ascii('Photoshop 3.0\0'), ...resource]))
  }
  return new Uint8Array([...jpeg.slice(0, 2), ...segments, ...jpeg.slice(2)])
}

/** A real 16x8 JPEG of random pixels, without metadata (the pixels for jpegWithExif). */
export const plainJpeg = () => picture(MagickFormat.Jpeg, null)

/** A real PNG with an eXIf chunk (what exifr and cameras use) and an iTXt XMP chunk. */
export function pngWithExif(o: ExifFacts): Uint8Array {
  const png = picture(MagickFormat.Png, null)
  const xmp = [...new TextEncoder().encode('XML:com.adobe.xmp\0\0\0\0\0'), ...xmpPacket(o)]
  const idat = findPngChunk(png, 'IDAT')
  return new Uint8Array([
    ...png.slice(0, idat),
    ...pngChunk('eXIf', exifBlock(o)),
    ...pngChunk('iTXt', new Uint8Array(xmp)),
    ...png.slice(idat),
  ])
}

/** A real WebP with EXIF and XMP chunks. */
export function webpWithExif(o: ExifFacts): Uint8Array {
  return picture(MagickFormat.WebP, o, { xmp: true })
}

/** A real GIF with an XMP application extension and a comment naming the place. */
export function gifWithXmp(o: ExifFacts): Uint8Array {
  const gif = picture(MagickFormat.Gif, null)
  // After the header (6), the logical screen descriptor (7) and its global colour table.
  const tableSize = gif[10] & 0x80 ? 3 * 2 ** ((gif[10] & 0x07) + 1) : 0
  const at = 13 + tableSize
  const subBlocks = (bytes: Uint8Array) => {
    const out: number[] = []
    for (let i = 0; i < bytes.length; i += 255) {
      const part = bytes.slice(i, i + 255)
      out.push(part.length, ...part)
    }
    return [...out, 0]
  }
  const xmpExtension = [
    0x21,
    0xff,
    0x0b,
    ...new TextEncoder().encode('XMP DataXMP'),
    ...subBlocks(xmpPacket(o)),
  ]
  const comment = [0x21, 0xfe, ...subBlocks(new TextEncoder().encode(`GPS ${o.gps?.lat} ${o.gps?.lng}`))]
  return new Uint8Array([...gif.slice(0, at), ...xmpExtension, ...comment, ...gif.slice(at)])
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
  return c >>> 0
})
function crc32(bytes: Uint8Array) {
  let c = 0xffffffff
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8)
  return (c ^ 0xffffffff) >>> 0
}
function pngChunk(type: string, data: Uint8Array) {
  const typed = new Uint8Array([...new TextEncoder().encode(type), ...data])
  const out = new Uint8Array(12 + data.length)
  const view = new DataView(out.buffer)
  view.setUint32(0, data.length)
  out.set(typed, 4)
  view.setUint32(8 + data.length, crc32(typed))
  return out
}
function findPngChunk(png: Uint8Array, type: string) {
  let at = 8
  while (at < png.length) {
    const length = new DataView(png.buffer, png.byteOffset).getUint32(at)
    if (String.fromCharCode(...png.slice(at + 4, at + 8)) === type) return at
    at += 12 + length
  }
  throw new Error(`no ${type} chunk`)
}

/** Metadata markers still present in stored bytes (empty when the photo is clean). */
export function metadataMarkers(bytes: Uint8Array): string[] {
  const text = new TextDecoder('latin1').decode(bytes)
  const markers = [
    'Exif\0',
    'EXIF',
    'eXIf',
    'XMP',
    'xmpmeta',
    'xpacket',
    'Photoshop 3.0',
    '8BIM',
    'IPTC',
    'Springfield',
    'Evergreen',
    'GPS',
    'tEXt',
    'zTXt',
    'iTXt',
    'tIME',
  ]
  return markers.filter((m) => text.includes(m))
}

/** The profiles (exif, xmp, iptc, icc, ...) and comment ImageMagick finds in an image. */
export function profilesOf(bytes: Uint8Array): string[] {
  const image = MagickImage.create(bytes)
  try {
    return [...image.profileNames, ...(image.comment ? ['comment'] : [])]
  } finally {
    image.dispose()
  }
}

/** Width and height of an image as ImageMagick reads it. */
export function dimensions(bytes: Uint8Array): [number, number] {
  const info = MagickImageInfo.create(bytes)
  return [info.width, info.height]
}

/** A photo-like JPEG (a random plasma, 320x240, a little grain, quality 85): smooth shapes, as photos have. */
export function photoLikeJpeg(): Uint8Array {
  const image = MagickImage.create()
  try {
    image.read('plasma:', new MagickReadSettings({ width: 320, height: 240 }))
    image.addNoise(NoiseType.Gaussian)
    image.quality = 85
    return image.write(MagickFormat.Jpeg, (d) => new Uint8Array(d))
  } finally {
    image.dispose()
  }
}

/** A JPEG of one colour: nothing to tell it from another. */
export function oneColourJpeg(): Uint8Array {
  const image = MagickImage.create()
  try {
    image.read(new MagickColor(rand(), rand(), rand()), 64, 48)
    return image.write(MagickFormat.Jpeg, (d) => new Uint8Array(d))
  } finally {
    image.dispose()
  }
}

/** The picture encoded again as JPEG at another quality and size (what a re-saving app does). */
export function reencodedJpeg(bytes: Uint8Array, quality: number, scale: number): Uint8Array {
  return ImageMagick.read(bytes, (image) => {
    image.quality = quality
    image.resize(Math.round(image.width * scale), Math.round(image.height * scale))
    return image.write(MagickFormat.Jpeg, (d) => new Uint8Array(d))
  })
}

/** A PNG chunk added before IDAT (an eXIf block, an acTL ...). */
export function withPngChunk(png: Uint8Array, type: string, data: Uint8Array): Uint8Array {
  const idat = findPngChunk(png, 'IDAT')
  return new Uint8Array([...png.slice(0, idat), ...pngChunk(type, data), ...png.slice(idat)])
}

// ---- Decompression bombs: small files whose headers ask for huge pictures --------------------

/** LZW data for `pixels` pixels of colour 0 (what a solid frame compresses to: a few bytes a megapixel). */
function lzwSolid(pixels: number, minCodeSize = 2): Uint8Array {
  const clear = 1 << minCodeSize
  const end = clear + 1
  const out: number[] = []
  let bits = 0
  let count = 0
  let codeSize = minCodeSize + 1
  const emit = (code: number) => {
    bits |= code << count
    count += codeSize
    while (count >= 8) {
      out.push(bits & 0xff)
      bits >>>= 8
      count -= 8
    }
  }
  emit(clear)
  // The dictionary grows by one run of zeros per code: code end+L-1 is a run of L (L >= 2).
  let next = end + 1
  for (let left = pixels; left > 0;) {
    const run = Math.min(left, Math.max(1, next - end))
    emit(run === 1 ? 0 : end + run - 1)
    left -= run
    if (next < 4096) {
      next++
      if (next > 1 << codeSize && codeSize < 12) codeSize++
    }
  }
  emit(end)
  if (count > 0) out.push(bits & 0xff)
  return new Uint8Array(out)
}

/** A GIF of solid frames (each at 0,0) on a logical screen, as decompression bombs are built. */
export function solidGif(
  screenWidth: number,
  screenHeight: number,
  frames: { width: number; height: number }[],
): Uint8Array {
  const u16 = (n: number) => [n & 0xff, n >> 8]
  const parts: number[] = [
    ...new TextEncoder().encode('GIF89a'),
    ...u16(screenWidth),
    ...u16(screenHeight),
    0x80,
    0,
    0,
    255,
    0,
    0,
    0,
    0,
    255,
  ]
  const data = new Map<string, number[]>()
  for (const f of frames) {
    const key = `${f.width}x${f.height}`
    if (!data.has(key)) {
      const lzw = lzwSolid(f.width * f.height)
      const blocks: number[] = [2]
      for (let i = 0; i < lzw.length; i += 255) {
        blocks.push(Math.min(255, lzw.length - i), ...lzw.subarray(i, i + 255))
      }
      data.set(key, [...blocks, 0])
    }
    parts.push(0x2c, ...u16(0), ...u16(0), ...u16(f.width), ...u16(f.height), 0)
    for (const b of data.get(key)!) parts.push(b)
  }
  parts.push(0x3b)
  return new Uint8Array(parts)
}

/** A WebP whose extended header (VP8X) declares a canvas of width x height over a 16x8 picture. */
export function webpWithCanvas(width: number, height: number): Uint8Array {
  const webp = picture(MagickFormat.WebP, null)
  const u24 = (n: number) => [n & 0xff, (n >> 8) & 0xff, (n >> 16) & 0xff]
  // 'VP8X', its size (10), flags and three reserved bytes, then canvas width - 1 and height - 1.
  const vp8x = [
    ...new TextEncoder().encode('VP8X'),
    10,
    0,
    0,
    0,
    0,
    0,
    0,
    0,
    ...u24(width - 1),
    ...u24(height - 1),
  ]
  const out = new Uint8Array([...webp.slice(0, 12), ...vp8x, ...webp.slice(12)])
  new DataView(out.buffer).setUint32(4, out.length - 8, true)
  return out
}

/** A JPEG whose frame header (SOF) declares width x height over a 16x8 picture. */
export function jpegDeclaring(width: number, height: number): Uint8Array {
  const jpeg = plainJpeg()
  for (let at = 2; at < jpeg.length;) {
    const marker = jpeg[at + 1]
    if (marker >= 0xc0 && marker <= 0xc2) {
      new DataView(jpeg.buffer, jpeg.byteOffset).setUint16(at + 5, height)
      new DataView(jpeg.buffer, jpeg.byteOffset).setUint16(at + 7, width)
      return jpeg
    }
    at += 2 + (jpeg[at + 2] << 8 | jpeg[at + 3])
  }
  throw new Error('no SOF')
}

/** A PNG whose header (IHDR) declares width x height over a 2x2 picture: a few hundred bytes
 *  that a decoder would allocate width x height pixels for. */
export function pngDeclaring(width: number, height: number): Uint8Array {
  const png = plainPng()
  const ihdr = findPngChunk(png, 'IHDR')
  const length = new DataView(png.buffer, png.byteOffset).getUint32(ihdr)
  const data = png.slice(ihdr + 8, ihdr + 8 + length)
  new DataView(data.buffer).setUint32(0, width)
  new DataView(data.buffer).setUint32(4, height)
  return new Uint8Array([...png.slice(0, ihdr), ...pngChunk('IHDR', data), ...png.slice(ihdr + 12 + length)])
}

/** A small PNG without EXIF. */
export function plainPng(): Uint8Array {
  return encode({ width: 2, height: 2, data: new Uint8Array(12).fill(200), channels: 3, depth: 8 })
}

/**
 * A fixed-offset zone where it is now about midday, so test windows never cross midnight:
 * { tz: 'Etc/GMT-5', offsetHours: 5 } (Etc/GMT signs are inverted).
 */
export function middayZone(now = new Date()) {
  const offsetHours = Math.max(-11, Math.min(12, 12 - now.getUTCHours()))
  const tz = offsetHours === 0 ? 'Etc/GMT' : `Etc/GMT${offsetHours > 0 ? '-' : '+'}${Math.abs(offsetHours)}`
  const local = new Date(now.getTime() + offsetHours * 3600_000)
  return { tz, offsetHours, local, date: local.toISOString().slice(0, 10) }
}

const pad = (n: number) => String(n).padStart(2, '0')
/** HH:MM of a Date read as UTC fields (use with middayZone().local shifted). */
export const hhmm = (d: Date) => `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}`
/** EXIF "YYYY:MM:DD HH:MM:SS" of a Date's UTC fields. */
export const exifTime = (d: Date) =>
  `${d.getUTCFullYear()}:${pad(d.getUTCMonth() + 1)}:${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:${
    pad(d.getUTCMinutes())
  }:${pad(d.getUTCSeconds())}`
/** "+05:00" for an hour offset. */
export const offsetText = (h: number) => `${h < 0 ? '-' : '+'}${pad(Math.abs(h))}:00`
