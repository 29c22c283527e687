// Devices and preferences: /api and PostgREST give the same answers (RLS), a token moves to the
// account that registers it last, the defaults a new user gets, bad input named by field.
import { strict as assert } from 'node:assert'
import { api, assertError, clientAs, createUser, env, sql, test } from './_helpers.ts'

const expoToken = (tag = 'dev') => `ExponentPushToken[${tag}-${crypto.randomUUID().slice(0, 12)}]`

async function subscription() {
  const res = await fetch(`${env('WEB_PUSH_FAKE_URL')}/__control/subscribe`, { method: 'POST', body: '{}' })
  return await res.json() as { endpoint: string; keys: { p256dh: string; auth: string } }
}

test('register, list and forget devices; a token moves to the account that registers it last', async () => {
  const [alice, bob] = await Promise.all([createUser(), createUser()])
  const token = expoToken()
  const a = await api('/api/notifications/devices', {
    token: alice.token,
    body: { expo_push_token: token, name: 'Pixel' },
  })
  assert.equal(a.status, 201, JSON.stringify(a.body))
  assert.equal(a.body.device.kind, 'expo')
  assert.equal(a.body.device.address, token)
  const sub = await subscription()
  const w = await api('/api/notifications/devices', {
    token: alice.token,
    body: { web_push_subscription: { ...sub, expirationTime: null } },
  })
  assert.equal(w.status, 201, JSON.stringify(w.body))
  assert.equal(w.body.device.kind, 'web_push')
  assert.equal(w.body.device.address, sub.endpoint)

  // Registering again is a refresh, not a second row.
  const again = await api('/api/notifications/devices', {
    token: alice.token,
    body: { expo_push_token: token },
  })
  assert.equal(again.status, 201)
  assert.equal(again.body.device.id, a.body.device.id)
  assert.equal(again.body.device.name, 'Pixel')
  let list = await api('/api/notifications/devices', { token: alice.token })
  assert.deepEqual(
    list.body.devices.map((d: any) => d.id).sort(),
    [a.body.device.id, w.body.device.id].sort(),
  )

  // Bob signs in on the same phone: the token is his now, and Alice no longer sees it.
  const moved = await api('/api/notifications/devices', {
    token: bob.token,
    body: { expo_push_token: token },
  })
  assert.equal(moved.status, 201)
  list = await api('/api/notifications/devices', { token: alice.token })
  assert.deepEqual(list.body.devices.map((d: any) => d.kind), ['web_push'])
  const [owner] = await sql`select user_id from public.notification_devices where address = ${token}`
  assert.equal(owner.user_id, bob.id)

  // Forgetting: only one's own; a stranger's id is 404 and nothing is deleted.
  assertError(
    await api(`/api/notifications/devices/${w.body.device.id}`, { method: 'DELETE', token: bob.token }),
    404,
  )
  const del = await api(`/api/notifications/devices/${w.body.device.id}`, {
    method: 'DELETE',
    token: alice.token,
  })
  assert.equal(del.status, 200)
  assert.equal((await api('/api/notifications/devices', { token: alice.token })).body.devices.length, 0)
})

test('at most 10 devices a user, through /api and PostgREST; refreshing one of them is not an eleventh', async () => {
  const user = await createUser()
  const tokens = Array.from({ length: 10 }, () => expoToken())
  for (const t of tokens) {
    const res = await api('/api/notifications/devices', { token: user.token, body: { expo_push_token: t } })
    assert.equal(res.status, 201, JSON.stringify(res.body))
  }
  assertError(
    await api('/api/notifications/devices', { token: user.token, body: { expo_push_token: expoToken() } }),
    400,
    'address',
  )
  const rest = await clientAs(user.token).rpc('register_notification_device', {
    kind: 'expo',
    address: expoToken(),
  })
  assert.equal(rest.error?.code, '23514')
  const refresh = await api('/api/notifications/devices', {
    token: user.token,
    body: { expo_push_token: tokens[3] },
  })
  assert.equal(refresh.status, 201, 'a device the user has is refreshed')
  const [{ n }] =
    await sql`select count(*)::int as n from public.notification_devices where user_id = ${user.id}`
  assert.equal(n, 10)
})

test('bad device input is a 400 naming the field, and nothing is written', async () => {
  const user = await createUser()
  assertError(
    await api('/api/notifications/devices', { token: user.token, body: { expo_push_token: 'not-a-token' } }),
    400,
    'expo_push_token',
  )
  assertError(
    await api('/api/notifications/devices', { token: user.token, body: {} }),
    400,
    'expo_push_token',
  )
  const sub = await subscription()
  assertError(
    await api('/api/notifications/devices', {
      token: user.token,
      body: { expo_push_token: expoToken(), web_push_subscription: sub },
    }),
    400,
  )
  assertError(
    await api('/api/notifications/devices', {
      token: user.token,
      body: { web_push_subscription: { ...sub, keys: { p256dh: 'x', auth: sub.keys.auth } } },
    }),
    400,
    'p256dh',
  )
  assertError(
    await api('/api/notifications/devices', {
      token: user.token,
      body: { web_push_subscription: { ...sub, endpoint: 'http://169.254.169.254/latest' } },
    }),
    400,
    'web_push_subscription.endpoint',
  )
  assertError(await api('/api/notifications/devices', { body: { expo_push_token: expoToken() } }), 401)
  const [{ n }] =
    await sql`select count(*)::int as n from public.notification_devices where user_id = ${user.id}`
  assert.equal(n, 0)
})

test('PostgREST: owners see and change only their devices; a token inserted on another account moves too', async () => {
  const [alice, bob] = await Promise.all([createUser(), createUser()])
  const token = expoToken('rest')
  const ins = await clientAs(alice.token).from('notification_devices').insert({
    kind: 'expo',
    address: token,
  }).select('id, user_id').single()
  assert.equal(ins.error, null)
  assert.equal(ins.data!.user_id, alice.id)
  assert.deepEqual((await clientAs(bob.token).from('notification_devices').select('id')).data, [])
  const upd = await clientAs(bob.token).from('notification_devices').update({ name: 'mine' }).eq(
    'id',
    ins.data!.id,
  ).select('id')
  assert.deepEqual(upd.data, [])
  const del = await clientAs(bob.token).from('notification_devices').delete().eq('id', ins.data!.id).select(
    'id',
  )
  assert.deepEqual(del.data, [])
  // Someone else's user_id cannot be written.
  const forged = await clientAs(bob.token).from('notification_devices').insert(
    { kind: 'expo', address: expoToken(), user_id: alice.id } as never,
  )
  assert.ok(forged.error)
  const moved = await clientAs(bob.token).rpc('register_notification_device', {
    kind: 'expo',
    address: token,
  })
  assert.equal(moved.error, null)
  assert.deepEqual((await clientAs(alice.token).from('notification_devices').select('id')).data, [])
  assert.equal((await clientAs().from('notification_devices').select('id')).data?.length ?? 0, 0)
  // Super admins manage people, not their phones: another user's devices and preferences stay the user's.
  const admin = await createUser({ superAdmin: true })
  assert.deepEqual(
    (await clientAs(admin.token).from('notification_devices').select('id').eq('user_id', bob.id)).data,
    [],
  )
  assert.deepEqual(
    (await clientAs(admin.token).from('notification_preferences').select('user_id').eq('user_id', bob.id))
      .data,
    [],
  )
  const anon = await clientAs().from('notification_preferences').select('user_id')
  assert.ok(anon.error || anon.data?.length === 0)
})

test("preferences: a new user gets the defaults; PUT changes only what it names; PostgREST keeps to one's own", async () => {
  const [user, other] = await Promise.all([createUser(), createUser()])
  const got = await api('/api/notifications/preferences', { token: user.token })
  assert.equal(got.status, 200)
  const { updated_at: _, ...defaults } = got.body.preferences
  assert.deepEqual(defaults, {
    push_enabled: true,
    types: {},
    quiet_hours: { start: '22:00', end: '07:00' },
    timezone: null,
    daily_cap: 20,
    email_digest: false,
    digest_hour: 8,
  })
  const put = await api('/api/notifications/preferences', {
    method: 'PUT',
    token: user.token,
    body: {
      types: { 'workout.battle_update': { push: false } },
      quiet_hours: { start: '23:30', end: '06:15' },
      timezone: 'europe/paris',
      email_digest: true,
    },
  })
  assert.equal(put.status, 200, JSON.stringify(put.body))
  assert.deepEqual(put.body.preferences.types, { 'workout.battle_update': { push: false } })
  assert.deepEqual(put.body.preferences.quiet_hours, { start: '23:30', end: '06:15' })
  assert.equal(put.body.preferences.timezone, 'Europe/Paris')
  assert.equal(put.body.preferences.daily_cap, 20)
  assert.equal(put.body.preferences.email_digest, true)
  const off = await api('/api/notifications/preferences', {
    method: 'PUT',
    token: user.token,
    body: { quiet_hours: null },
  })
  assert.equal(off.body.preferences.quiet_hours, null)

  assertError(
    await api('/api/notifications/preferences', { method: 'PUT', token: user.token, body: { daily_cap: 0 } }),
    400,
    'daily_cap',
  )
  assertError(
    await api('/api/notifications/preferences', {
      method: 'PUT',
      token: user.token,
      body: { quiet_hours: { start: '25:00', end: '07:00' } },
    }),
    400,
    'quiet_hours',
  )
  assertError(
    await api('/api/notifications/preferences', {
      method: 'PUT',
      token: user.token,
      body: { timezone: 'Mars/Olympus' },
    }),
    400,
    'timezone',
  )
  assertError(
    await api('/api/notifications/preferences', {
      method: 'PUT',
      token: user.token,
      body: { types: { nope: { push: true } } },
    }),
    400,
    'types',
  )
  assertError(
    await api('/api/notifications/preferences', { method: 'PUT', token: user.token, body: { surprise: 1 } }),
    400,
  )
  const [row] =
    await sql`select daily_cap, timezone from public.notification_preferences where user_id = ${user.id}`
  assert.deepEqual({ ...row }, { daily_cap: 20, timezone: 'Europe/Paris' })

  // PostgREST: the stranger reads and changes nothing of it.
  assert.deepEqual(
    (await clientAs(other.token).from('notification_preferences').select('user_id').eq('user_id', user.id))
      .data,
    [],
  )
  await clientAs(other.token).from('notification_preferences').update({ daily_cap: 3 }).eq('user_id', user.id)
  const rest = await clientAs(user.token).from('notification_preferences').update({ daily_cap: 5 }).eq(
    'user_id',
    user.id,
  ).select('daily_cap').single()
  assert.equal(rest.data!.daily_cap, 5)
})

test('the VAPID public key is served while Web Push is on; health says which channels are on', async () => {
  const res = await api('/api/notifications/vapid-public-key')
  assert.equal(res.status, 200)
  assert.equal(res.body.public_key, env('WEB_PUSH_VAPID_PUBLIC_KEY'))
  const admin = await createUser({ superAdmin: true })
  const health = await api('/api/admin/health', { token: admin.token })
  assert.deepEqual(health.body.notification_channels, { expo: true, web_push: true, email: true })
})
