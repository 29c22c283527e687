// Listening history (SPEC "Listening history"): connect a music account with PKCE,
// sync its recently played tracks (on demand and on a schedule), disconnect. Entries are
// linked to tracks in SQL (supabase/schemas/music.sql), not here.
//
// The token-handling calls use the service role on purpose: tokens are readable by no client
// role, not even their owner, so only the job's RPCs decrypt them.
import { z } from '@hono/zod-openapi'
import { serviceDb } from '../../_shared/db.ts'
import { badRequest, conflict, HttpError, notFound, unavailable, unwrap } from '../../_shared/errors.ts'
import {
  authorizeUrl,
  exchangeCode,
  type MusicConfig,
  musicConfig,
  MusicError,
  musicUserId,
  newCodeVerifier,
  newState,
  recordFailure,
  stateHash,
  syncAll,
  syncLink,
} from '../../_shared/music.ts'
import { endpoint, routeModule } from '../openapi.ts'

const tag = 'Listening history'

function configured(): MusicConfig {
  const cfg = musicConfig()
  if (!cfg) throw unavailable('The music integration is not configured (MUSIC_CLIENT_ID, MUSIC_REDIRECT_URI)')
  return cfg
}

/** A provider failure as the caller should see it. */
function providerError(e: unknown): never {
  if (e instanceof MusicError) {
    if (e.kind === 'timeout') throw new HttpError(504, e.message)
    if (e.kind === 'rate_limited') throw new HttpError(429, e.message)
    throw new HttpError(502, `music provider: ${e.message}`)
  }
  throw e
}

const Status = z.object({
  connected: z.boolean(),
  music_user_id: z.string().nullable(),
  scope: z.string().nullable(),
  connected_at: z.string().nullable(),
  last_synced_at: z.string().nullable(),
  needs_reconnect: z.boolean().describe('The provider refused the stored refresh token: connect again'),
  last_error: z.string().nullable(),
}).openapi('MusicStatus')

const SyncAllResults = z.object({
  success: z.boolean(),
  message: z.string(),
  results: z.object({
    total: z.number().int(),
    synced: z.number().int(),
    plays_added: z.number().int(),
    failed: z.number().int(),
    errors: z.array(z.string()),
    remaining: z.number().int().describe('Due links this run did not claim or had no time for'),
  }),
}).openapi('MusicSyncAll')

export const musicRoutes = routeModule()
  .openapi(
    endpoint({
      method: 'post',
      path: '/music/connect',
      tag,
      auth: 'bearer',
      errors: [403, 503],
      summary: 'Start connecting a music account (OAuth authorization code with PKCE)',
      description:
        'Open `authorizeUrl` in the browser; the provider returns to MUSIC_REDIRECT_URI with `code` and ' +
        '`state`, which go to GET /api/music/callback. The state is single use and expires in 10 minutes. ' +
        '403 inside an impersonation session: linking an outside account is for the user themselves.',
      response: z.object({ authorizeUrl: z.string(), state: z.string(), expires_at: z.string() }),
    }),
    async (c) => {
      const cfg = configured()
      const state = newState()
      const verifier = newCodeVerifier()
      const expires = unwrap(
        await c.var.db.rpc('music_begin_connect', { state_hash: stateHash(state), code_verifier: verifier }),
      )
      return c.json({ authorizeUrl: authorizeUrl(cfg, state, verifier), state, expires_at: expires })
    },
  )
  .openapi(
    endpoint({
      method: 'get',
      path: '/music/callback',
      tag,
      auth: 'none',
      errors: [502, 504],
      summary: "The provider's redirect: exchanges the code and stores the link",
      description: 'No bearer: the state is the credential. Unknown, used or expired state: 400. ' +
        'Redirects (302) to MUSIC_SUCCESS_URL when configured, else answers JSON.',
      query: z.object({
        state: z.string().min(1).max(200),
        code: z.string().min(1).max(2048).optional(),
        error: z.string().max(200).optional().openapi({
          description: 'Set by the provider when the user declined',
        }),
      }),
      response: Status,
    }),
    async (c) => {
      const q = c.req.valid('query')
      if (!q.code && !q.error) throw badRequest('code: is required')
      const cfg = configured()
      const db = serviceDb()
      const [taken] = unwrap(await db.rpc('music_take_state', { state_hash: stateHash(q.state) }))
      if (taken.outcome !== 'ok') {
        throw badRequest(
          `state: ${
            taken.outcome === 'used' ? 'already used' : taken.outcome === 'expired' ? 'expired' : 'unknown'
          }; connect again`,
        )
      }
      if (q.error) throw badRequest(`the music provider did not authorize the connection: ${q.error}`)
      let link
      try {
        const tokens = await exchangeCode(cfg, q.code!, taken.code_verifier!)
        if (!tokens.refresh_token) {
          throw new MusicError('provider', 502, 'token endpoint answered without a refresh_token')
        }
        const id = await musicUserId(cfg, tokens.access_token)
        link = unwrap(
          await db.rpc('music_save_link', {
            user_id: taken.user_id,
            music_user_id: id,
            scope: tokens.scope ?? '',
            access_token: tokens.access_token,
            refresh_token: tokens.refresh_token,
            expires_at: new Date(Date.now() + tokens.expires_in * 1000).toISOString(),
          }),
        )
      } catch (e) {
        if (e instanceof MusicError && e.kind === 'invalid_grant') {
          throw badRequest(`code: the music provider refused it (${e.message})`)
        }
        providerError(e)
      }
      if (cfg.successUrl) return c.redirect(cfg.successUrl, 302)
      return c.json({
        connected: true,
        music_user_id: link!.music_user_id,
        scope: link!.scope,
        connected_at: link!.connected_at,
        last_synced_at: link!.last_synced_at,
        needs_reconnect: false,
        last_error: null,
      })
    },
  )
  .openapi(
    endpoint({
      method: 'get',
      path: '/music/status',
      tag,
      auth: 'bearer',
      errors: [503],
      summary: "The caller's music link",
      response: Status,
    }),
    async (c) => {
      configured()
      const row = unwrap(
        await c.var.db.from('music_connections')
          .select('music_user_id, scope, connected_at, last_synced_at, needs_reconnect, last_error')
          .eq('user_id', c.var.caller.id).maybeSingle(),
      )
      if (!row) {
        return c.json({
          connected: false,
          music_user_id: null,
          scope: null,
          connected_at: null,
          last_synced_at: null,
          needs_reconnect: false,
          last_error: null,
        })
      }
      return c.json({ connected: true, ...row } as z.infer<typeof Status>)
    },
  )
  .openapi(
    endpoint({
      method: 'delete',
      path: '/music/connection',
      tag,
      auth: 'bearer',
      errors: [503],
      summary: 'Disconnect: removes tokens and link (plays stay unless purge=true)',
      query: z.object({ purge: z.enum(['true', 'false']).optional() }).strict(),
      response: z.object({ disconnected: z.boolean(), plays_removed: z.number().int() }),
    }),
    async (c) => {
      configured()
      const purge = c.req.valid('query').purge === 'true'
      return c.json(unwrap(await c.var.db.rpc('music_disconnect', { purge })))
    },
  )
  .openapi(
    endpoint({
      method: 'post',
      path: '/music/sync',
      tag,
      auth: 'bearer',
      errors: [404, 409, 429, 502, 504],
      summary: "Sync the caller's listening history now (per-user cooldown)",
      description:
        '429 with Retry-After within MUSIC_SYNC_COOLDOWN_SECONDS of the previous call; 409 while ' +
        'another sync holds the link or when the provider refused the stored token (connect again).',
      response: z.object({
        synced: z.boolean(),
        plays_added: z.number().int(),
        entries_linked: z.number().int().describe('Entries written before these plays arrived, now linked'),
      }),
    }),
    async (c) => {
      const cfg = configured()
      const db = serviceDb()
      const [claim] = unwrap(
        await db.rpc('music_claim_user', {
          user_id: c.var.caller.id,
          cooldown_seconds: cfg.cooldownSeconds,
          lease_seconds: 300,
        }),
      )
      if (claim.outcome === 'not_connected') throw notFound('No music account is connected')
      if (claim.outcome === 'needs_reconnect') throw conflict('The music account must be connected again')
      if (claim.outcome === 'busy') throw conflict('A sync of this account is already running')
      if (claim.outcome === 'cooldown') {
        c.header('Retry-After', String(claim.retry_after))
        throw new HttpError(429, `Synced recently; try again in ${claim.retry_after} s`)
      }
      try {
        const r = await syncLink(cfg, db, { ...claim, user_id: c.var.caller.id })
        return c.json({ synced: true, plays_added: r.plays_added, entries_linked: r.entries_linked })
      } catch (e) {
        const message = await recordFailure(db, c.var.caller.id, e)
        if (e instanceof MusicError && e.kind === 'invalid_grant') {
          throw conflict(`The music account must be connected again (${message})`)
        }
        providerError(e)
      }
    },
  )
  .openapi(
    endpoint({
      method: 'post',
      path: '/music/sync-all',
      tag,
      auth: { cron: 'music' },
      errors: [503],
      summary: 'Scheduled listening sync: one chunk of due links (pg_cron every 15 minutes)',
      description:
        'Claims up to `limit` (default MUSIC_SYNC_CHUNK) due links, oldest sync first, skipping links ' +
        'another run holds, so runs side by side share the work. Per-user failures are in `errors`.',
      body: z.object({
        limit: z.number().int().min(1).max(1000).optional(),
        scheduled_at: z.string().max(100).optional(),
      }),
      bodyRequired: false,
      response: SyncAllResults,
    }),
    async (c) => {
      const cfg = configured()
      const { limit } = c.req.valid('json') ?? {}
      const results = await syncAll(cfg, c.var.db, limit ?? cfg.chunk)
      return c.json({
        success: true,
        message:
          `Synced ${results.synced} of ${results.total} music links (${results.failed} failed, ${results.remaining} remaining)`,
        results,
      })
    },
  )
