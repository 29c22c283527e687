// Steering the fake music provider (tests/fakes/music.ts) from a test. Each test makes its own
// music user (a fresh id), so test files running side by side never see each other's state.
//   const listener = await musicUser({ plays: [play('t1', minutesAgo(10))] })
//   await scriptMusic(listener, [{ path: '/v1/me/player', status: 429, headers: { 'retry-after': '1' } }])
//   (await musicRequests(listener)).filter((r) => r.path.endsWith('recently-played'))
function controlUrl() {
  const url = Deno.env.get('MUSIC_FAKE_CONTROL_URL')
  if (!url) throw new Error('MUSIC_FAKE_CONTROL_URL is not set: run the tests with `npm test`')
  return url
}

async function post(path: string, body: unknown) {
  const res = await fetch(`${controlUrl()}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
  if (!res.ok) throw new Error(`steering the fake music provider failed: ${res.status} ${await res.text()}`)
  await res.body?.cancel()
}

export interface FakePlay {
  track_id: string
  played_at: string
}
export interface MusicUserOptions {
  plays?: FakePlay[]
  expires_in?: number
  rotate_refresh?: boolean
  simplified?: string[]
  page_size?: number
}

export const play = (track_id: string, at: Date): FakePlay => ({ track_id, played_at: at.toISOString() })
export const minutesAgo = (m: number) => new Date(Date.now() - m * 60_000)

/** Creates a music user at the fake (a fresh id unless given) and returns its id. */
export async function musicUser(o: MusicUserOptions = {}, id = `listener${crypto.randomUUID().slice(0, 8)}`) {
  await post('/user', { id, ...o })
  return id
}
export const updateMusicUser = (id: string, o: MusicUserOptions) => post('/user', { id, ...o })

export interface ScriptedReply {
  path?: string
  status: number
  headers?: Record<string, string>
  body?: unknown
  delay_ms?: number
}
export const scriptMusic = (user: string, replies: ScriptedReply[]) => post('/script', { user, replies })
export const expireMusicTokens = (user: string) => post('/expire', { user })

export async function musicRequests(user: string): Promise<
  { method: string; path: string; query: Record<string, string>; at: string; grant_type?: string }[]
> {
  const res = await fetch(`${controlUrl()}/requests?user=${encodeURIComponent(user)}`)
  return (await res.json()).requests
}
