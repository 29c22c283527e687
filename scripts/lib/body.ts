// Reading request bodies with a ceiling: a body is read chunk by chunk and refused (413) as
// soon as it passes its limit, whether it declares a Content-Length or comes chunked, so a
// client can never make the local stack hold more than the limit in memory.

/** JSON (and other non-upload) bodies through the gateway: PostgREST's and the object store's. */
export const JSON_BODY_LIMIT = 1024 * 1024

export class BodyTooLarge extends Error {
  constructor(readonly limit: number) {
    super(`The body is larger than ${formatBytes(limit)}`)
  }
}

export const formatBytes = (n: number) =>
  n >= 1024 * 1024 && n % (1024 * 1024) === 0 ? `${n / 1024 / 1024} MB` : n >= 1024 && n % 1024 === 0 ? `${n / 1024} KB` : `${n} bytes`

/** The whole body, or BodyTooLarge once more than `limit` bytes were declared or received. */
export async function readLimited(req: Request, limit: number): Promise<Uint8Array<ArrayBuffer>> {
  const declared = req.headers.get('content-length')
  if (declared !== null && Number(declared) > limit) {
    await req.body?.cancel().catch(() => {})
    throw new BodyTooLarge(limit)
  }
  if (!req.body) return new Uint8Array()
  const reader = req.body.getReader()
  const chunks: Uint8Array[] = []
  let total = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    total += value.length
    if (total > limit) {
      await reader.cancel().catch(() => {})
      throw new BodyTooLarge(limit)
    }
    chunks.push(value)
  }
  const out = new Uint8Array(total)
  let at = 0
  for (const c of chunks) {
    out.set(c, at)
    at += c.length
  }
  return out
}
