// Whether an image may be decoded at all, judged from its headers before a decoder sees it
// (image_frames.ts reads them): a decoder allocates what the headers declare, so a small file
// asking for gigapixels is refused here. Used by the check-in photos, the tone packs' images and
// the local Storage's image renders, each with its own limits.
import { type ImageFrames, imageFrames, type ImageType, MalformedImage } from './image_frames.ts'

/** The image could not be decoded as what its bytes claim to be, or is too large. */
export class UnreadableImage extends Error {}

/** What an image may ask a decoder for, judged from its headers (checkImageSize). */
export interface ImageSizeLimits {
  /** One frame, and the canvas. */
  maxPixels: number
  /** Width or height. */
  maxSide: number
  maxFrames: number
  /** All frames together (an animation is decoded whole). */
  maxTotalPixels: number
}

/**
 * The most any image is decoded at here (a check-in photo, a Storage render's source), and
 * ImageMagick's own resource limits (magick.ts): one frame a 24-megapixel camera's 6000x4000 or
 * a phone's 5712x4284; a side a panorama's, not a strip's.
 */
export const DECODE_LIMITS: ImageSizeLimits = {
  maxPixels: 25_000_000,
  maxSide: 30_000,
  maxFrames: 50,
  maxTotalPixels: 40_000_000,
}

const megapixels = (n: number) => `${Math.round(n / 100_000) / 10}`

/**
 * Refuses, from the headers alone, an image that would decode to more than `limits` allow:
 * a frame or canvas over maxPixels or maxSide, more than maxFrames frames, more than
 * maxTotalPixels over all frames, a frame outside the canvas or an empty one. Throws
 * UnreadableImage; takes a few milliseconds for 10 MB. Returns the headers' sizes.
 */
export function checkImageSize(bytes: Uint8Array, type: ImageType, limits: ImageSizeLimits): ImageFrames {
  let image
  try {
    image = imageFrames(bytes, type)
  } catch (e) {
    if (e instanceof MalformedImage) {
      throw new UnreadableImage(`not a readable ${type.slice(6).toUpperCase()} image (${e.message})`)
    }
    throw e
  }
  const { width, height, frames, frameCount } = image
  if (frameCount > limits.maxFrames) {
    throw new UnreadableImage(`at most ${limits.maxFrames} frames (this one has ${frameCount})`)
  }
  const sides = [[width, height], ...frames.map((f) => [f.width, f.height])]
  for (const [w, h] of sides) {
    if (w * h > limits.maxPixels) {
      throw new UnreadableImage(`at most ${megapixels(limits.maxPixels)} megapixels (this one is ${w}x${h})`)
    }
    if (w > limits.maxSide || h > limits.maxSide) {
      throw new UnreadableImage(`at most ${limits.maxSide} pixels a side (this one is ${w}x${h})`)
    }
  }
  if (sides.some(([w, h]) => w === 0 || h === 0)) throw new UnreadableImage('an image without pixels')
  const outside = frames.findIndex((f) => f.left + f.width > width || f.top + f.height > height)
  if (outside >= 0) {
    const f = frames[outside]
    throw new UnreadableImage(
      `frame ${
        outside + 1
      } (${f.width}x${f.height} at ${f.left},${f.top}) lies outside the ${width}x${height} image`,
    )
  }
  const total = frames.reduce((n, f) => n + f.width * f.height, 0)
  if (total > limits.maxTotalPixels) {
    throw new UnreadableImage(
      `at most ${megapixels(limits.maxTotalPixels)} megapixels over all frames (this one has ${
        megapixels(total)
      })`,
    )
  }
  return image
}
