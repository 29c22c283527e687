// ImageMagick (magick-wasm: WebAssembly, runs in Deno and in Supabase edge functions), loaded
// once per worker with resource limits behind the header check (image_size.ts), for the
// check-in photos and the local Storage's image renders.
import { initializeImageMagick, MagickFormat, ResourceLimits } from '@imagemagick/magick-wasm'
import type { ImageType } from './image_frames.ts'
import { DECODE_LIMITS } from './image_size.ts'

/** The format to read each accepted type as: only as what its bytes were sniffed as. */
export const MAGICK_FORMAT: Record<ImageType, MagickFormat> = {
  'image/jpeg': MagickFormat.Jpeg,
  'image/png': MagickFormat.Png,
  'image/gif': MagickFormat.Gif,
  'image/webp': MagickFormat.WebP,
}

let magickReady: Promise<void> | undefined
/** Loads the ImageMagick WebAssembly module once per worker (about 0.25 s), with its limits. */
export function loadImageMagick(): Promise<void> {
  magickReady ??= Deno.readFile(new URL(import.meta.resolve('@imagemagick/magick-wasm/magick.wasm')))
    .then((wasm) => initializeImageMagick(wasm))
    .then(() => {
      // Second line behind the header check: no image larger than DECODE_LIMITS allow, no more
      // frames, no pixel cache beyond memory (disk 0: ImageMagick would otherwise spill a
      // too-large image to a "disk" that is memory in WebAssembly).
      ResourceLimits.width = BigInt(DECODE_LIMITS.maxSide)
      ResourceLimits.height = BigInt(DECODE_LIMITS.maxSide)
      ResourceLimits.area = BigInt(DECODE_LIMITS.maxPixels)
      ResourceLimits.listLength = BigInt(DECODE_LIMITS.maxFrames)
      ResourceLimits.memory = 512n * 1024n * 1024n
      ResourceLimits.maxMemoryRequest = 256n * 1024n * 1024n
      ResourceLimits.disk = 0n
    })
    .catch((e) => {
      magickReady = undefined
      throw e
    })
  return magickReady
}
