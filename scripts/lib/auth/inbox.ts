// The local inbox for the e-mails Auth sends (Supabase's local stack runs Mailpit on 54324):
// a page for a browser at /, and Mailpit's JSON API for tests and scripts:
//   GET    /api/v1/messages?start=&limit=   newest first
//   GET    /api/v1/search?query=to:<address> (to:, subject: or words)
//   GET    /api/v1/message/<ID>              one message with HTML and Text (marks it read)
//   DELETE /api/v1/messages                  all, or {"IDs": [...]}
import type postgres from 'postgres'

type Row = Record<string, any>
const address = (a: string) => ({ Name: '', Address: a })

function parseSender(s: string) {
  const m = s.match(/^(.*)<([^>]+)>$/)
  return m ? { Name: m[1].trim(), Address: m[2].trim() } : address(s)
}

const summary = (r: Row) => ({
  ID: String(r.id),
  MessageID: `${r.id}@local-auth`,
  Read: r.read,
  From: parseSender(r.sender),
  To: [address(r.recipient)],
  Cc: [],
  Bcc: [],
  ReplyTo: [],
  Subject: r.subject,
  Created: r.created_at.toISOString(),
  Tags: [],
  Size: r.html.length,
  Attachments: 0,
  Snippet: r.text.replace(/\s+/g, ' ').slice(0, 250),
})

const escapeHtml = (s: string) =>
  s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')

async function page(sql: postgres.Sql, selected: string | null) {
  const rows = await sql`select * from local_auth.inbox order by id desc limit 200`
  const current = selected ? rows.find((r) => String(r.id) === selected) : rows[0]
  const list = rows.map((r) =>
    `<li${r === current ? ' class="on"' : ''}><a href="/?id=${r.id}"><b>${escapeHtml(r.subject)}</b><br>` +
    `${escapeHtml(r.recipient)}<br><small>${r.created_at.toISOString()}</small></a></li>`
  ).join('')
  const view = current
    ? `<h2>${escapeHtml(current.subject)}</h2><p>To: ${escapeHtml(current.recipient)}<br>From: ${
      escapeHtml(current.sender)
    }</p>` +
      `<iframe sandbox="allow-top-navigation-by-user-activation allow-popups" srcdoc="${
        escapeHtml(current.html)
      }"></iframe>`
    : '<p>No e-mails yet. Sign up, ask for a magic link or a password reset, and they appear here.</p>'
  return `<!doctype html><html><head><meta charset="utf-8"><title>Local inbox</title>
<meta http-equiv="refresh" content="10">
<style>body{font-family:system-ui,sans-serif;margin:0;display:flex;height:100vh}ul{list-style:none;margin:0;padding:0;
width:22rem;overflow:auto;border-right:1px solid #ddd}li a{display:block;padding:.6rem;color:inherit;text-decoration:none;
border-bottom:1px solid #eee}li.on a{background:#eef}main{flex:1;padding:1rem;overflow:auto}iframe{width:100%;height:60vh;
border:1px solid #ddd}</style></head><body><ul>${list}</ul><main><h1>Local inbox</h1>${view}</main></body></html>`
}

function matches(r: Row, query: string) {
  for (const term of query.match(/\w+:"[^"]*"|\w+:\S+|"[^"]*"|\S+/g) ?? []) {
    const m = term.match(/^(\w+):"?([^"]*)"?$/)
    const [field, value] = m
      ? [m[1].toLowerCase(), m[2].toLowerCase()]
      : ['', term.replace(/"/g, '').toLowerCase()]
    const hay = field === 'to'
      ? r.recipient
      : field === 'subject'
      ? r.subject
      : field === 'from'
      ? r.sender
      : `${r.recipient} ${r.subject} ${r.text}`
    if (!String(hay).toLowerCase().includes(value)) return false
  }
  return true
}

export async function handleInbox(sql: postgres.Sql, req: Request): Promise<Response> {
  const url = new URL(req.url)
  const p = url.pathname
  if (p === '/' && req.method === 'GET') {
    return new Response(await page(sql, url.searchParams.get('id')), {
      headers: { 'content-type': 'text/html; charset=utf-8' },
    })
  }
  if ((p === '/api/v1/messages' || p === '/api/v1/search') && req.method === 'GET') {
    const start = Math.max(0, Number(url.searchParams.get('start') ?? 0) || 0)
    const limit = Math.min(1000, Math.max(1, Number(url.searchParams.get('limit') ?? 50) || 50))
    let rows: Row[] = [...await sql`select * from local_auth.inbox order by id desc`]
    if (p === '/api/v1/search') rows = rows.filter((r) => matches(r, url.searchParams.get('query') ?? ''))
    const slice = rows.slice(start, start + limit)
    return Response.json({
      total: rows.length,
      unread: rows.filter((r) => !r.read).length,
      count: slice.length,
      messages_count: rows.length,
      start,
      tags: [],
      messages: slice.map(summary),
    })
  }
  // Ids are bigints: a longer run of digits is no message (not a query Postgres would refuse).
  const one = p.match(/^\/api\/v1\/message\/([1-9]\d{0,17})$/)
  if (one && req.method === 'GET') {
    const [r] = await sql`update local_auth.inbox set read = true where id = ${one[1]} returning *`
    if (!r) return new Response('message not found', { status: 404 })
    return Response.json({
      ...summary(r),
      ReturnPath: parseSender(r.sender).Address,
      Date: r.created_at.toISOString(),
      Text: r.text,
      HTML: r.html,
      Inline: [],
      Attachments: [],
    })
  }
  if (p === '/api/v1/messages' && req.method === 'DELETE') {
    const body = await req.json().catch(() => ({}))
    const ids = Array.isArray(body?.IDs) ? body.IDs.map(String) : null
    if (ids?.length) await sql`delete from local_auth.inbox where id::text = any(${ids})`
    else await sql`delete from local_auth.inbox`
    return new Response('ok')
  }
  return new Response('not found', { status: 404 })
}
