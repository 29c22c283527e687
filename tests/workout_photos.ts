// Test photos for the workout check-in tests: a JPEG carrying real EXIF (a TIFF block with
// DateTimeOriginal, OffsetTimeOriginal and GPS, as cameras write it), a PNG without EXIF, and
// small helpers for the local time zone the tests work in.
import { encode } from 'fast-png'

type Entry = { tag: number; type: 'ascii' | 'long' | 'rational'; value: string | number | number[] }

const TYPE_CODE = { ascii: 2, long: 4, rational: 5 }
const dataBytes = (e: Entry) =>
  e.type === 'ascii' ? (e.value as string).length + 1 : e.type === 'long' ? 4 : 8 * ((e.value as number[]).length / 2)
const outOfLine = (e: Entry) => (dataBytes(e) > 4 ? dataBytes(e) : 0)
const ifdSize = (entries: Entry[]) => 2 + entries.length * 12 + 4 + entries.reduce((n, e) => n + outOfLine(e), 0)

function writeIfd(view: DataView, offset: number, entries: Entry[]) {
  let data = offset + 2 + entries.length * 12 + 4
  view.setUint16(offset, entries.length, true)
  entries.forEach((e, i) => {
    const at = offset + 2 + i * 12
    view.setUint16(at, e.tag, true)
    view.setUint16(at + 2, TYPE_CODE[e.type], true)
    const count = e.type === 'ascii' ? (e.value as string).length + 1 : e.type === 'long' ? 1 : (e.value as number[]).length / 2
    view.setUint32(at + 4, count, true)
    const target = outOfLine(e) ? data : at + 8
    if (outOfLine(e)) {
      view.setUint32(at + 8, data, true)
      data += outOfLine(e)
    }
    if (e.type === 'ascii') [...(e.value as string)].forEach((ch, k) => view.setUint8(target + k, ch.charCodeAt(0)))
    else if (e.type === 'long') view.setUint32(target, e.value as number, true)
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

/** A JPEG whose EXIF says when (camera wall clock "YYYY:MM:DD HH:MM:SS", offset "+HH:MM") and where. */
export function jpegWithExif(o: { taken: string; offset?: string; gps?: { lat: number; lng: number } }): Uint8Array {
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
  const ifd0: Entry[] = [{ tag: 0x8769, type: 'long', value: 0 }]
  if (gps.length) ifd0.push({ tag: 0x8825, type: 'long', value: 0 })
  const exifAt = 8 + ifdSize(ifd0)
  const gpsAt = exifAt + ifdSize(exif)
  ifd0[0].value = exifAt
  if (gps.length) ifd0[1].value = gpsAt
  const tiff = new Uint8Array(gpsAt + (gps.length ? ifdSize(gps) : 0))
  const view = new DataView(tiff.buffer)
  tiff.set([0x49, 0x49, 0x2a, 0x00], 0)
  view.setUint32(4, 8, true)
  writeIfd(view, 8, ifd0)
  writeIfd(view, exifAt, exif)
  if (gps.length) writeIfd(view, gpsAt, gps)
  const app1Length = 2 + 6 + tiff.length
  const body = [0xff, 0xd8, 0xff, 0xe1, app1Length >> 8, app1Length & 0xff, ...new TextEncoder().encode('Exif\0\0')]
  // A comment segment standing in for image data, then the end marker.
  return new Uint8Array([...body, ...tiff, 0xff, 0xfe, 0x00, 0x06, 0x6a, 0x70, 0x67, 0x21, 0xff, 0xd9])
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
  `${d.getUTCFullYear()}:${pad(d.getUTCMonth() + 1)}:${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`
/** "+05:00" for an hour offset. */
export const offsetText = (h: number) => `${h < 0 ? '-' : '+'}${pad(Math.abs(h))}:00`
