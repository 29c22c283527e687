// One image transformation with ImageMagick (magick-wasm, the library the check-in photos use),
// as Storage's imgproxy does it: upright (EXIF orientation applied), without metadata, resized
//   cover   (default) to fill width x height, keeping the aspect ratio, the overflow cropped
//           around the centre;
//   contain to fit inside width x height, keeping the aspect ratio;
//   fill    to exactly width x height, stretched;
// with only one side given, the other follows the aspect ratio. An image is never enlarged
// (imgproxy's default) except by `fill` with both sides given. Only the first frame of an
// animation is rendered. The input is bounded before decoding as a check-in photo is
// (DECODE_LIMITS: pixels, sides, frames), and ImageMagick's resource limits stand behind it.
import {
  Gravity,
  ImageMagick,
  MagickFormat,
  MagickGeometry,
  MagickReadSettings,
} from '@imagemagick/magick-wasm'
import type { ImageType } from '../../../functions/_shared/image_frames.ts'
import { checkImageSize, DECODE_LIMITS, UnreadableImage } from '../../../functions/_shared/image_size.ts'
import { loadImageMagick, MAGICK_FORMAT } from '../../../functions/_shared/magick.ts'
import type { TransformOptions } from './transform_options.ts'
import { outputType, plan } from './render_plan.ts'

export interface Rendered {
  bytes: Uint8Array
  contentType: string
}

const WRITE_FORMAT: Record<string, [MagickFormat, string]> = {
  'image/jpeg': [MagickFormat.Jpeg, 'image/jpeg'],
  'image/png': [MagickFormat.Png, 'image/png'],
  'image/gif': [MagickFormat.Gif, 'image/gif'],
  'image/webp': [MagickFormat.WebP, 'image/webp'],
  'image/avif': [MagickFormat.Avif, 'image/avif'],
}
export const DEFAULT_QUALITY = 80
const LOSSY = new Set(['image/jpeg', 'image/webp', 'image/avif'])

/** The refused image's reason; the caller answers 422 as Storage passes on imgproxy's 422. */
export class UnrenderableImage extends Error {}

export async function transformImage(
  bytes: Uint8Array,
  source: ImageType,
  o: TransformOptions,
  accept: string | null,
): Promise<Rendered> {
  try {
    checkImageSize(bytes, source, DECODE_LIMITS)
  } catch (e) {
    if (e instanceof UnreadableImage) throw new UnrenderableImage(e.message)
    throw e
  }
  await loadImageMagick()
  const type = outputType(source, o, accept)
  const [format, contentType] = WRITE_FORMAT[type]
  try {
    return ImageMagick.read(bytes, new MagickReadSettings({ format: MAGICK_FORMAT[source] }), (image) => {
      image.autoOrient()
      image.strip()
      const { resize, crop } = plan(image.width, image.height, o)
      if (resize) {
        const g = new MagickGeometry(resize.w, resize.h)
        g.ignoreAspectRatio = resize.exact
        image.resize(g)
      }
      if (crop) {
        image.crop(new MagickGeometry(crop.w, crop.h), Gravity.Center)
        image.resetPage() // drop the crop's canvas offset, which GIF and PNG would keep
      }
      // Quality is for the lossy encoders; for PNG and GIF ImageMagick would read it as zlib settings.
      if (LOSSY.has(contentType)) image.quality = o.quality ?? DEFAULT_QUALITY
      let out: Uint8Array | undefined
      image.write(format, (data) => {
        out = new Uint8Array(data) // a copy: data lives in the module's memory
      })
      if (!out?.length) throw new UnrenderableImage('the image could not be encoded')
      return { bytes: out, contentType }
    })
  } catch (e) {
    if (e instanceof UnrenderableImage || e instanceof WebAssembly.RuntimeError) throw e
    throw new UnrenderableImage(`not a readable ${source.slice(6).toUpperCase()} image`)
  }
}
