// The music provider (a Spotify-shaped accounts service and Web API): PKCE login, token
// refresh, recently played, track lookup, and the sync of one link or a chunk of links.
// A small fetch client on purpose: the official SDK hard-codes its URLs and ignores
// Retry-After. Tokens are decrypted only by the service-role RPCs this module calls.
import { createHash } from 'node:crypto'
import type { Db } from './db.ts'
import { optionalEnv } from './env.ts'
import { unwrap } from './errors.ts'

export const MUSIC_SCOPES = 'user-read-recently-played'

export interface MusicConfig {
  clientId: string
  clientSecret?: string
  redirectUri: string
  successUrl?: string
  authUrl: string
  apiUrl: string
  /** RFC 7009 revocation endpoint, where the provider has one (Spotify has none). */
  revokeUrl?: string
  timeoutMs: number
  maxRetryAfterSeconds: number
  retryBaseMs: number
  cooldownSeconds: number
  chunk: number
  concurrency: number
  budgetMs: number
  minIntervalSeconds: number
}

const num = (name: string, fallback: number) => {
  const v = Number(optionalEnv(name))
  return Number.isFinite(v) && v >= 0 && optionalEnv(name) !== undefined ? v : fallback
}
const trimSlash = (s: string) => s.replace(/\/+$/, '')

/** The configuration, or null when MUSIC_CLIENT_ID (or the redirect URI) is not set. */
export function musicConfig(): MusicConfig | null {
  const clientId = optionalEnv('MUSIC_CLIENT_ID')
  const redirectUri = optionalEnv('MUSIC_REDIRECT_URI')
  if (!clientId || !redirectUri) return null
  return {
    clientId,
    clientSecret: optionalEnv('MUSIC_CLIENT_SECRET'),
    redirectUri,
    successUrl: optionalEnv('MUSIC_SUCCESS_URL'),
    authUrl: trimSlash(optionalEnv('MUSIC_AUTH_URL') ?? 'https://accounts.spotify.com'),
    apiUrl: trimSlash(optionalEnv('MUSIC_API_URL') ?? 'https://api.spotify.com/v1'),
    revokeUrl: optionalEnv('MUSIC_REVOKE_URL'),
    timeoutMs: num('MUSIC_HTTP_TIMEOUT_MS', 10_000),
    maxRetryAfterSeconds: num('MUSIC_MAX_RETRY_AFTER_SECONDS', 30),
    retryBaseMs: num('MUSIC_RETRY_BASE_MS', 500),
    cooldownSeconds: num('MUSIC_SYNC_COOLDOWN_SECONDS', 60),
    chunk: Math.min(Math.max(Math.floor(num('MUSIC_SYNC_CHUNK', 500)), 1), 1000),
    concurrency: Math.min(Math.max(Math.floor(num('MUSIC_SYNC_CONCURRENCY', 8)), 1), 50),
    budgetMs: num('MUSIC_SYNC_BUDGET_MS', 120_000),
    minIntervalSeconds: num('MUSIC_SYNC_MIN_INTERVAL_SECONDS', 600),
  }
}

// ---- PKCE

const b64url = (bytes: Uint8Array) =>
  btoa(String.fromCharCode(...bytes)).replaceAll('+', '-').replaceAll('/', '_').replace(/=+$/, '')

/** A fresh code_verifier: 64 characters from 48 random bytes (RFC 7636 allows 43 to 128). */
export const newCodeVerifier = () => b64url(crypto.getRandomValues(new Uint8Array(48)))
export const newState = () => b64url(crypto.getRandomValues(new Uint8Array(32)))
export const codeChallenge = (verifier: string) =>
  b64url(new Uint8Array(createHash('sha256').update(verifier).digest()))
/** The state is stored hashed: a leaked table row cannot complete anyone's login. */
export const stateHash = (state: string) => createHash('sha256').update(state).digest('hex')

export function authorizeUrl(cfg: MusicConfig, state: string, verifier: string): string {
  const u = new URL(`${cfg.authUrl}/authorize`)
  u.search = new URLSearchParams({
    client_id: cfg.clientId,
    response_type: 'code',
    redirect_uri: cfg.redirectUri,
    code_challenge_method: 'S256',
    code_challenge: codeChallenge(verifier),
    state,
    scope: MUSIC_SCOPES,
  }).toString()
  return u.toString()
}

// ---- HTTP

export class MusicError extends Error {
  constructor(
    readonly kind: 'invalid_grant' | 'unauthorized' | 'rate_limited' | 'timeout' | 'provider',
    readonly status: number,
    message: string,
  ) {
    super(message)
  }
}

const sleep = (ms: number) => new Promise((ok) => setTimeout(ok, ms))

async function errorText(res: Response): Promise<string> {
  const text = await res.text().catch(() => '')
  try {
    const body = JSON.parse(text)
    if (typeof body.error === 'string') {
      return body.error_description ? `${body.error}: ${body.error_description}` : body.error
    }
    if (body.error?.message) return body.error.message
  } catch { /* not JSON */ }
  return text.slice(0, 200) || res.statusText
}

/**
 * One provider call: a timeout per attempt; 429 waits Retry-After (when it fits the cap) and
 * tries again; 5xx, timeouts and network failures retry with backoff, 3 attempts in all.
 */
async function call(cfg: MusicConfig, url: string, init: RequestInit): Promise<Response> {
  const attempts = 3
  let rateWaits = 0
  for (let attempt = 1;; attempt++) {
    let res: Response
    try {
      res = await fetch(url, { ...init, signal: AbortSignal.timeout(cfg.timeoutMs) })
    } catch (e) {
      const timedOut = e instanceof DOMException && (e.name === 'TimeoutError' || e.name === 'AbortError')
      if (attempt < attempts) {
        await sleep(cfg.retryBaseMs * 2 ** (attempt - 1))
        continue
      }
      throw new MusicError(
        timedOut ? 'timeout' : 'provider',
        504,
        timedOut
          ? 'the music provider did not answer in time'
          : `the music provider is unreachable: ${(e as Error).message}`,
      )
    }
    if (res.status === 429) {
      const wait = Number(res.headers.get('retry-after') ?? '1')
      await res.body?.cancel()
      const seconds = Number.isFinite(wait) && wait >= 0 ? wait : 1
      if (seconds > cfg.maxRetryAfterSeconds || rateWaits >= 3) {
        throw new MusicError(
          'rate_limited',
          429,
          `the music provider is rate limiting (retry after ${seconds} s)`,
        )
      }
      rateWaits++
      attempt-- // waiting out a 429 is not a failed attempt
      await sleep(seconds * 1000)
      continue
    }
    if (res.status >= 500 && attempt < attempts) {
      await res.body?.cancel()
      await sleep(cfg.retryBaseMs * 2 ** (attempt - 1))
      continue
    }
    return res
  }
}

export interface TokenSet {
  access_token: string
  refresh_token?: string
  expires_in: number
  scope?: string
}

async function tokenRequest(cfg: MusicConfig, form: Record<string, string>): Promise<TokenSet> {
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' }
  const body = new URLSearchParams(form)
  if (cfg.clientSecret) headers.authorization = `Basic ${btoa(`${cfg.clientId}:${cfg.clientSecret}`)}`
  else body.set('client_id', cfg.clientId) // PKCE: a public client names itself in the body
  const res = await call(cfg, `${cfg.authUrl}/api/token`, { method: 'POST', headers, body: body.toString() })
  if (!res.ok) {
    const message = await errorText(res)
    if (res.status === 400 && /invalid_grant/.test(message)) {
      throw new MusicError('invalid_grant', 400, message)
    }
    throw new MusicError('provider', res.status, `token endpoint answered ${res.status}: ${message}`)
  }
  const t = await res.json()
  if (typeof t.access_token !== 'string' || typeof t.expires_in !== 'number') {
    throw new MusicError('provider', 502, 'token endpoint answered without access_token/expires_in')
  }
  return t
}

/**
 * Revokes a token at the provider (RFC 7009), where it has an endpoint: 'revoked', or
 * 'unsupported' without one (Spotify: the user removes the app at spotify.com/account/apps).
 * Throws MusicError on a refusal or outage, so the caller retries later.
 */
export async function revokeToken(
  cfg: MusicConfig,
  token: string,
  hint: 'access_token' | 'refresh_token',
): Promise<'revoked' | 'unsupported'> {
  if (!cfg.revokeUrl) return 'unsupported'
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' }
  const body = new URLSearchParams({ token, token_type_hint: hint })
  if (cfg.clientSecret) headers.authorization = `Basic ${btoa(`${cfg.clientId}:${cfg.clientSecret}`)}`
  else body.set('client_id', cfg.clientId)
  const res = await call(cfg, cfg.revokeUrl, { method: 'POST', headers, body: body.toString() })
  if (!res.ok) {
    throw new MusicError(
      'provider',
      res.status,
      `revocation endpoint answered ${res.status}: ${await errorText(res)}`,
    )
  }
  await res.body?.cancel()
  return 'revoked'
}

export const exchangeCode = (cfg: MusicConfig, code: string, verifier: string) =>
  tokenRequest(cfg, {
    grant_type: 'authorization_code',
    code,
    redirect_uri: cfg.redirectUri,
    code_verifier: verifier,
  })

export const refreshTokens = (cfg: MusicConfig, refreshToken: string) =>
  tokenRequest(cfg, { grant_type: 'refresh_token', refresh_token: refreshToken })

async function getJson(cfg: MusicConfig, url: string, access: string): Promise<any> {
  const res = await call(cfg, url, { headers: { authorization: `Bearer ${access}` } })
  if (res.status === 401) throw new MusicError('unauthorized', 401, await errorText(res))
  if (!res.ok) {
    throw new MusicError(
      'provider',
      res.status,
      `${new URL(url).pathname} answered ${res.status}: ${await errorText(res)}`,
    )
  }
  return await res.json()
}

export async function musicUserId(cfg: MusicConfig, access: string): Promise<string> {
  const me = await getJson(cfg, `${cfg.apiUrl}/me`, access)
  if (typeof me?.id !== 'string' || !me.id) {
    throw new MusicError('provider', 502, '/me answered without an id')
  }
  return me.id
}

export interface PlayedItem {
  track: { id: string; name?: string; [k: string]: unknown }
  played_at: string
}

/** Recently played after `afterMs` (or the newest), following the cursors (at most 20 pages). */
export async function recentlyPlayed(
  cfg: MusicConfig,
  access: string,
  afterMs: number | null,
): Promise<PlayedItem[]> {
  const first = new URL(`${cfg.apiUrl}/me/player/recently-played`)
  first.searchParams.set('limit', '50')
  if (afterMs !== null) first.searchParams.set('after', String(afterMs))
  const items: PlayedItem[] = []
  let next: string | null = first.toString()
  for (let page = 0; next && page < 20; page++) {
    const body: { items?: PlayedItem[]; next?: string | null } = await getJson(cfg, next, access)
    for (const it of body.items ?? []) if (it?.track?.id && it.played_at) items.push(it)
    next = body.next ?? null
    // The bearer token goes only to the API's own origin, whatever `next` says.
    if (next && new URL(next).origin !== first.origin) {
      throw new MusicError('provider', 502, `next points off the API: ${next}`)
    }
  }
  return items
}

/** Full track objects for ids, 50 per request (the API's limit). */
export async function lookupTracks(
  cfg: MusicConfig,
  access: string,
  ids: string[],
): Promise<Record<string, unknown>[]> {
  const out: Record<string, unknown>[] = []
  for (let i = 0; i < ids.length; i += 50) {
    const batch = ids.slice(i, i + 50)
    const body = await getJson(
      cfg,
      `${cfg.apiUrl}/tracks?ids=${batch.map(encodeURIComponent).join(',')}`,
      access,
    )
    for (const t of body.tracks ?? []) if (t?.id) out.push(t)
  }
  return out
}

// deno-lint-ignore no-explicit-any
export function trackRow(t: any) {
  const images: { url: string; width?: number }[] = t.album?.images ?? []
  return {
    id: String(t.id),
    name: String(t.name ?? ''),
    artists: (t.artists ?? []).map((a: { name?: string }) => a?.name).filter(Boolean),
    album: t.album?.name ?? null,
    album_image_url: images[0]?.url ?? null, // the provider lists the largest first
    external_url: t.external_urls?.spotify ?? t.external_urls?.[Object.keys(t.external_urls ?? {})[0]] ??
      null,
    duration_ms: Number.isInteger(t.duration_ms) ? t.duration_ms : null,
    explicit: t.explicit === true,
    raw: t,
  }
}

// ---- Sync

/** A claimed link as the claim RPCs return it (tokens decrypted). */
export interface SyncWork {
  user_id: string
  access_token: string
  refresh_token: string
  token_expires_at: string
  after_ms: number | null
}

export interface SyncResult {
  plays_added: number
  plays_skipped: number
  entries_linked: number
}

/** Plays already stored are fetched again from this far back, in case one arrived late. */
const OVERLAP_MS = 60_000

async function refreshAndStore(cfg: MusicConfig, db: Db, work: SyncWork): Promise<string> {
  const t = await refreshTokens(cfg, work.refresh_token)
  // PKCE refresh tokens are single use: store the rotated one before anything else can fail.
  unwrap(
    await db.rpc('music_save_tokens', {
      user_id: work.user_id,
      access_token: t.access_token,
      refresh_token: t.refresh_token ?? null,
      expires_at: new Date(Date.now() + t.expires_in * 1000).toISOString(),
    }),
  )
  if (t.refresh_token) work.refresh_token = t.refresh_token
  return t.access_token
}

/** One claimed link synced; throws MusicError (or HttpError) on failure, leaving the claim to the caller. */
export async function syncLink(cfg: MusicConfig, db: Db, work: SyncWork): Promise<SyncResult> {
  let access = work.access_token
  let refreshed = false
  if (Date.parse(work.token_expires_at) - Date.now() < 60_000) {
    access = await refreshAndStore(cfg, db, work)
    refreshed = true
  }
  const after = work.after_ms === null ? null : Math.max(Number(work.after_ms) - OVERLAP_MS, 0)
  let items: PlayedItem[]
  try {
    items = await recentlyPlayed(cfg, access, after)
  } catch (e) {
    if (!(e instanceof MusicError && e.kind === 'unauthorized') || refreshed) throw e
    access = await refreshAndStore(cfg, db, work) // revoked early: one refresh, one retry
    items = await recentlyPlayed(cfg, access, after)
  }
  const full = new Map<string, unknown>()
  for (const it of items) if (typeof it.track.name === 'string') full.set(it.track.id, it.track)
  const missing = [...new Set(items.map((it) => it.track.id).filter((id) => !full.has(id)))]
  if (missing.length) { for (const t of await lookupTracks(cfg, access, missing)) full.set(String(t.id), t) }
  const reply = unwrap(
    await db.rpc('music_store_sync', {
      user_id: work.user_id,
      plays: items.map((it) => ({ track_id: it.track.id, played_at: it.played_at })),
      tracks: [...full.values()].map(trackRow),
    }).single(),
  )
  return reply
}

/** Records a failed sync (and an invalid_grant as needing reconnection); never throws. */
export async function recordFailure(db: Db, userId: string, e: unknown): Promise<string> {
  const message = e instanceof Error ? e.message : String(e)
  const reconnect = e instanceof MusicError && e.kind === 'invalid_grant'
  const { error } = await db.rpc('music_sync_failed', {
    user_id: userId,
    error: reconnect ? `reconnect needed: ${message}` : message,
    needs_reconnect: reconnect,
  })
  if (error) console.error('music: recording a failed sync failed', error)
  return reconnect ? `reconnect needed: ${message}` : message
}

export interface SyncAllResults {
  total: number
  synced: number
  plays_added: number
  failed: number
  errors: string[]
  remaining: number
}

/**
 * One sync-all run: claims a chunk of due links (skip locked, so runs side by side share the
 * work), syncs them a few at a time, and hands back the links it had no time for.
 */
export async function syncAll(cfg: MusicConfig, db: Db, limit = cfg.chunk): Promise<SyncAllResults> {
  const started = Date.now()
  const claimed = unwrap(
    await db.rpc('music_claim_links', {
      max_links: limit,
      lease_seconds: Math.ceil(cfg.budgetMs / 1000) + 60,
      min_interval_seconds: cfg.minIntervalSeconds,
    }),
  )
  const results: SyncAllResults = {
    total: claimed.length,
    synced: 0,
    plays_added: 0,
    failed: 0,
    errors: [],
    remaining: claimed[0] ? Number(claimed[0].remaining) : 0,
  }
  console.log(
    JSON.stringify({
      job: 'music-sync-all',
      event: 'start',
      claimed: claimed.length,
      remaining: results.remaining,
    }),
  )
  const queue = [...claimed]
  const worker = async () => {
    for (let work = queue.shift(); work; work = queue.shift()) {
      if (Date.now() - started > cfg.budgetMs) {
        // Out of time: release it for the next run.
        await db.rpc('music_sync_failed', { user_id: work.user_id, error: null, needs_reconnect: false })
        results.remaining++
        results.total--
        continue
      }
      try {
        const r = await syncLink(cfg, db, work)
        results.synced++
        results.plays_added += r.plays_added
      } catch (e) {
        results.failed++
        results.errors.push(`${work.user_id}: ${await recordFailure(db, work.user_id, e)}`)
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(cfg.concurrency, claimed.length) }, worker))
  console.log(JSON.stringify({
    job: 'music-sync-all',
    event: 'done',
    synced: results.synced,
    failed: results.failed,
    plays_added: results.plays_added,
    remaining: results.remaining,
    ms: Date.now() - started,
  }))
  return results
}
