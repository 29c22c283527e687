// One client's WebSocket: what it may send per second, and the bytes it may leave unread. A
// connection whose client stops reading is closed once MAX_BUFFERED_BYTES are queued for it, so
// a slow or stalled consumer costs the stand-in a bounded amount of memory.
import { MAX_BUFFERED_BYTES, MAX_EVENTS_PER_SECOND, MAX_JOINS_PER_SECOND, RateWindow } from './limits.ts'
import { encode, type Message, type Vsn } from './protocol.ts'

/** What Connection needs of a WebSocket (a test may pass a stand-in). */
export interface Socket {
  readonly readyState: number
  readonly bufferedAmount: number
  send(data: string | Uint8Array): void
  close(code?: number, reason?: string): void
}

export class Connection<C = unknown> {
  channels = new Map<string, C>()
  /** Broadcast and presence messages from the client (hosted: max_events_per_second). */
  readonly events = new RateWindow(MAX_EVENTS_PER_SECOND)
  readonly joins = new RateWindow(MAX_JOINS_PER_SECOND)
  closed = false

  constructor(
    readonly ws: Socket,
    readonly vsn: Vsn,
    readonly apikey: string,
    /** Called once when the connection ends (closed by either side): its channels are left. */
    private readonly onEnd: (conn: Connection<C>) => void,
    private readonly maxBuffered = MAX_BUFFERED_BYTES,
  ) {}

  send(m: Message) {
    if (this.closed || this.ws.readyState !== WebSocket.OPEN) return
    this.ws.send(encode(this.vsn, m))
    if (this.ws.bufferedAmount > this.maxBuffered) {
      this.close(1008, 'Slow consumer: too many bytes left unread')
    }
  }

  /** Closes the socket and ends the connection now, whether or not the client answers the close. */
  close(code: number, reason: string) {
    try {
      this.ws.close(code, reason)
    } catch { /* already closing */ }
    this.end()
  }

  end() {
    if (this.closed) return
    this.closed = true
    this.onEnd(this)
  }
}
