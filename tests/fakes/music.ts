// A fake music provider for tests, shaped like Spotify's accounts service and Web API as the
// production client (functions/_shared/music.ts) uses them:
//   GET  /authorize?client_id&response_type=code&redirect_uri&code_challenge_method=S256
//        &code_challenge&state&scope[&login=<music user id>]
//        302 to redirect_uri?code=..&state=.. (the "user" who logs in is `login`, a music
//        user the test created); a bad client_id or method is 400.
//   POST /api/token (form)  grant_type=authorization_code: code, redirect_uri, client_id,
//        code_verifier (S256 of it must equal the challenge; a code is single use);
//        grant_type=refresh_token: refresh_token, client_id (single use: a used or unknown one
//        is 400 {error: "invalid_grant"}; a new one is returned unless the user's
//        rotate_refresh is false). Answers {access_token, token_type, scope, expires_in,
//        refresh_token}.
//   GET  /v1/me                         {id, display_name, type: "user"}
//   GET  /v1/me/player/recently-played  limit (1-50), after|before (ms): only the newest 50
//        plays exist (as on Spotify); with `after` the page is the oldest `limit` plays after
//        it, newest first, and `next` continues after the page's newest; without a cursor, the
//        newest plays and `next` goes back with `before`. Items carry full track objects,
//        or {id, type, uri} only for the user's `simplified` track ids.
//   GET  /v1/tracks?ids=a,b             {tracks: [...]} (at most 50 ids, else 400)
//   An unknown, revoked or expired access token is 401 {error: {status, message}}.
//
// Steering (per music user id, which each test makes unique):
//   POST /__control/user  {id, plays?: [{track_id, played_at}], expires_in?, rotate_refresh?,
//                          simplified?: [track ids], page_size?: n (pages hold at most n items),
//                          latency_ms?: every Web API answer this much later (a real network)}
//                          creates or updates the user
//   POST /__control/script {user, replies: [{path?, status, headers?, body?, delay_ms?}]}
//        the user's next API requests (path prefix match, e.g. "/v1/me/player") get these
//        answers first, in order, once each
//   GET  /__control/requests?user=<id>  {requests: [{method, path, query, at, grant_type?}]}
//   POST /__control/expire {user}        the user's current access tokens expire now
//   POST /__control/grant {user}         a token set for the user without the login (benchmarks)
// Run on its own (`deno run -A tests/fakes/music.ts`), it prints its env as one JSON line.
// The client id is `fake-music-client`.

export const FAKE_MUSIC_CLIENT_ID = 'fake-music-client'

interface Play {
  track_id: string
  played_at: string
}
interface ScriptedReply {
  path?: string
  status: number
  headers?: Record<string, string>
  body?: unknown
  delay_ms?: number
}
interface MusicUser {
  id: string
  plays: Play[]
  expires_in: number
  rotate_refresh: boolean
  simplified: Set<string>
  page_size: number
  latency_ms: number
  script: ScriptedReply[]
  requests: { method: string; path: string; query: Record<string, string>; at: string; grant_type?: string }[]
}
interface Code {
  user: string
  challenge: string
  redirect_uri: string
  used: boolean
}

const users = new Map<string, MusicUser>()
const codes = new Map<string, Code>()
const accessTokens = new Map<string, { user: string; expires: number }>()
const refreshTokens = new Map<string, { user: string; used: boolean }>()

const random = () => crypto.randomUUID().replaceAll('-', '')

/** A deterministic full track object (Spotify's shape) for an id. */
export function trackObject(id: string) {
  return {
    id,
    type: 'track',
    uri: `spotify:track:${id}`,
    name: `Song ${id}`,
    artists: [{ id: `a-${id}`, name: `Artist ${id}`, type: 'artist' }, {
      id: 'a-guest',
      name: 'Guest',
      type: 'artist',
    }],
    album: {
      id: `al-${id}`,
      name: `Album ${id}`,
      images: [{ url: `https://i.scdn.example/${id}/640.jpg`, height: 640, width: 640 }, {
        url: `https://i.scdn.example/${id}/64.jpg`,
        height: 64,
        width: 64,
      }],
    },
    external_urls: { spotify: `https://open.spotify.example/track/${id}` },
    duration_ms: 180000 + id.length,
    explicit: id.endsWith('x'),
    popularity: 50,
  }
}

async function sha256b64url(s: string) {
  const d = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(s)))
  return btoa(String.fromCharCode(...d)).replaceAll('+', '-').replaceAll('/', '_').replace(/=+$/, '')
}

const json = (body: unknown, status = 200, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } })
const apiError = (status: number, message: string) => json({ error: { status, message } }, status)
const oauthError = (error: string, description: string, status = 400) =>
  json({ error, error_description: description }, status)

function issueTokens(user: MusicUser, refresh?: string) {
  const access = `fake-at-${random()}`
  accessTokens.set(access, { user: user.id, expires: Date.now() + user.expires_in * 1000 })
  let refreshOut = refresh
  if (!refreshOut) {
    refreshOut = `fake-rt-${random()}`
    refreshTokens.set(refreshOut, { user: user.id, used: false })
  }
  return {
    access_token: access,
    token_type: 'Bearer',
    scope: 'user-read-recently-played',
    expires_in: user.expires_in,
    refresh_token: refreshOut,
  }
}

function log(user: MusicUser, req: Request, url: URL, grant_type?: string) {
  user.requests.push({
    method: req.method,
    path: url.pathname,
    query: Object.fromEntries(url.searchParams),
    at: new Date().toISOString(),
    ...(grant_type ? { grant_type } : {}),
  })
}

async function scripted(user: MusicUser, path: string): Promise<Response | undefined> {
  const i = user.script.findIndex((r) => !r.path || path.startsWith(r.path))
  if (i < 0) return undefined
  const [r] = user.script.splice(i, 1)
  if (r.delay_ms) await new Promise((ok) => setTimeout(ok, r.delay_ms))
  return json(
    r.body ?? { error: { status: r.status, message: `scripted ${r.status}` } },
    r.status,
    r.headers ?? {},
  )
}

async function token(req: Request, url: URL): Promise<Response> {
  const form = new URLSearchParams(await req.text())
  const grant = form.get('grant_type')
  // PKCE: client_id in the body; a confidential client may use Basic auth instead.
  const basic = req.headers.get('authorization')?.match(/^Basic (.+)$/)?.[1]
  const clientId = form.get('client_id') ?? (basic ? atob(basic).split(':')[0] : null)
  if (clientId !== FAKE_MUSIC_CLIENT_ID) return oauthError('invalid_client', 'Invalid client', 400)
  if (grant === 'authorization_code') {
    const code = codes.get(form.get('code') ?? '')
    if (!code || code.used) return oauthError('invalid_grant', 'Invalid authorization code')
    const user = users.get(code.user)!
    log(user, req, url, grant)
    const early = await scripted(user, '/api/token')
    if (early) return early
    if (form.get('redirect_uri') !== code.redirect_uri) {
      return oauthError('invalid_grant', 'Invalid redirect URI')
    }
    const verifier = form.get('code_verifier') ?? ''
    if (!verifier || (await sha256b64url(verifier)) !== code.challenge) {
      return oauthError('invalid_grant', 'code_verifier was incorrect')
    }
    code.used = true
    return json(issueTokens(user))
  }
  if (grant === 'refresh_token') {
    const old = refreshTokens.get(form.get('refresh_token') ?? '')
    if (!old || old.used) return oauthError('invalid_grant', 'Refresh token revoked')
    const user = users.get(old.user)!
    log(user, req, url, grant)
    const early = await scripted(user, '/api/token')
    if (early) return early
    if (user.rotate_refresh) old.used = true
    return json(issueTokens(user, user.rotate_refresh ? undefined : form.get('refresh_token')!))
  }
  return oauthError('unsupported_grant_type', `grant_type ${grant} is not supported`)
}

// RFC 7009 token revocation (an OAuth provider's /revoke; Spotify has none, so production
// leaves MUSIC_REVOKE_URL unset): the token stops working; an unknown token is 200 too.
const revocations: { token: string; token_type_hint: string | null; known: boolean }[] = []

async function revoke(req: Request, url: URL): Promise<Response> {
  const form = new URLSearchParams(await req.text())
  const basic = req.headers.get('authorization')?.match(/^Basic (.+)$/)
  const clientId = basic ? atob(basic[1]).split(':')[0] : form.get('client_id')
  if (clientId !== FAKE_MUSIC_CLIENT_ID) return oauthError('invalid_client', 'Invalid client', 401)
  const token = form.get('token') ?? ''
  if (!token) return oauthError('invalid_request', 'token is required')
  const refresh = refreshTokens.get(token)
  const access = accessTokens.get(token)
  const owner = refresh?.user ?? access?.user
  if (refresh) refresh.used = true
  if (access) access.expires = 0
  if (owner) log(users.get(owner)!, req, url, form.get('token_type_hint') ?? undefined)
  revocations.push({ token, token_type_hint: form.get('token_type_hint'), known: Boolean(owner) })
  return new Response(null, { status: 200 })
}

function authorize(url: URL): Response {
  const q = url.searchParams
  if (q.get('client_id') !== FAKE_MUSIC_CLIENT_ID) {
    return new Response('INVALID_CLIENT: Invalid client', { status: 400 })
  }
  if (
    q.get('response_type') !== 'code' || q.get('code_challenge_method') !== 'S256' || !q.get('code_challenge')
  ) {
    return new Response('response_type=code with an S256 code_challenge is required', { status: 400 })
  }
  const user = users.get(q.get('login') ?? '')
  if (!user) return new Response('unknown login', { status: 400 })
  const code = `fake-code-${random()}`
  codes.set(code, {
    user: user.id,
    challenge: q.get('code_challenge')!,
    redirect_uri: q.get('redirect_uri')!,
    used: false,
  })
  const target = new URL(q.get('redirect_uri')!)
  target.searchParams.set('code', code)
  target.searchParams.set('state', q.get('state') ?? '')
  return new Response(null, { status: 302, headers: { location: target.toString() } })
}

function recentlyPlayed(user: MusicUser, url: URL, base: string): Response {
  const asked = Number(url.searchParams.get('limit') ?? 20)
  if (!Number.isInteger(asked) || asked < 1 || asked > 50) return apiError(400, 'Invalid limit')
  const limit = Math.min(asked, user.page_size) // pages smaller than asked make the client follow `next`
  const after = url.searchParams.get('after')
  const before = url.searchParams.get('before')
  if (after && before) return apiError(400, 'Only one of after and before may be given')
  // The provider keeps only the newest 50 plays.
  const kept = [...user.plays].sort((a, b) => Date.parse(b.played_at) - Date.parse(a.played_at)).slice(0, 50)
  let page: Play[]
  let next: string | null = null
  if (after) {
    const newer = kept.filter((p) => Date.parse(p.played_at) > Number(after)).reverse() // oldest first
    page = newer.slice(0, limit).reverse()
    if (newer.length > limit) {
      next = `${base}/v1/me/player/recently-played?limit=${limit}&after=${Date.parse(page[0].played_at)}`
    }
  } else {
    const older = before ? kept.filter((p) => Date.parse(p.played_at) < Number(before)) : kept
    page = older.slice(0, limit)
    if (older.length > limit) {
      next = `${base}/v1/me/player/recently-played?limit=${limit}&before=${
        Date.parse(page[page.length - 1].played_at)
      }`
    }
  }
  const item = (p: Play) => ({
    track: user.simplified.has(p.track_id)
      ? { id: p.track_id, type: 'track', uri: `spotify:track:${p.track_id}` }
      : trackObject(p.track_id),
    played_at: p.played_at,
    context: null,
  })
  return json({
    items: page.map(item),
    next,
    cursors: page.length
      ? {
        after: String(Date.parse(page[0].played_at)),
        before: String(Date.parse(page[page.length - 1].played_at)),
      }
      : null,
    limit,
    href: url.toString(),
  })
}

async function api(req: Request, url: URL, base: string): Promise<Response> {
  const bearer = req.headers.get('authorization')?.match(/^Bearer (.+)$/)?.[1]
  const at = bearer ? accessTokens.get(bearer) : undefined
  if (!at) return apiError(401, 'Invalid access token')
  const user = users.get(at.user)!
  log(user, req, url)
  const early = await scripted(user, url.pathname)
  if (early) return early
  if (user.latency_ms) await new Promise((ok) => setTimeout(ok, user.latency_ms))
  if (at.expires <= Date.now()) return apiError(401, 'The access token expired')
  if (url.pathname === '/v1/me') {
    return json({ id: user.id, display_name: `Listener ${user.id}`, type: 'user' })
  }
  if (url.pathname === '/v1/me/player/recently-played') return recentlyPlayed(user, url, base)
  if (url.pathname === '/v1/tracks') {
    const ids = (url.searchParams.get('ids') ?? '').split(',').filter(Boolean)
    if (ids.length === 0 || ids.length > 50) return apiError(400, 'Invalid ids: 1 to 50 ids')
    return json({ tracks: ids.map(trackObject) })
  }
  return apiError(404, 'Service not found')
}

async function control(req: Request, url: URL): Promise<Response> {
  if (req.method === 'POST' && url.pathname === '/__control/user') {
    const b = await req.json()
    const existing = users.get(b.id)
    const user: MusicUser = existing ?? {
      id: b.id,
      plays: [],
      expires_in: 3600,
      rotate_refresh: true,
      simplified: new Set(),
      page_size: 50,
      latency_ms: 0,
      script: [],
      requests: [],
    }
    if (b.plays) user.plays = b.plays
    if (b.expires_in !== undefined) user.expires_in = b.expires_in
    if (b.rotate_refresh !== undefined) user.rotate_refresh = b.rotate_refresh
    if (b.simplified) user.simplified = new Set(b.simplified)
    if (b.page_size !== undefined) user.page_size = b.page_size
    if (b.latency_ms !== undefined) user.latency_ms = b.latency_ms
    users.set(user.id, user)
    return json({ ok: true })
  }
  if (req.method === 'POST' && url.pathname === '/__control/script') {
    const b = await req.json()
    const user = users.get(b.user)
    if (!user) return json({ error: 'unknown user' }, 404)
    user.script.push(...b.replies)
    return json({ ok: true })
  }
  if (req.method === 'POST' && url.pathname === '/__control/grant') {
    // Tokens for an existing user without the login dance (benchmarks link many users at once).
    const b = await req.json()
    const user = users.get(b.user)
    if (!user) return json({ error: 'unknown user' }, 404)
    return json(issueTokens(user))
  }
  if (req.method === 'POST' && url.pathname === '/__control/expire') {
    const b = await req.json()
    for (const t of accessTokens.values()) if (t.user === b.user) t.expires = 0
    return json({ ok: true })
  }
  if (req.method === 'GET' && url.pathname === '/__control/revocations') {
    const token = url.searchParams.get('token')
    return json({ revocations: revocations.filter((r) => !token || r.token === token) })
  }
  if (req.method === 'GET' && url.pathname === '/__control/requests') {
    return json({ requests: users.get(url.searchParams.get('user') ?? '')?.requests ?? [] })
  }
  return json({ error: 'unknown control' }, 404)
}

/** The fake as a fetch handler (the bench serves it too). */
export function handler(base: () => string) {
  return async (req: Request): Promise<Response> => {
    const url = new URL(req.url)
    if (url.pathname.startsWith('/__control/')) return await control(req, url)
    if (req.method === 'GET' && url.pathname === '/authorize') return authorize(url)
    if (req.method === 'POST' && url.pathname === '/api/token') return await token(req, url)
    if (req.method === 'POST' && url.pathname === '/api/revoke') return await revoke(req, url)
    if (req.method === 'GET' && url.pathname.startsWith('/v1/')) return await api(req, url, base())
    return apiError(404, 'Not found')
  }
}

export function start() {
  let base = ''
  const server = Deno.serve({ hostname: '127.0.0.1', port: 0, onListen: () => {} }, handler(() => base))
  base = `http://127.0.0.1:${server.addr.port}`
  return {
    env: {
      MUSIC_CLIENT_ID: FAKE_MUSIC_CLIENT_ID,
      MUSIC_AUTH_URL: base,
      MUSIC_API_URL: `${base}/v1`,
      MUSIC_REVOKE_URL: `${base}/api/revoke`,
      MUSIC_REDIRECT_URI: 'http://127.0.0.1/music/callback',
      MUSIC_FAKE_CONTROL_URL: `${base}/__control`,
      // Short waits so tests of slow answers and Retry-After stay quick.
      MUSIC_HTTP_TIMEOUT_MS: '2000',
      MUSIC_MAX_RETRY_AFTER_SECONDS: '3',
      MUSIC_RETRY_BASE_MS: '50',
      MUSIC_SYNC_COOLDOWN_SECONDS: '60',
    },
    async stop() {
      await server.shutdown()
    },
  }
}

if (import.meta.main) {
  const { env } = start()
  console.log(JSON.stringify(env))
}
