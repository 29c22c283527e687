// The worker that decodes check-in photos off the request thread (see preparePhoto in
// photo.ts): one photo per message, the stored bytes (transferred) or an error back.
import type { ImageType } from '../../../_shared/image_frames.ts'
import { UnreadableImage } from '../../../_shared/image_size.ts'
import { decodePhoto } from './photo.ts'

const scope = globalThis as unknown as {
  onmessage: ((e: MessageEvent<{ bytes: Uint8Array; type: ImageType }>) => void) | null
  postMessage(message: unknown, transfer?: Transferable[]): void
}

scope.onmessage = async (e) => {
  try {
    const photo = await decodePhoto(e.data.bytes, e.data.type)
    scope.postMessage(photo, [photo.stored.buffer as ArrayBuffer])
  } catch (err) {
    if (!(err instanceof UnreadableImage)) console.error('photo worker:', err)
    scope.postMessage({ error: err instanceof UnreadableImage ? err.message : null })
  }
}
