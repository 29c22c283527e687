// Realtime (/realtime/v1, scripts/lib/realtime/) through supabase-js: postgres_changes on the
// supabase_realtime publication, delivered only to subscribers whose RLS lets them see the row.
import { strict as assert } from 'node:assert'
import { ANON_KEY, clientAs, createUser, JWT_SECRET, signClaims, sql, test } from './_helpers.ts'
import { closeAll, listen, openTestRooms, realtimeClient, settle, until } from './_realtime.ts'

const notify = async (
  userId: string,
  type = 'test.realtime',
  details: Record<string, unknown> = { n: crypto.randomUUID() },
) => (await sql`select private.notify(${userId}, ${type}, ${sql.json(details as any)}) as id`)[0].id as string

test('realtime: the supabase_realtime publication exists and carries exactly the live tables', async () => {
  const rows = await sql`select tablename from pg_publication_tables
                          where pubname = 'supabase_realtime' and schemaname = 'public' order by tablename`
  // journal_entries: its metadata only; the text (journal_entry_contents) is never published.
  assert.deepEqual(
    rows.map((r) => r.tablename),
    ['encouragement_sent_drops', 'journal_entries', 'notifications', 'workout_checkin_events'],
  )
})

test('realtime: two users each get only their own notifications (filtered and unfiltered)', async () => {
  const [alice, bob] = await Promise.all([
    createUser({ prefix: 'rt-alice' }),
    createUser({ prefix: 'rt-bob' }),
  ])
  const a = realtimeClient(alice.token)
  const b = realtimeClient(bob.token)
  try {
    const aliceOwn = await listen(a, { table: 'notifications', filter: `user_id=eq.${alice.id}` })
    const aliceAll = await listen(a, { table: 'notifications' })
    const bobOwn = await listen(b, { table: 'notifications', filter: `user_id=eq.${bob.id}` })
    const bobAll = await listen(b, { table: 'notifications' })
    for (const l of [aliceOwn, aliceAll, bobOwn, bobAll]) {
      assert.deepEqual(l.status, ['SUBSCRIBED'])
      assert.equal(l.system[0].status, 'ok', JSON.stringify(l.system))
      assert.equal(l.system[0].message, 'Subscribed to PostgreSQL')
      assert.equal(l.system[0].extension, 'postgres_changes')
    }

    const forAlice = await notify(alice.id, 'test.realtime', { n: 1, who: 'alice' })
    const forBob = await notify(bob.id, 'test.realtime', { n: 2, who: 'bob' })
    await until(() => aliceOwn.changes.length >= 1 && aliceAll.changes.length >= 1, "alice's notification")
    await until(() => bobOwn.changes.length >= 1 && bobAll.changes.length >= 1, "bob's notification")
    await settle(aliceAll, alice.id)
    await settle(bobAll, bob.id)

    const ids = (l: { changes: any[] }) =>
      l.changes.filter((c) => c.new?.type === 'test.realtime').map((c) => c.new.id)
    assert.deepEqual(ids(aliceOwn), [forAlice])
    assert.deepEqual(ids(aliceAll), [forAlice])
    assert.deepEqual(ids(bobOwn), [forBob])
    assert.deepEqual(ids(bobAll), [forBob])

    // The payload as realtime-js hands it over from Supabase Realtime.
    const got = aliceOwn.changes[0]
    assert.equal(got.eventType, 'INSERT')
    assert.equal(got.schema, 'public')
    assert.equal(got.table, 'notifications')
    assert.equal(got.errors, null)
    assert.match(got.commit_timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    assert.deepEqual(got.old, {})
    assert.equal(got.new.user_id, alice.id)
    assert.deepEqual(got.new.payload, { n: 1, who: 'alice' })
    assert.equal(got.new.read_at, null)
    assert.ok(!Number.isNaN(Date.parse(got.new.created_at)))
  } finally {
    await closeAll(a, b)
  }
})

test('realtime: an anon subscriber never receives a notification row (Error 401 as on hosted)', async () => {
  const user = await createUser({ prefix: 'rt-anon' })
  const anon = realtimeClient()
  const owner = realtimeClient(user.token)
  try {
    await openTestRooms() // anon may join no channel of the product's: a test room shows what it would hear
    const anonAll = await listen(anon, { table: 'notifications' }, `room:anon-${crypto.randomUUID().slice(0, 8)}`)
    const ownerAll = await listen(owner, { table: 'notifications' })
    assert.deepEqual(anonAll.status, ['SUBSCRIBED'])
    await notify(user.id)
    await until(() => ownerAll.changes.length >= 1, 'the owner notification')
    await settle(ownerAll, user.id)
    assert.ok(anonAll.changes.length >= 1, 'hosted Realtime tells a subscriber without SELECT on the key')
    for (const c of anonAll.changes) {
      assert.deepEqual(c.new, {}, JSON.stringify(c))
      assert.deepEqual(c.errors, ['Error 401: Unauthorized'])
    }
  } finally {
    await closeAll(anon, owner)
  }
})

test('realtime: updates and deletes reach the owner; a delete carries the old primary key only', async () => {
  const [owner, other] = await Promise.all([
    createUser({ prefix: 'rt-upd' }),
    createUser({ prefix: 'rt-upd-other' }),
  ])
  const o = realtimeClient(owner.token)
  const x = realtimeClient(other.token)
  try {
    const ownerAll = await listen(o, { table: 'notifications' })
    const ownerUpdates = await listen(o, {
      event: 'UPDATE',
      table: 'notifications',
      filter: `user_id=eq.${owner.id}`,
    })
    const otherOwn = await listen(x, { table: 'notifications', filter: `user_id=eq.${other.id}` })
    const id = await notify(owner.id)
    await until(() => ownerAll.changes.length >= 1, 'the insert')

    // The owner marks it read through the app's RPC (as a client does).
    const marked = await clientAs(owner.token).rpc('mark_notifications_read', { notification_ids: [id] })
    assert.equal(marked.error, null)
    assert.equal(marked.data, 1)
    await until(() => ownerUpdates.changes.length >= 1, 'the update')
    const upd = ownerUpdates.changes[0]
    assert.equal(upd.eventType, 'UPDATE')
    assert.equal(upd.new.id, id)
    assert.ok(upd.new.read_at, 'the new row has read_at set')
    assert.deepEqual(upd.old, { id }, 'replica identity default: the old record is the key')
    assert.ok(ownerAll.changes.some((c) => c.eventType === 'UPDATE' && c.new.id === id))

    await sql`delete from public.notifications where id = ${id}`
    await until(() => ownerAll.changes.some((c) => c.eventType === 'DELETE'), 'the delete')
    const del = ownerAll.changes.find((c) => c.eventType === 'DELETE')
    assert.deepEqual(del.old, { id })
    assert.deepEqual(del.new, {})
    assert.equal(
      ownerUpdates.changes.filter((c) => c.eventType === 'DELETE').length,
      0,
      'an UPDATE binding gets no delete',
    )

    await settle(otherOwn, other.id)
    assert.deepEqual(
      otherOwn.changes.filter((c) => c.new?.type !== 'test.marker'),
      [],
      'another user saw nothing of it',
    )
  } finally {
    await closeAll(o, x)
  }
})

test('realtime: filters neq and in select the rows as Realtime compares them', async () => {
  const user = await createUser({ prefix: 'rt-filter' })
  const c = realtimeClient(user.token)
  try {
    const inList = await listen(c, {
      event: 'INSERT',
      table: 'notifications',
      filter: 'type=in.(test.alpha,test.beta)',
    })
    const notAlpha = await listen(c, {
      event: 'INSERT',
      table: 'notifications',
      filter: 'type=neq.test.alpha',
    })
    await notify(user.id, 'test.alpha')
    await notify(user.id, 'test.beta')
    await notify(user.id, 'test.gamma')
    await until(() => notAlpha.changes.length >= 2 && inList.changes.length >= 2, 'the filtered inserts')
    await settle(notAlpha, user.id)
    assert.deepEqual(inList.changes.map((x) => x.new.type), ['test.alpha', 'test.beta'])
    assert.deepEqual(notAlpha.changes.map((x) => x.new.type), ['test.beta', 'test.gamma', 'test.marker'])
  } finally {
    await closeAll(c)
  }
})

test('realtime: a table outside the publication yields an error message and no changes', async () => {
  const user = await createUser({ prefix: 'rt-nopub' })
  const c = realtimeClient(user.token)
  try {
    const profiles = await listen(c, { table: 'profiles', filter: `id=eq.${user.id}` })
    assert.equal(profiles.system[0].status, 'error')
    assert.match(profiles.system[0].message, /^Unable to subscribe to changes with given parameters/)
    await sql`update public.profiles set full_name = 'Renamed for realtime' where id = ${user.id}`
    const marker = await listen(c, { table: 'notifications' })
    await settle(marker, user.id)
    assert.deepEqual(profiles.changes, [])

    const badColumn = await listen(c, { table: 'notifications', filter: 'no_such_column=eq.1' })
    assert.equal(badColumn.system[0].status, 'error')
    assert.match(badColumn.system[0].message, /invalid column for filter no_such_column/)
  } finally {
    await closeAll(c)
  }
})

test('realtime: a bad or expired token is refused at join', async () => {
  const user = await createUser({ prefix: 'rt-badtoken' })
  const claims = { sub: user.id, role: 'authenticated', aud: 'authenticated' }
  const cases: [string, string, RegExp][] = [
    [
      'wrong secret',
      await signClaims(claims, 'not-the-project-secret-but-long-enough-to-sign'),
      /JwtSignatureError/,
    ],
    ['expired', await signClaims(claims, JWT_SECRET, -60), /InvalidJWTToken: Token has expired/],
    ['malformed', 'not.a.jwt', /MalformedJWT/],
  ]
  for (const [name, token, reason] of cases) {
    const c = realtimeClient(token)
    try {
      const l = await listen(c, { table: 'notifications' })
      assert.ok(l.status.includes('CHANNEL_ERROR'), `${name}: ${l.status}`)
      assert.match(l.errors[0].message, reason, name)
      assert.deepEqual(l.changes, [])
    } finally {
      await closeAll(c)
    }
  }
})

test('realtime: a bad token sent to a joined channel (setAuth) closes it with a system error', async () => {
  const user = await createUser({ prefix: 'rt-badswitch' })
  const c = realtimeClient()
  try {
    await openTestRooms() // a channel the anon key may join, to switch tokens on
    const l = await listen(c, { table: 'notifications', filter: `user_id=eq.${user.id}` }, `room:switch-${user.id}`)
    assert.deepEqual(l.status, ['SUBSCRIBED'])
    await c.realtime.setAuth(
      await signClaims(
        { sub: user.id, role: 'authenticated' },
        'not-the-project-secret-but-long-enough-to-sign',
      ),
    )
    await until(() => l.status.includes('CLOSED'), 'the channel to close')
    const closing = l.system.find((m) => m.extension === 'system')
    assert.equal(closing?.status, 'error')
    assert.match(closing.message, /JwtSignatureError/)
    await notify(user.id)
    await new Promise((r) => setTimeout(r, 500))
    assert.deepEqual(l.changes, [])
  } finally {
    await closeAll(c)
  }
})

test('realtime: a channel is closed when its token expires', async () => {
  const user = await createUser({ prefix: 'rt-expiry' })
  const shortLived = await signClaims(
    { sub: user.id, role: 'authenticated', aud: 'authenticated' },
    JWT_SECRET,
    2,
  )
  const c = realtimeClient(shortLived)
  try {
    const l = await listen(c, { table: 'notifications', filter: `user_id=eq.${user.id}` })
    assert.deepEqual(l.status, ['SUBSCRIBED'])
    await until(() => l.status.includes('CLOSED'), 'the channel to close at expiry', 15_000)
    const closing = l.system.find((m) => m.extension === 'system')
    assert.equal(closing?.status, 'error')
    assert.match(closing.message, /Token has expired/)
  } finally {
    await closeAll(c)
  }
})

test('realtime: a socket whose apikey is not a key of the project is refused', async () => {
  const url = new URL('/realtime/v1/websocket', Deno.env.get('SUPABASE_URL'))
  url.protocol = 'ws:'
  const outcome = async (apikey: string) => {
    url.searchParams.set('apikey', apikey)
    url.searchParams.set('vsn', '1.0.0')
    const ws = new WebSocket(url)
    return await new Promise<string>((resolve) => {
      ws.onopen = () => (ws.close(), resolve('open'))
      ws.onerror = () => resolve('refused')
    })
  }
  assert.equal(
    await outcome(await signClaims({ role: 'anon' }, 'not-the-project-secret-but-long-enough-to-sign')),
    'refused',
  )
  assert.equal(await outcome(ANON_KEY), 'open')
})

test('realtime: setAuth on a joined channel switches whose rows it receives (access_token)', async () => {
  const user = await createUser({ prefix: 'rt-setauth' })
  const c = realtimeClient()
  try {
    await openTestRooms() // a channel the anon key may join, to switch tokens on
    const l = await listen(c, { table: 'notifications', filter: `user_id=eq.${user.id}` }, `room:setauth-${user.id}`)
    assert.deepEqual(l.status, ['SUBSCRIBED'])
    await c.realtime.setAuth(user.token)
    await new Promise((r) => setTimeout(r, 300)) // the access_token message reaches the server
    const id = await notify(user.id)
    await until(() => l.changes.some((x) => x.new?.id === id), 'the notification after setAuth')
  } finally {
    await closeAll(c)
  }
})

test('realtime: vsn 2.0.0 (array frames) delivers changes too', async () => {
  const user = await createUser({ prefix: 'rt-vsn2' })
  const c = realtimeClient(user.token, '2.0.0')
  try {
    const l = await listen(c, { table: 'notifications', filter: `user_id=eq.${user.id}` })
    assert.deepEqual(l.status, ['SUBSCRIBED'])
    const id = await notify(user.id)
    await until(() => l.changes.some((x) => x.new?.id === id), 'the notification over vsn 2.0.0')
  } finally {
    await closeAll(c)
  }
})
