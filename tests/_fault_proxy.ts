// An HTTP proxy in front of the stack's gateway that makes a reply fail after the upstream has
// done the work: the failures a client cannot tell from "nothing happened" (issue 40).
//   reply_503:     the request is forwarded, the upstream commits and answers; the client gets a 503.
//   cut_mid_reply: the upstream's status line, headers and half its body reach the client, then
//                  the connection is closed.
// Raw TCP on the client's side, so the cut is a real one (HTTP/1.1, one request per connection).
export type Fault = 'reply_503' | 'cut_mid_reply'

const HOP_BY_HOP = ['host', 'connection', 'keep-alive', 'content-length', 'transfer-encoding', 'content-encoding']
const encoder = new TextEncoder()

export class FaultProxy {
  readonly url: string
  /** Requests forwarded upstream, and how many of their replies were spoilt. */
  forwarded = 0
  spoilt = 0
  #listener: Deno.TcpListener
  #faults: Fault[] = []
  #serving: Promise<void>

  constructor(private upstream: string) {
    this.#listener = Deno.listen({ hostname: '127.0.0.1', port: 0 })
    this.url = `http://127.0.0.1:${this.#listener.addr.port}`
    this.#serving = this.#serve()
  }

  /** The next request's reply fails this way (then replies pass again). */
  failNext(fault: Fault) {
    this.#faults.push(fault)
  }

  async close() {
    this.#listener.close()
    await this.#serving
  }

  async #serve() {
    try {
      for await (const conn of this.#listener) this.#handle(conn).catch(() => conn.close())
    } catch { /* listener closed */ }
  }

  async #handle(conn: Deno.TcpConn) {
    const request = await readRequest(conn)
    const fault = this.#faults.shift()
    this.forwarded++
    const res = await fetch(`${this.upstream}${request.target}`, {
      method: request.method,
      headers: request.headers,
      body: request.body.length ? request.body : undefined,
    })
    const body = new Uint8Array(await res.arrayBuffer()) // the upstream has answered in full
    if (fault) this.spoilt++
    if (fault === 'reply_503') {
      await writeReply(conn, 503, new Headers({ 'content-type': 'application/json' }),
        encoder.encode(JSON.stringify({ error: 'Service unavailable (fault injected)', code: 'unavailable' })))
    } else if (fault === 'cut_mid_reply') {
      await writeReply(conn, res.status, res.headers, body, Math.floor(body.length / 2))
    } else {
      await writeReply(conn, res.status, res.headers, body)
    }
    conn.close()
  }
}

/** Writes a reply; with `cutAt`, only that many bytes of the body (its Content-Length stays whole). */
async function writeReply(conn: Deno.Conn, status: number, headers: Headers, body: Uint8Array, cutAt?: number) {
  let head = `HTTP/1.1 ${status} ${status === 503 ? 'Service Unavailable' : 'Reply'}\r\n`
  for (const [k, v] of headers) if (!HOP_BY_HOP.includes(k)) head += `${k}: ${v}\r\n`
  head += `content-length: ${body.length}\r\nconnection: close\r\n\r\n`
  await writeAll(conn, encoder.encode(head))
  await writeAll(conn, body.subarray(0, cutAt ?? body.length))
}

async function writeAll(conn: Deno.Conn, bytes: Uint8Array) {
  for (let done = 0; done < bytes.length;) done += await conn.write(bytes.subarray(done))
}

function indexOfBlankLine(bytes: Uint8Array): number {
  for (let i = 0; i + 3 < bytes.length; i++) {
    if (bytes[i] === 13 && bytes[i + 1] === 10 && bytes[i + 2] === 13 && bytes[i + 3] === 10) return i
  }
  return -1
}

/** One HTTP/1.1 request with a Content-Length body (what fetch and supabase-js send). */
async function readRequest(conn: Deno.Conn) {
  let buffer = new Uint8Array(0)
  const more = async () => {
    const chunk = new Uint8Array(65536)
    const n = await conn.read(chunk)
    if (n === null) throw new Error('the client closed the connection mid-request')
    const grown = new Uint8Array(buffer.length + n)
    grown.set(buffer)
    grown.set(chunk.subarray(0, n), buffer.length)
    buffer = grown
  }
  let end = -1
  while ((end = indexOfBlankLine(buffer)) < 0) await more()
  const [requestLine, ...lines] = new TextDecoder().decode(buffer.subarray(0, end)).split('\r\n')
  const [method, target] = requestLine.split(' ')
  const headers = new Headers()
  for (const line of lines) {
    const colon = line.indexOf(':')
    const name = line.slice(0, colon).trim().toLowerCase()
    if (name === 'transfer-encoding') throw new Error('chunked requests are not supported by the fault proxy')
    if (!HOP_BY_HOP.includes(name)) headers.append(name, line.slice(colon + 1).trim())
  }
  const length = Number(lines.find((l) => /^content-length:/i.test(l))?.split(':')[1] ?? 0)
  while (buffer.length < end + 4 + length) await more()
  return { method, target, headers, body: buffer.slice(end + 4, end + 4 + length) }
}
