// The worker that decodes check-in photos off the request thread (see preparePhoto in
// workout_photo.ts): one photo per message, the stored bytes (transferred) or an error back.
import { decodePhoto, type PhotoType, UnreadablePhoto } from './workout_photo.ts'

const scope = globalThis as unknown as {
  onmessage: ((e: MessageEvent<{ bytes: Uint8Array; type: PhotoType }>) => void) | null
  postMessage(message: unknown, transfer?: Transferable[]): void
}

scope.onmessage = async (e) => {
  try {
    const photo = await decodePhoto(e.data.bytes, e.data.type)
    scope.postMessage(photo, [photo.stored.buffer as ArrayBuffer])
  } catch (err) {
    if (!(err instanceof UnreadablePhoto)) console.error('photo worker:', err)
    scope.postMessage({ error: err instanceof UnreadablePhoto ? err.message : null })
  }
}
