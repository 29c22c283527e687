// A small multipart/form-data parser for the local object store.

export interface Part {
  name?: string
  filename?: string
  type?: string
  content: Uint8Array
}

/** A small multipart/form-data parser: Deno's Request.formData() drops the field named ''
 *  that storage-js puts the file under. */
export function parseMultipart(body: Uint8Array, boundary: string, malformed: () => never): Part[] {
  const enc = new TextEncoder()
  const delim = enc.encode(`\r\n--${boundary}`)
  const parts: Part[] = []
  let pos = indexOf(body, delim.subarray(2), 0) // the first delimiter may open the body, without CRLF
  if (pos < 0) malformed()
  pos += delim.length - 2
  while (body[pos] !== 45 || body[pos + 1] !== 45) { // "--" after a delimiter closes the body
    if (body[pos] !== 13 || body[pos + 1] !== 10) malformed()
    const next = indexOf(body, delim, pos + 2)
    if (next < 0) malformed()
    const part = body.subarray(pos + 2, next)
    const split = indexOf(part, enc.encode('\r\n\r\n'), 0)
    if (split < 0) malformed()
    const head = new TextDecoder().decode(part.subarray(0, split))
    const disposition = head.match(/^content-disposition:(.*)$/im)?.[1] ?? ''
    parts.push({
      name: disposition.match(/\bname="([^"]*)"/i)?.[1],
      filename: disposition.match(/\bfilename="([^"]*)"/i)?.[1],
      type: head.match(/^content-type:\s*(.*?)\s*$/im)?.[1],
      content: part.subarray(split + 4),
    })
    pos = next + delim.length
  }
  return parts
}

function indexOf(hay: Uint8Array, needle: Uint8Array, from: number): number {
  for (
    let i = hay.indexOf(needle[0], from);
    i >= 0 && i + needle.length <= hay.length;
    i = hay.indexOf(needle[0], i + 1)
  ) {
    let j = 1
    while (j < needle.length && hay[i + j] === needle[j]) j++
    if (j === needle.length) return i
  }
  return -1
}
