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

/** Takes queued requests (each exactly once, even with several workers) and sends them. */
async function drainOnce(sql: postgres.Sql) {
  const rows = await sql<Row[]>`
    delete from net.http_request_queue
    where id in (select id from net.http_request_queue order by id limit 20 for update skip locked)
    returning id, method, url, headers, params, body, timeout_milliseconds`
  await Promise.all(rows.map(async (r) => {
    const out = await send(r)
    await sql`insert into net._http_response ${sql({ id: r.id, ...out })} on conflict (id) do nothing`
  }))
  return rows.length
}

export function drainNetQueue(sql: postgres.Sql) {
  let running = false
  let again = false
  const kick = async () => {
    if (running) {
      again = true
      return
    }
    running = true
    try {
      do {
        again = false
        while ((await drainOnce(sql)) > 0) { /* keep draining */ }
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
