// Listening history, part 1: connecting (PKCE, state rules, tokens nobody can read), the first
// sync, and entries linked to the track that was playing.
import { strict as assert } from 'node:assert'
import { api, assertError, clientAs, createUser, postEntry, sql, test } from './_helpers.ts'
import { authorize, callback, connected, pauseScheduledSync, syncNow } from './_music.ts'
import { minutesAgo, musicRequests, musicUser, play } from './fakes/music_control.ts'

await pauseScheduledSync()

test('connect: an authorize URL with an S256 challenge, the scope, the redirect URI and a fresh state', async () => {
  const user = await createUser()
  assertError(await api('/api/music/connect', { method: 'POST' }), 401)
  const a = await api('/api/music/connect', { token: user.token, method: 'POST' })
  const b = await api('/api/music/connect', { token: user.token, method: 'POST' })
  assert.deepEqual(a.status, 200)
  const url = new URL(a.body.authorizeUrl)
  assert.deepEqual(url.pathname, '/authorize')
  assert.deepEqual(url.searchParams.get('client_id'), 'fake-music-client')
  assert.deepEqual(url.searchParams.get('response_type'), 'code')
  assert.deepEqual(url.searchParams.get('code_challenge_method'), 'S256')
  assert.match(url.searchParams.get('code_challenge')!, /^[A-Za-z0-9_-]{43}$/)
  assert.deepEqual(url.searchParams.get('scope'), 'user-read-recently-played')
  assert.deepEqual(url.searchParams.get('redirect_uri'), Deno.env.get('MUSIC_REDIRECT_URI'))
  assert.deepEqual(url.searchParams.get('state'), a.body.state)
  assert(a.body.state !== b.body.state, 'each connect has its own state')
  assert(
    url.searchParams.get('code_challenge') !==
      new URL(b.body.authorizeUrl).searchParams.get('code_challenge'),
  )
  const expiresIn = Date.parse(a.body.expires_at) - Date.now()
  assert(expiresIn > 9 * 60_000 && expiresIn <= 10 * 60_000, `state lives 10 minutes, got ${expiresIn} ms`)
  // Stored hashed, with a verifier of a valid length, for this user.
  const rows =
    await sql`select state_hash, length(code_verifier) as n from private.music_oauth_states where user_id = ${user.id}`
  assert.deepEqual(rows.length, 2)
  assert(rows.every((r) => r.state_hash !== a.body.state && r.n >= 43 && r.n <= 128))
})

test('callback → sync → entry: the whole path links a new entry to the track playing when it was written', async () => {
  const user = await createUser()
  const listener = await musicUser({ plays: [play('trk1a', minutesAgo(30)), play('trk1b', minutesAgo(10))] })
  const { code, state } = await authorize(user, listener)
  const cb = await callback({ code, state })
  assert.deepEqual(cb.status, 200, JSON.stringify(cb.body))
  assert.deepEqual(cb.body.connected, true)
  assert.deepEqual(cb.body.music_user_id, listener)
  assert.deepEqual(cb.body.scope, 'user-read-recently-played')

  const status = await api('/api/music/status', { token: user.token })
  assert.deepEqual(status.status, 200)
  assert.deepEqual(status.body.connected, true)
  assert.deepEqual(status.body.music_user_id, listener)
  assert.deepEqual(status.body.last_synced_at, null)

  const sync = await api('/api/music/sync', { token: user.token, method: 'POST' })
  assert.deepEqual(sync.status, 200, JSON.stringify(sync.body))
  assert.deepEqual(sync.body.plays_added, 2)
  const reqs = await musicRequests(listener)
  const played = reqs.filter((r) => r.path === '/v1/me/player/recently-played')
  assert.deepEqual(played.length, 1)
  assert.deepEqual(played[0].query.after, undefined, 'a first sync has no stored play to resume after')

  const entry = await postEntry(user, { title: 'with music', content: 'x', mood: 'calm' })
  assert.deepEqual(entry.music_track_id, 'trk1b', 'the most recent play at or before created_at')
  const one = await api(`/api/journal/${entry.id}`, { token: user.token })
  assert.deepEqual(one.body.entry.track, {
    id: 'trk1b',
    name: 'Song trk1b',
    artists: ['Artist trk1b', 'Guest'],
    album: 'Album trk1b',
    album_image_url: 'https://i.scdn.example/trk1b/640.jpg',
    image_url: 'https://i.scdn.example/trk1b/640.jpg',
    external_url: 'https://open.spotify.example/track/trk1b',
  })
  const list = await api('/api/journal', { token: user.token })
  assert.deepEqual(list.body.entries.find((e: { id: string }) => e.id === entry.id).track.name, 'Song trk1b')
  const { data } = await clientAs(user.token).from('journal_entry_details').select('track').eq('id', entry.id)
    .single()
  assert.deepEqual(data!.track.external_url, 'https://open.spotify.example/track/trk1b')

  // A second sync resumes after the newest stored play (minus a small overlap), in milliseconds.
  const again = await syncNow(user)
  assert.deepEqual(again.body.plays_added, 0, 'idempotent: the same plays are not stored twice')
  const after = (await musicRequests(listener)).filter((r) => r.path === '/v1/me/player/recently-played').at(
    -1,
  )!
  const newest =
    (await sql`select (extract(epoch from max(played_at)) * 1000)::bigint as ms from public.music_plays where user_id = ${user.id}`)[
      0
    ].ms
  assert.deepEqual(Number(after.query.after), Number(newest) - 60_000)
  const [{ n }] = await sql`select count(*)::int as n from public.music_plays where user_id = ${user.id}`
  assert.deepEqual(n, 2)
  const status2 = await api('/api/music/status', { token: user.token })
  assert(status2.body.last_synced_at, 'last_synced_at is set by a sync')
})

test('an entry whose author has no play at or before its creation has no track; a track others see follows entry visibility', async () => {
  const owner = await createUser()
  const stranger = await createUser()
  await connected(owner, { plays: [play('trk2a', minutesAgo(5))] })
  const before = await postEntry(owner, { title: 'before sync', content: 'x', mood: 'calm' })
  assert.deepEqual(before.music_track_id, null, 'no plays stored yet')
  assert.deepEqual(before.track, null)
  // The sync brings the play in, and the entry written after it gets linked (late linking).
  const s = await api('/api/music/sync', { token: owner.token, method: 'POST' })
  assert.deepEqual(s.body.entries_linked, 1)
  const publicEntry = await postEntry(owner, {
    title: 'public',
    content: 'x',
    mood: 'calm',
    metadata_visibility: 'public',
  })
  const privateEntry = await postEntry(owner, { title: 'private', content: 'x', mood: 'calm' })
  const seen = await api(`/api/journal/${publicEntry.id}`, { token: stranger.token })
  assert.deepEqual(seen.body.entry.track.id, 'trk2a')
  assertError(await api(`/api/journal/${privateEntry.id}`, { token: stranger.token }), 404)
  const anon = await clientAs().from('journal_entry_details').select('id, track').in('id', [
    publicEntry.id,
    privateEntry.id,
  ])
  assert.deepEqual(anon.data!.map((r) => [r.id, r.track?.id]), [[publicEntry.id, 'trk2a']])
  // Plays themselves are the owner's only.
  assert.deepEqual(
    (await clientAs(stranger.token).from('music_plays').select('*').eq('user_id', owner.id)).data,
    [],
  )
  assert.deepEqual(
    (await clientAs(owner.token).from('music_plays').select('track_id').eq('user_id', owner.id)).data,
    [{ track_id: 'trk2a' }],
  )
})

test('state: unknown, reused and expired states are 400 and store nothing; a missing state names the field', async () => {
  const user = await createUser()
  const listener = await musicUser({ plays: [] })
  assertError(await callback({ code: 'x' }), 400, 'state')
  assertError(await callback({ state: 'x' }), 400, 'code')
  assertError(await callback({ code: 'x', state: 'never-issued' }), 400, 'state: unknown')

  const first = await authorize(user, listener)
  assert.deepEqual((await callback(first)).status, 200)
  assertError(await callback(first), 400, 'state: already used')

  const late = await authorize(user, listener)
  await sql`update private.music_oauth_states set expires_at = now() - interval '1 second', created_at = now() - interval '11 minutes'
             where user_id = ${user.id} and used_at is null`
  assertError(await callback(late), 400, 'state: expired')
  // The expired login's code was never exchanged.
  const exchanges = (await musicRequests(listener)).filter((r) => r.grant_type === 'authorization_code')
  assert.deepEqual(exchanges.length, 1)
})

test('PKCE: the provider refuses a wrong verifier; the callback answers 400 and nothing is stored', async () => {
  const user = await createUser()
  const listener = await musicUser({ plays: [] })
  const q = await authorize(user, listener)
  await sql`update private.music_oauth_states set code_verifier = ${
    'w'.repeat(64)
  } where user_id = ${user.id} and used_at is null`
  const res = await callback(q)
  assertError(res, 400, 'code_verifier was incorrect')
  assert.deepEqual((await sql`select 1 from public.music_connections where user_id = ${user.id}`).length, 0)
  assert.deepEqual((await api('/api/music/status', { token: user.token })).body.connected, false)
})

test('callback: the provider declining, or failing at /me, is a clear error and nothing half-stored', async () => {
  const user = await createUser()
  const listener = await musicUser({ plays: [] })
  const declined = await authorize(user, listener)
  assertError(await callback({ state: declined.state, error: 'access_denied' }), 400, 'access_denied')

  const q = await authorize(user, listener)
  const { scriptMusic } = await import('./fakes/music_control.ts')
  await scriptMusic(listener, [500, 500, 500].map((status) => ({ path: '/v1/me', status })))
  assertError(await callback(q), 502, 'music provider')
  assert.deepEqual((await sql`select 1 from public.music_connections where user_id = ${user.id}`).length, 0)
  assert.deepEqual((await sql`select 1 from private.music_tokens where user_id = ${user.id}`).length, 0)
})

test('tokens: encrypted at rest and unreadable through PostgREST by the owner, others, anon and RPCs', async () => {
  const user = await createUser()
  const other = await createUser()
  const listener = await connected(user, { plays: [] })
  const [raw] =
    await sql`select encode(access_token, 'escape') as a, encode(refresh_token, 'escape') as r from private.music_tokens where user_id = ${user.id}`
  assert(!raw.a.includes('fake-at-') && !raw.r.includes('fake-rt-'), 'stored ciphertext, not the token')
  const tokenExchange = (await musicRequests(listener)).find((r) => r.grant_type === 'authorization_code')
  assert(tokenExchange, 'the code was exchanged')

  for (const [who, token] of [['owner', user.token], ['other', other.token], ['anon', undefined]] as const) {
    const db = clientAs(token)
    const conn = await db.from('music_connections').select('*').eq('user_id', user.id)
    if (who === 'owner') {
      assert.deepEqual(conn.data!.length, 1)
      assert(
        !Object.keys(conn.data![0]).some((k) => /token$/.test(k) && k !== 'token_expires_at'),
        'no token column',
      )
    } else {
      assert.deepEqual(conn.data ?? [], [], `${who} does not see the link`)
    }
    const tokens = await db.schema('private' as 'public').from('music_tokens').select('*')
    assert(tokens.error, `${who}: the private schema is not exposed`)
    for (
      const [fn, args] of [
        ['music_claim_links', { max_links: 10 }],
        ['music_claim_user', { user_id: user.id }],
        ['music_take_state', { state_hash: 'x' }],
        ['music_save_link', {
          user_id: user.id,
          music_user_id: 'x',
          scope: '',
          access_token: 'a',
          refresh_token: 'r',
          expires_at: new Date().toISOString(),
        }],
      ] as const
    ) {
      const r = await db.rpc(fn, args)
      assert(r.error, `${who} may not call ${fn}`)
      assert.deepEqual(r.data, null)
    }
  }
})

test('disconnect removes link and tokens and keeps plays; purge=true removes the plays', async () => {
  const user = await createUser()
  await connected(user, { plays: [play('trk3a', minutesAgo(3))] })
  assert.deepEqual((await api('/api/music/sync', { token: user.token, method: 'POST' })).body.plays_added, 1)
  assertError(
    await api('/api/music/connection?purge=yes', { token: user.token, method: 'DELETE' }),
    400,
    'purge',
  )
  const off = await api('/api/music/connection', { token: user.token, method: 'DELETE' })
  assert.deepEqual(off.body, { disconnected: true, plays_removed: 0 })
  assert.deepEqual((await sql`select 1 from private.music_tokens where user_id = ${user.id}`).length, 0)
  assert.deepEqual((await api('/api/music/status', { token: user.token })).body.connected, false)
  assertError(await api('/api/music/sync', { token: user.token, method: 'POST' }), 404)
  assert.deepEqual((await sql`select 1 from public.music_plays where user_id = ${user.id}`).length, 1)
  const purge = await api('/api/music/connection?purge=true', { token: user.token, method: 'DELETE' })
  assert.deepEqual(purge.body, { disconnected: false, plays_removed: 1 })
})

test('without MUSIC_CLIENT_ID every music endpoint is 503 {error}, after input validation', async () => {
  const user = await createUser()
  const { withApi } = await import('./_api_process.ts')
  await withApi({ MUSIC_CLIENT_ID: '' }, async (base) => {
    const call = async (
      method: string,
      path: string,
      o: { token?: string; headers?: Record<string, string>; body?: unknown } = {},
    ) => {
      const res = await fetch(`${base}${path}`, {
        method,
        headers: {
          ...(o.token ? { authorization: `Bearer ${o.token}` } : {}),
          ...(o.body !== undefined ? { 'content-type': 'application/json' } : {}),
          ...o.headers,
        },
        body: o.body === undefined ? undefined : JSON.stringify(o.body),
      })
      return { status: res.status, body: await res.json(), headers: res.headers }
    }
    for (
      const [method, path, o] of [
        ['POST', '/api/music/connect', { token: user.token }],
        ['GET', '/api/music/callback?code=c&state=s', {}],
        ['GET', '/api/music/status', { token: user.token }],
        ['DELETE', '/api/music/connection', { token: user.token }],
        ['POST', '/api/music/sync', { token: user.token }],
        ['POST', '/api/music/sync-all', {
          headers: { 'x-cron-secret': 'local-music-sync-cron-secret' },
          body: {},
        }],
      ] as const
    ) {
      assertError(await call(method, path, o), 503, 'MUSIC_CLIENT_ID')
    }
    // Bad input is still 400 first; a missing credential still 401.
    assertError(await call('GET', '/api/music/callback?code=c'), 400, 'state')
    assertError(
      await call('DELETE', '/api/music/connection?purge=maybe', { token: user.token }),
      400,
      'purge',
    )
    assertError(
      await call('POST', '/api/music/sync-all', {
        headers: { 'x-cron-secret': 'local-music-sync-cron-secret' },
        body: { limit: 5000 },
      }),
      400,
      'limit',
    )
    assertError(await call('POST', '/api/music/connect'), 401)
  })
})

test('with MUSIC_SUCCESS_URL the callback redirects there once the link is stored', async () => {
  const user = await createUser()
  const listener = await musicUser({ plays: [] })
  const q = await authorize(user, listener)
  const { withApi } = await import('./_api_process.ts')
  await withApi({ MUSIC_SUCCESS_URL: 'https://app.example/settings/music' }, async (base) => {
    const res = await fetch(`${base}/api/music/callback?${new URLSearchParams(q)}`, { redirect: 'manual' })
    await res.body?.cancel()
    assert.equal(res.status, 302)
    assert.equal(res.headers.get('location'), 'https://app.example/settings/music')
  })
  assert.equal((await api('/api/music/status', { token: user.token })).body.music_user_id, listener)
})
