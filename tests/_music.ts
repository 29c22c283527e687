// Shared steps of the listening-history tests: connecting a user's music account through the
// gateway the way a browser would (connect → provider login → callback).
import { api, type ApiResponse, sql, type TestUser } from './_helpers.ts'
import { musicUser, type MusicUserOptions } from './fakes/music_control.ts'

export const CRON = { 'x-cron-secret': 'local-music-sync-cron-secret' }

/** POST /api/music/connect, then the provider's login as `listener`: the callback's query. */
export async function authorize(user: TestUser, listener: string): Promise<{ code: string; state: string }> {
  const started = await api('/api/music/connect', { token: user.token, method: 'POST' })
  if (started.status !== 200) throw new Error(`connect: ${started.status} ${JSON.stringify(started.body)}`)
  const authorizeUrl = new URL(started.body.authorizeUrl)
  authorizeUrl.searchParams.set('login', listener) // the fake's stand-in for the user signing in
  const res = await fetch(authorizeUrl, { redirect: 'manual' })
  await res.body?.cancel()
  if (res.status !== 302) throw new Error(`provider authorize: ${res.status}`)
  const back = new URL(res.headers.get('location')!)
  return { code: back.searchParams.get('code')!, state: back.searchParams.get('state')! }
}

export const callback = (q: Record<string, string>): Promise<ApiResponse> =>
  api(`/api/music/callback?${new URLSearchParams(q)}`)

/** A user with a connected music account at the fake; returns the listener id. */
export async function connected(user: TestUser, o: MusicUserOptions = {}): Promise<string> {
  const listener = await musicUser(o)
  const { code, state } = await authorize(user, listener)
  const res = await callback({ code, state })
  if (res.status !== 200) throw new Error(`callback: ${res.status} ${JSON.stringify(res.body)}`)
  return listener
}

/** POST /api/music/sync, with the cooldown of the previous call forgotten first. */
export async function syncNow(user: TestUser): Promise<ApiResponse> {
  await sql`update public.music_connections set manual_sync_at = null where user_id = ${user.id}`
  return await api('/api/music/sync', { token: user.token, method: 'POST' })
}

/**
 * The music-sync-all pg_cron job (every 15 minutes) would claim these tests' links whenever a
 * quarter hour passes mid-test; its schedule and its path through net are tested on their own
 * (music_sync_test.ts), then it is paused for the rest of the run.
 */
export async function pauseScheduledSync() {
  await sql`select cron.alter_job(jobid, active := false) from cron.job where jobname = 'music-sync-all' and active`
}
