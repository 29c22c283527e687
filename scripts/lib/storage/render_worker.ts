// The worker that renders transformed images off the gateway's thread (see render.ts): one
// image per message, the result (transferred) or an error back.
import { transformImage, UnrenderableImage } from './transform.ts'

const scope = globalThis as unknown as {
  onmessage: ((e: MessageEvent) => void) | null
  postMessage(message: unknown, transfer?: Transferable[]): void
}

scope.onmessage = async (e) => {
  const { bytes, source, options, accept } = e.data
  try {
    const out = await transformImage(bytes, source, options, accept)
    scope.postMessage(out, [out.bytes.buffer as ArrayBuffer])
  } catch (err) {
    if (!(err instanceof UnrenderableImage)) console.error('render worker:', err)
    scope.postMessage({ error: err instanceof UnrenderableImage ? err.message : null })
  }
}
