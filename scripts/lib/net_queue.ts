// Sends the requests that net.http_post/net.http_get queued, as pg_net's background worker
// does on Supabase, and records each reply in net._http_response.
import type postgres from 'postgres'

type Row = {
  id: number
  method: string
  url: string
  headers: Record<string, string>
  params: Record<string, string>
  body: Uint8Array | null
  timeout_milliseconds: number
}

async function send(r: Row) {
  const url = new URL(r.url)
  for (const [k, v] of Object.entries(r.params ?? {})) url.searchParams.set(k, String(v))
  const ctrl = new AbortController()
  const timer = setTimeout(() => ctrl.abort(), r.timeout_milliseconds)
  try {
    const res = await fetch(url, { method: r.method, headers: r.headers, body: r.body ? new Uint8Array(r.body) as unknown as BodyInit : undefined, signal: ctrl.signal })
    const content = await res.text()
    return {
      status_code: res.status,
      content_type: res.headers.get('content-type'),
      headers: Object.fromEntries(res.headers),
      content,
      timed_out: false,
      error_msg: null,
    }
  } catch (e) {
    const timedOut = ctrl.signal.aborted
    return {
      status_code: null,
      content_type: null,
      headers: null,
      content: null,
      timed_out: timedOut,
      error_msg: timedOut ? 'Timeout was reached' : String(e),
    }
  } finally {
    clearTimeout(timer)
  }
}

/** At most this many requests in flight; each is sent on its own, as pg_net's worker does, so a
 *  slow endpoint (a worker that runs for seconds) never holds back the requests queued after it. */
const MAX_IN_FLIGHT = 200

/** Takes queued requests (each exactly once, even with several workers) and starts sending them;
 *  `done` is called as each reply is recorded. */
async function drainOnce(sql: postgres.Sql, room: number, done: () => void) {
  const rows = await sql<Row[]>`
    delete from net.http_request_queue
    where id in (select id from net.http_request_queue order by id limit ${Math.min(20, room)} for update skip locked)
    returning id, method, url, headers, params, body, timeout_milliseconds`
  for (const r of rows) {
    send(r)
      .then((out) => sql`insert into net._http_response ${sql({ id: r.id, ...out })} on conflict (id) do nothing`)
      .catch((e) => console.error('net queue:', e))
      .finally(done)
  }
  return rows.length
}

export function drainNetQueue(sql: postgres.Sql) {
  let running = false
  let again = false
  let inFlight = 0
  const kick = async () => {
    if (running) {
      again = true
      return
    }
    running = true
    try {
      do {
        again = false
        while (inFlight < MAX_IN_FLIGHT) {
          const taken = await drainOnce(sql, MAX_IN_FLIGHT - inFlight, () => {
            inFlight--
            kick()
          })
          inFlight += taken
          if (taken === 0) break
        }
      } while (again)
    } catch (e) {
      console.error('net queue:', e)
    } finally {
      running = false
    }
  }
  sql.listen('net_http_request', () => kick()).catch((e) => console.error('net queue listen:', e))
  setInterval(kick, 1000)
  kick()
}
