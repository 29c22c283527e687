// Listening history, part 2: the sync against a provider that misbehaves (expired and rotated
// tokens, invalid_grant, 429 with Retry-After, 5xx, slow answers, paged cursors, tracks without
// full objects), late plays linking earlier entries, and the scheduled sync-all.
import { strict as assert } from 'node:assert'
import { api, assertError, createUser, postEntry, sql, test } from './_helpers.ts'
import { connected, CRON, pauseScheduledSync, syncNow } from './_music.ts'
import {
  expireMusicTokens,
  minutesAgo,
  musicRequests,
  play,
  scriptMusic,
  updateMusicUser,
} from './fakes/music_control.ts'

test('the music-sync-all job runs every 15 minutes through the edge function with the secret from Vault', async () => {
  const [job] = await sql`select schedule, command from cron.job where jobname = 'music-sync-all'`
  assert.equal(job.schedule, '*/15 * * * *')
  await pauseScheduledSync()
  const user = await createUser()
  await connected(user, { plays: [play('cron1', minutesAgo(5))] })
  await sql`update public.music_connections set last_synced_at = now() where user_id <> ${user.id}`
  // Run the job's command as pg_cron would, then wait for the gateway to send it.
  const [queued] = await sql.unsafe(job.command)
  const id = Number(Object.values(queued)[0])
  let response
  for (let i = 0; i < 100 && !response; i++) {
    ;[response] = await sql`select status_code, content from net._http_response where id = ${id}`
    if (!response) await new Promise((r) => setTimeout(r, 100))
  }
  assert.ok(response, 'the queued request was never sent')
  assert.equal(response.status_code, 200, response.content)
  assert.equal(JSON.parse(response.content).results.synced, 1)
  assert.equal((await sql`select 1 from public.music_plays where user_id = ${user.id}`).length, 1)
})

const recentlyPlayed = async (listener: string) =>
  (await musicRequests(listener)).filter((r) => r.path === '/v1/me/player/recently-played')

test('late plays: an entry written before the sync gets the track that was playing, not a later one', async () => {
  const user = await createUser()
  const early = play('late1', minutesAgo(60))
  const listener = await connected(user, { plays: [early] })
  assert.equal((await syncNow(user)).body.plays_added, 1)
  const entry = await postEntry(user, { title: 'written while late2 played', content: 'x', mood: 'calm' })
  assert.equal(entry.music_track_id, 'late1')
  // Both plays reach the provider only now: late2 before the entry, late3 after it.
  const created = Date.parse(entry.created_at)
  await updateMusicUser(listener, {
    plays: [early, play('late2', new Date(created - 1000)), play('late3', new Date(created + 1))],
  })
  const s = await syncNow(user)
  assert.equal(s.status, 200, JSON.stringify(s.body))
  assert.equal(s.body.plays_added, 2)
  const [row] = await sql`select music_track_id from public.journal_entries where id = ${entry.id}`
  assert.equal(row.music_track_id, 'late2', 'the play at or before created_at, not the one after it')
  const shown = await api(`/api/journal/${entry.id}`, { token: user.token })
  assert.equal(shown.body.entry.track.name, 'Song late2')
  // A resync changes nothing.
  const again = await syncNow(user)
  assert.deepEqual([again.body.plays_added, again.body.entries_linked], [0, 0])
})

test('an access token expiring within a minute is refreshed first; the rotated refresh token is stored and used next', async () => {
  const user = await createUser()
  const listener = await connected(user, { plays: [play('rot1', minutesAgo(5))], expires_in: 30 })
  assert.equal((await syncNow(user)).status, 200)
  assert.equal(
    (await syncNow(user)).status,
    200,
    'the second refresh used the rotated token (the first is single use)',
  )
  const grants = (await musicRequests(listener)).filter((r) => r.grant_type === 'refresh_token')
  assert.equal(grants.length, 2)
  const [link] = await sql`select token_expires_at from public.music_connections where user_id = ${user.id}`
  assert.ok(Date.parse(link.token_expires_at) > Date.now(), 'the new expiry is stored')
})

test('a token the provider revoked early: one refresh, one retry', async () => {
  const user = await createUser()
  const listener = await connected(user, { plays: [play('rev1', minutesAgo(5))] })
  await expireMusicTokens(listener) // the provider now answers 401 "The access token expired"
  const s = await syncNow(user)
  assert.equal(s.status, 200, JSON.stringify(s.body))
  assert.equal(s.body.plays_added, 1)
  assert.equal((await musicRequests(listener)).filter((r) => r.grant_type === 'refresh_token').length, 1)
  assert.equal((await recentlyPlayed(listener)).length, 2, 'refused once, then answered with the new token')
})

test('invalid_grant on refresh: the link needs reconnection, its tokens are dropped, and syncing it stops', async () => {
  const user = await createUser()
  const listener = await connected(user, { plays: [play('ig1', minutesAgo(5))], expires_in: 10 })
  await scriptMusic(listener, [{
    path: '/api/token',
    status: 400,
    body: { error: 'invalid_grant', error_description: 'Refresh token revoked' },
  }])
  const s = await syncNow(user)
  assertError(s, 409, 'connected again')
  const status = await api('/api/music/status', { token: user.token })
  assert.equal(status.body.needs_reconnect, true)
  assert.match(status.body.last_error, /invalid_grant/)
  assert.equal((await sql`select 1 from private.music_tokens where user_id = ${user.id}`).length, 0)
  assertError(await syncNow(user), 409, 'connected again')
  await sql`update public.music_connections set last_synced_at = null where user_id = ${user.id}`
  const all = await api('/api/music/sync-all', { method: 'POST', headers: CRON, body: {} })
  assert.equal(all.status, 200)
  assert.equal((await recentlyPlayed(listener)).length, 0, 'sync-all never claims it')
  // Connecting again clears the flag.
  await connected(user, { plays: [] })
  assert.equal((await api('/api/music/status', { token: user.token })).body.needs_reconnect, false)
})

test('429 honours Retry-After; 5xx retries with backoff; a slow answer times out and is retried', async () => {
  const user = await createUser()
  const listener = await connected(user, { plays: [play('rl1', minutesAgo(5))] })
  await scriptMusic(listener, [
    {
      path: '/v1/me/player',
      status: 429,
      headers: { 'retry-after': '1' },
      body: { error: { status: 429, message: 'API rate limit exceeded' } },
    },
    { path: '/v1/me/player', status: 503 },
    { path: '/v1/me/player', status: 200, delay_ms: 2600, body: { items: [], next: null } }, // answered after the 2 s deadline
  ])
  const s = await syncNow(user)
  assert.equal(s.status, 200, JSON.stringify(s.body))
  assert.equal(s.body.plays_added, 1)
  const calls = await recentlyPlayed(listener)
  assert.equal(calls.length, 4, '429, 503, timeout, then the answer')
  assert.ok(
    Date.parse(calls[1].at) - Date.parse(calls[0].at) >= 1000,
    'waited Retry-After before asking again',
  )
})

test('a Retry-After beyond the cap, or 5xx every time, fails the sync with a clear error and nothing stored', async () => {
  const user = await createUser()
  const listener = await connected(user, { plays: [play('f1', minutesAgo(5))] })
  await scriptMusic(listener, [{ path: '/v1/me/player', status: 429, headers: { 'retry-after': '3600' } }])
  assertError(await syncNow(user), 429, 'rate limiting')
  await scriptMusic(listener, [500, 502, 500].map((status) => ({ path: '/v1/me/player', status })))
  assertError(await syncNow(user), 502, 'music provider')
  assert.equal((await sql`select 1 from public.music_plays where user_id = ${user.id}`).length, 0)
  const [link] =
    await sql`select last_error, sync_claimed_until from public.music_connections where user_id = ${user.id}`
  assert.match(link.last_error, /500/)
  assert.equal(link.sync_claimed_until, null, 'a failed sync releases its claim')
})

test('cursors are followed page by page; tracks without a full object are looked up by id (50 at most)', async () => {
  const user = await createUser()
  const plays = Array.from({ length: 12 }, (_, i) => play(`pg${i}`, minutesAgo(40 - i)))
  const listener = await connected(user, { plays, page_size: 5, simplified: ['pg3', 'pg7'] })
  const first = await syncNow(user)
  assert.equal(first.body.plays_added, 12)
  assert.equal((await recentlyPlayed(listener)).length, 3, '12 plays in pages of 5')
  const lookups = (await musicRequests(listener)).filter((r) => r.path === '/v1/tracks')
  assert.deepEqual(
    lookups.map((r) => r.query.ids.split(',').sort()),
    [['pg3', 'pg7']],
    'only the ids missing a full object',
  )
  const [t] =
    await sql`select name, artists, album, album_image_url, external_url, duration_ms, raw ? 'popularity' as has_raw
                          from public.music_tracks where id = 'pg3'`
  assert.deepEqual({ ...t }, {
    name: 'Song pg3',
    artists: ['Artist pg3', 'Guest'],
    album: 'Album pg3',
    album_image_url: 'https://i.scdn.example/pg3/640.jpg',
    external_url: 'https://open.spotify.example/track/pg3',
    duration_ms: 180003,
    has_raw: true,
  })
  // New plays after the newest stored one: `after` pages forward.
  await updateMusicUser(listener, {
    plays: [...plays, ...Array.from({ length: 7 }, (_, i) => play(`pn${i}`, minutesAgo(20 - i)))],
  })
  const second = await syncNow(user)
  assert.equal(second.body.plays_added, 7)
  const forward = (await recentlyPlayed(listener)).slice(3)
  assert.ok(forward[0].query.after, 'resumes after the newest stored play')
  assert.equal(forward.length, 2, '7 new plays (and the overlap) in pages of 5')
})

test('POST /api/music/sync has a per-user cooldown (429 with Retry-After)', async () => {
  const user = await createUser()
  await connected(user, { plays: [] })
  assert.equal((await syncNow(user)).status, 200)
  const soon = await api('/api/music/sync', { token: user.token, method: 'POST' })
  assertError(soon, 429, 'try again')
  const wait = Number(soon.headers.get('retry-after'))
  assert.ok(wait > 0 && wait <= 60, `Retry-After ${wait}`)
})

test('sync-all: the cron secret is required; bad input is 400', async () => {
  assertError(await api('/api/music/sync-all', { method: 'POST', body: {} }), 401)
  assertError(
    await api('/api/music/sync-all', { method: 'POST', headers: { 'x-cron-secret': 'wrong' }, body: {} }),
    401,
  )
  const user = await createUser()
  assertError(await api('/api/music/sync-all', { method: 'POST', token: user.token, body: {} }), 401)
  assertError(
    await api('/api/music/sync-all', { method: 'POST', headers: CRON, body: { limit: 0 } }),
    400,
    'limit',
  )
  const ok = await api('/api/music/sync-all', { method: 'POST', headers: CRON })
  assert.equal(ok.status, 200, JSON.stringify(ok.body))
  assert.equal(ok.body.success, true)
  for (const k of ['total', 'synced', 'plays_added', 'failed', 'remaining']) {
    assert.equal(typeof ok.body.results[k], 'number', k)
  }
  assert.ok(Array.isArray(ok.body.results.errors))
})

test('sync-all: two runs at once share the due links, each synced once; failures are reported and never stop the run', async () => {
  const users = await Promise.all(Array.from({ length: 6 }, () => createUser()))
  const listeners: string[] = []
  for (const [i, u] of users.entries()) {
    listeners.push(await connected(u, { plays: [play(`sa${i}`, minutesAgo(5))] }))
  }
  const mine = users.map((u) => u.id)
  // Only this test's links are due.
  await sql`update public.music_connections set last_synced_at = now() where user_id <> all(${mine})`
  await scriptMusic(listeners[5], [500, 500, 500].map((status) => ({ path: '/v1/me/player', status })))

  const [a, b] = await Promise.all([
    api('/api/music/sync-all', { method: 'POST', headers: CRON, body: { limit: 3 } }),
    api('/api/music/sync-all', { method: 'POST', headers: CRON, body: { limit: 3 } }),
  ])
  assert.equal(a.status, 200, JSON.stringify(a.body))
  assert.equal(b.status, 200, JSON.stringify(b.body))
  for (const l of listeners) {
    assert.equal((await recentlyPlayed(l)).length, l === listeners[5] ? 3 : 1, `${l} synced exactly once`)
  }
  const total = a.body.results.total + b.body.results.total
  assert.ok(total <= 6, `each link claimed once (${total})`)
  const failedErrors = [...a.body.results.errors, ...b.body.results.errors]
  if (total === 6) {
    assert.equal(a.body.results.synced + b.body.results.synced, 5)
    assert.equal(a.body.results.failed + b.body.results.failed, 1)
    assert.equal(failedErrors.length, 1)
    assert.ok(failedErrors[0].startsWith(users[5].id))
  }
  const synced =
    await sql`select user_id from public.music_connections where user_id = any(${mine}) and last_synced_at is not null`
  assert.equal(synced.length, 5, 'five synced, the failing one is not marked synced')
  const again = await api('/api/music/sync-all', { method: 'POST', headers: CRON, body: {} })
  assert.deepEqual(
    [again.body.results.total, again.body.results.synced],
    [1, 1],
    'synced links are not due again right away; the failed one is retried (and now succeeds)',
  )
})

test('sync-all: a chunk smaller than the due links reports what remains', async () => {
  const users = await Promise.all(Array.from({ length: 4 }, () => createUser()))
  for (const u of users) await connected(u, { plays: [] })
  const mine = users.map((u) => u.id)
  await sql`update public.music_connections set last_synced_at = now() where user_id <> all(${mine})`
  const first = await api('/api/music/sync-all', { method: 'POST', headers: CRON, body: { limit: 1 } })
  assert.equal(first.body.results.total, 1)
  assert.equal(first.body.results.remaining, 3)
  const rest = await api('/api/music/sync-all', { method: 'POST', headers: CRON, body: { limit: 10 } })
  assert.equal(rest.body.results.total, 3)
  assert.equal(rest.body.results.remaining, 0)
  assert.match(rest.body.message, /3 of 3/)
})

test('sync-all: links a run has no time for are released and counted in remaining', async () => {
  const users = await Promise.all(Array.from({ length: 3 }, () => createUser()))
  for (const u of users) await connected(u, { plays: [play('bud', minutesAgo(5))] })
  const mine = users.map((u) => u.id)
  await sql`update public.music_connections set last_synced_at = now() where user_id <> all(${mine})`
  const { withApi } = await import('./_api_process.ts')
  await withApi({ MUSIC_SYNC_BUDGET_MS: '1' }, async (base) => {
    const res = await fetch(`${base}/api/music/sync-all`, {
      method: 'POST',
      headers: { ...CRON, 'content-type': 'application/json' },
      body: '{}',
    })
    const body = await res.json()
    assert.equal(res.status, 200, JSON.stringify(body))
    assert.deepEqual([body.results.total, body.results.synced, body.results.remaining], [0, 0, 3])
  })
  const held =
    await sql`select 1 from public.music_connections where user_id = any(${mine}) and (sync_claimed_until is not null or last_synced_at is not null)`
  assert.equal(held.length, 0, 'released, not synced')
  const next = await api('/api/music/sync-all', { method: 'POST', headers: CRON, body: {} })
  assert.deepEqual([next.body.results.synced, next.body.results.remaining], [3, 0], 'the next run takes them')
})
