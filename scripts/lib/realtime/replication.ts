// Reads the changes of the tables in a publication through logical replication: a temporary
// pgoutput slot (dropped by Postgres when the connection ends, so nothing is left behind) on a
// replication connection of the `postgres` client. Values arrive as Postgres's text output.
import postgres from 'postgres'

export interface RelationColumn {
  name: string
  typeOid: number
  typmod: number
  isKey: boolean // part of the replica identity (the primary key by default)
}

export interface Relation {
  id: number // pg_class oid
  schema: string
  table: string
  columns: RelationColumn[]
}

/** One column's value: text, null, or undefined for an unchanged TOASTed value (not sent). */
export type Tuple = (string | null | undefined)[]

export interface Change {
  type: 'INSERT' | 'UPDATE' | 'DELETE'
  relation: Relation
  commitTime: Date
  newTuple?: Tuple
  /** UPDATE: the old key when it changed; DELETE: the old key (replica identity default). */
  oldTuple?: Tuple
  /** The old tuple holds only the key (other columns are sent as null), not the whole row. */
  oldIsKey?: boolean
}

const PG_EPOCH_MS = Date.UTC(2000, 0, 1)

/** Parses pgoutput (protocol 1) messages; calls onChange for each row change. */
export class PgOutputParser {
  private relations = new Map<number, Relation>()
  private commitTime = new Date()
  constructor(private onChange: (c: Change) => void, private onRelation: (r: Relation) => void = () => {}) {}

  parse(b: Uint8Array) {
    const v = new DataView(b.buffer, b.byteOffset, b.byteLength)
    const kind = String.fromCharCode(b[0])
    let at = 1
    const int32 = () => (at += 4, v.getUint32(at - 4))
    const int16 = () => (at += 2, v.getUint16(at - 2))
    const cstr = () => {
      const end = b.indexOf(0, at)
      const s = new TextDecoder().decode(b.subarray(at, end))
      at = end + 1
      return s
    }
    const tuple = (): Tuple => {
      const n = int16()
      const out: Tuple = []
      for (let i = 0; i < n; i++) {
        const t = String.fromCharCode(b[at++])
        if (t === 'n') out.push(null)
        else if (t === 'u') out.push(undefined)
        else {
          const len = int32()
          out.push(new TextDecoder().decode(b.subarray(at, at + len)))
          at += len
        }
      }
      return out
    }
    switch (kind) {
      case 'B': { // final LSN (8), commit time (8, µs since 2000-01-01), xid (4)
        const micros = v.getBigInt64(9)
        this.commitTime = new Date(PG_EPOCH_MS + Number(micros / 1000n))
        return
      }
      case 'R': {
        const id = int32()
        const schema = cstr() || 'pg_catalog'
        const table = cstr()
        at += 1 // replica identity setting
        const n = int16()
        const columns: RelationColumn[] = []
        for (let i = 0; i < n; i++) {
          const flags = b[at++]
          const name = cstr()
          columns.push({
            name,
            isKey: (flags & 1) === 1,
            typeOid: int32(),
            typmod: v.getInt32((at += 4) - 4),
          })
        }
        const r = { id, schema, table, columns }
        this.relations.set(id, r)
        this.onRelation(r)
        return
      }
      case 'I': {
        const relation = this.relations.get(int32())!
        at += 1 // 'N'
        this.onChange({ type: 'INSERT', relation, commitTime: this.commitTime, newTuple: tuple() })
        return
      }
      case 'U': {
        const relation = this.relations.get(int32())!
        let oldTuple: Tuple | undefined
        const oldIsKey = b[at] === 0x4b // 'K' old key, 'O' old row
        if (b[at] === 0x4b || b[at] === 0x4f) {
          at += 1
          oldTuple = tuple()
        }
        at += 1 // 'N'
        this.onChange({
          type: 'UPDATE',
          relation,
          commitTime: this.commitTime,
          oldTuple,
          oldIsKey,
          newTuple: tuple(),
        })
        return
      }
      case 'D': {
        const relation = this.relations.get(int32())!
        const oldIsKey = b[at++] === 0x4b // 'K' old key, 'O' old row
        this.onChange({ type: 'DELETE', relation, commitTime: this.commitTime, oldTuple: tuple(), oldIsKey })
        return
      }
      default: // C(ommit), O(rigin), Y(type), T(runcate): nothing to deliver
        return
    }
  }
}

/** A running replication stream on `publication`; `ready` settles once it streams. */
export function startReplication(
  dbUrl: string,
  publication: string,
  onChange: (c: Change) => void,
  onRelation: (r: Relation) => void,
  onEnd: (e?: unknown) => void,
) {
  const sql = postgres(dbUrl, {
    max: 1,
    fetch_types: false,
    idle_timeout: 0,
    max_lifetime: null,
    onnotice: () => {},
    connection: { replication: 'database', application_name: 'realtime_local' } as Record<string, string>,
  })
  const slot = `realtime_local_${crypto.randomUUID().replaceAll('-', '').slice(0, 16)}`
  const parser = new PgOutputParser(onChange, onRelation)
  let lsn = 0n
  let feedback: ReturnType<typeof setInterval> | undefined
  let ended = false

  const ready = (async () => {
    const [created] = await sql.unsafe(
      `CREATE_REPLICATION_SLOT ${slot} TEMPORARY LOGICAL pgoutput NOEXPORT_SNAPSHOT`,
    )
    const start = String(created.consistent_point)
    const stream = await sql.unsafe(
      `START_REPLICATION SLOT ${slot} LOGICAL ${start} (proto_version '1', publication_names '${publication}')`,
    ).writable()
    const [hi, lo] = start.split('/').map((x) => BigInt(`0x${x}`))
    lsn = (hi << 32n) | lo

    /** Standby status update: what we have read is written, flushed and applied. */
    const sendFeedback = () => {
      const out = new Uint8Array(34)
      const v = new DataView(out.buffer)
      out[0] = 0x72 // 'r'
      v.setBigUint64(1, lsn)
      v.setBigUint64(9, lsn)
      v.setBigUint64(17, lsn)
      v.setBigInt64(25, BigInt(Date.now() - PG_EPOCH_MS) * 1000n)
      stream.write(out)
    }
    stream.on('data', (chunk: Uint8Array) => {
      const v = new DataView(chunk.buffer, chunk.byteOffset, chunk.byteLength)
      if (chunk[0] === 0x77) { // 'w' XLogData: start LSN, end LSN, send time, message
        const start = v.getBigUint64(1)
        try {
          parser.parse(chunk.subarray(25))
        } catch (e) {
          console.error('realtime: could not read a replication message', e)
        }
        if (start > lsn) lsn = start
      } else if (chunk[0] === 0x6b) { // 'k' keepalive: end LSN, time, reply requested
        const end = v.getBigUint64(1)
        if (end > lsn) lsn = end
        if (chunk[17]) sendFeedback()
      }
    })
    const finish = (e?: unknown) => {
      if (ended) return
      ended = true
      clearInterval(feedback)
      onEnd(e)
    }
    stream.on('error', finish)
    stream.on('close', () => finish())
    feedback = setInterval(sendFeedback, 10_000)
  })()
  ready.catch((e) => {
    ended = true
    onEnd(e)
  })

  return {
    ready,
    async stop() {
      ended = true
      clearInterval(feedback)
      await sql.end({ timeout: 1 }).catch(() => {})
    },
  }
}
