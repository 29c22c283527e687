// GET /api/user/export: a user with data in many areas exports; the archive is opened with the
// same ZIP library the api writes it with. What is checked: every section holds the user's own
// rows, media files are byte-equal to the stored objects, README.txt is there, another user's
// shared entry and private rows are not, a received drop names its sender as the app shows it,
// ?format=json is the ZIP's export.json, and the document validates against the OpenAPI schema.
import { strict as assert } from 'node:assert'
import { Validator } from '@cfworker/json-schema'
import { configure, Uint8ArrayReader, Uint8ArrayWriter, ZipReader } from '@zip.js/zip.js'
import { encode } from 'fast-png'
import {
  api,
  avatarUrl,
  API_URL,
  apiFetch,
  assertError,
  createUser,
  orgWith,
  postEntry,
  postNotebook,
  sql,
  teamWith,
  test,
  type TestUser,
} from './_helpers.ts'
import { createPack } from './_tone_packs.ts'

configure({ useWebWorkers: false })

const smallPng = (shade: number) =>
  encode({ width: 8, height: 8, data: new Uint8Array(8 * 8 * 3).fill(shade), channels: 3 })

async function uploadPackImage(u: TestUser, packId: string, tone: string, bytes: Uint8Array) {
  const form = new FormData()
  form.append('file', new Blob([bytes as Uint8Array<ArrayBuffer>], { type: 'image/png' }), `${tone}.png`)
  const res = await apiFetch(`/api/tone-packs/${packId}/images/${tone}`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${u.token}` },
    body: form,
  })
  const body = await res.json()
  assert.equal(res.status, 200, JSON.stringify(body))
}

/** An object stored under a user's folder of a bucket, straight into the local store. */
async function storeObject(bucket: string, name: string, bytes: Uint8Array, ownerId: string) {
  const key = Deno.env.get('SUPABASE_SERVICE_ROLE_KEY')!
  const res = await fetch(`${API_URL}/storage/v1/object/${bucket}/${name}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, apikey: key, 'content-type': 'image/png' },
    body: bytes as Uint8Array<ArrayBuffer>,
  })
  assert.ok(res.ok, `storing ${bucket}/${name}: ${res.status} ${await res.text()}`)
  await sql`update storage.objects set owner_id = ${ownerId} where bucket_id = ${bucket} and name = ${name}`
}

async function storedBytes(bucket: string, name: string) {
  const res = await fetch(`${API_URL}/storage/v1/object/public/${bucket}/${name}`)
  assert.equal(res.status, 200)
  return new Uint8Array(await res.arrayBuffer())
}

async function exportZip(u: TestUser) {
  const res = await apiFetch('/api/user/export', { headers: { authorization: `Bearer ${u.token}` } })
  assert.equal(res.status, 200)
  assert.equal(res.headers.get('content-type'), 'application/octet-stream') // supabase-js reads it as a Blob
  const reader = new ZipReader(new Uint8ArrayReader(new Uint8Array(await res.arrayBuffer())))
  const files = new Map<string, Uint8Array>()
  for (const entry of await reader.getEntries()) {
    if (!entry.directory) files.set(entry.filename, await entry.getData!(new Uint8ArrayWriter()))
  }
  await reader.close()
  return files
}

/** The world: `me` with data in many areas, `other` (a teammate) with a shared entry and private rows. */
async function world() {
  const [me, other] = await Promise.all([createUser({ prefix: 'exporter' }), createUser({ prefix: 'other' })])
  await sql`update public.profiles set full_name = 'Expo Rter' where id = ${me.id}`
  await sql`update public.profiles set full_name = 'Olive Other', avatar_url = ${avatarUrl(other.id)} where id = ${other.id}`
  const orgId = await orgWith(other, [me])
  const teamId = await teamWith(orgId, other, [me])

  // Journal: a notebook, a private entry and a team-shared one, with a background.
  const notebook = await postNotebook(me, { name: 'Diary' })
  const priv = await postEntry(me, {
    title: 'Private thoughts',
    content: 'only mine',
    mood: 'calm',
    tags: ['a', 'b'],
    notebook_id: notebook.id,
  })
  const shared = await postEntry(me, {
    title: 'Team update',
    content: 'for the team',
    metadata_visibility: 'team',
    content_visibility: 'team',
    team_id: teamId,
  })
  const background = `${me.id}/${priv.id}-${Date.now()}.png`
  const backgroundBytes = smallPng(40)
  await storeObject('entry-backgrounds', background, backgroundBytes, me.id)
  await sql`update public.journal_entries set background_object = ${background},
              background_url = ${`${API_URL}/storage/v1/object/public/entry-backgrounds/${background}`} where id = ${priv.id}`

  // The other user's shared entry (which `me` may read) and private rows.
  const othersShared = await postEntry(other, {
    title: 'Olive shares',
    content: 'olive secret text',
    metadata_visibility: 'team',
    content_visibility: 'team',
    team_id: teamId,
  })
  await postEntry(other, { title: 'Olive private', content: 'olive diary' })
  const othersGoal = await api('/api/goals', { token: other.token, body: { title: 'Olive goal' } })
  assert.equal(othersGoal.status, 201)

  // Goals and a check-in.
  const goal = await api('/api/goals', {
    token: me.token,
    body: { title: 'Run 5k', description: 'by spring' },
  })
  assert.equal(goal.status, 201, JSON.stringify(goal.body))
  const goalId = goal.body.id
  const checkIn = await api(`/api/goals/${goalId}/check-ins`, {
    token: me.token,
    body: { status: 'completed', notes: 'done' },
  })
  assert.equal(checkIn.status, 201, JSON.stringify(checkIn.body))

  // Tone pack with an uploaded image (a media file in the archive).
  const pack = await createPack(me, { name: 'My pack' })
  const packBytes = smallPng(200)
  await uploadPackImage(me, pack.id, 'joyful', packBytes)

  // Encouragement: other sends me a drop, I send one back.
  const received = await api('/api/encouragement-drops/send', {
    token: other.token,
    body: { recipient_id: me.id, drop_type: 'encouragement', content: 'Keep going!' },
  })
  assert.equal(received.status, 201, JSON.stringify(received.body))
  const sent = await api('/api/encouragement-drops/send', {
    token: me.token,
    body: { recipient_id: other.id, drop_type: 'encouragement', content: 'You too!' },
  })
  assert.equal(sent.status, 201, JSON.stringify(sent.body))

  // Workout: a window, a location, a check-in with a photo object.
  await sql`insert into public.workout_windows (user_id, activity_type, window_start_time, window_end_time, timezone)
            values (${me.id}, 'cardio', '07:00', '09:00', 'UTC')`
  await sql`insert into public.workout_locations (user_id, city, country, latitude, longitude, timezone)
            values (${me.id}, 'Lisbon', 'PT', 38.7, -9.1, 'Europe/Lisbon')`
  const photo = `${me.id}/checkin-${Date.now()}.png`
  const photoBytes = smallPng(120)
  await storeObject('workout-checkins', photo, photoBytes, me.id)
  await sql`insert into public.workout_checkins (user_id, date, status, activity_type, photo_url, photo_object, photo_timestamp, timezone)
            values (${me.id}, current_date, 'verified', 'cardio',
                    ${`${API_URL}/storage/v1/object/public/workout-checkins/${photo}`}, ${photo}, now(), 'UTC')`

  // A pack I made and retired (someone bought it): RLS shows it to its buyers only.
  const retired = await createPack(me, { name: 'Retired pack' })
  await uploadPackImage(me, retired.id, 'sad', smallPng(90))
  await sql`update public.tone_packs set retired_at = now() where id = ${retired.id}`
  // A squad of the day with the other user.
  await sql`insert into public.workout_squads (date, user_1_id, user_2_id, team_color)
            values (current_date, ${me.id}, ${other.id}, 'red')`

  // AI usage with its cost, a notification, music history, labs.
  await sql`insert into public.ai_usage (user_id, usage_type, model, input_tokens, output_tokens, cost_usd)
            values (${me.id}, 'tone_analysis', 'gpt-test', 100, 20, 0.0012)`
  await sql`insert into public.notifications (user_id, type, payload) values (${me.id}, 'test.export', '{"hello": "me"}')`
  await sql`insert into public.notifications (user_id, type, payload) values (${other.id}, 'test.export', '{"hello": "olive"}')`
  // A phone each, and my quiet hours moved.
  await sql`insert into public.notification_devices (user_id, kind, address, name)
            values (${me.id}, 'expo', ${`ExponentPushToken[export-${me.id}]`}, 'My phone'),
                   (${other.id}, 'expo', ${`ExponentPushToken[export-${other.id}]`}, 'Olive phone')`
  await sql`update public.notification_preferences set quiet_hours_start = '23:00', daily_cap = 7 where user_id = ${me.id}`
  await sql`insert into public.music_tracks (id, name, artists, raw) values ('track-export-1', 'Song', array['Band'], '{}')
            on conflict (id) do nothing`
  await sql`insert into public.music_plays (user_id, played_at, track_id) values (${me.id}, now(), 'track-export-1')`

  // An impersonation session of me, by a super admin.
  const admin = await createUser({ prefix: 'admin', superAdmin: true })
  const session = await api('/api/admin/impersonation', {
    token: admin.token,
    body: { user_id: me.id, reason: 'support ticket 42' },
  })

  return {
    me,
    other,
    admin,
    orgId,
    retired,
    teamId,
    priv,
    shared,
    othersShared,
    goalId,
    pack,
    background,
    backgroundBytes,
    photo,
    photoBytes,
    packBytes,
    received: received.body.drop,
    sent: sent.body.drop,
    impersonated: session.status === 201,
  }
}

let fixture: Awaited<ReturnType<typeof world>> | undefined
const theWorld = async () => (fixture ??= await world())

test('export: a ZIP with export.json, the media files byte-equal to storage, and README.txt', async () => {
  const w = await theWorld()
  const files = await exportZip(w.me)
  assert.ok(files.has('export.json'), [...files.keys()].join(', '))
  assert.ok(files.has('README.txt'))
  const doc = JSON.parse(new TextDecoder().decode(files.get('export.json')))
  const readme = new TextDecoder().decode(files.get('README.txt'))
  assert.match(readme, /export\.json/)

  assert.equal(doc.format, 'journal-export/1')
  assert.equal(doc.user.id, w.me.id)
  assert.equal(doc.profile.full_name, 'Expo Rter')
  assert.equal(doc.notebooks.length, 1)
  assert.deepEqual(doc.entries.map((e: any) => e.title).sort(), ['Private thoughts', 'Team update'])
  const priv = doc.entries.find((e: any) => e.id === w.priv.id)
  assert.equal(priv.content, 'only mine')
  assert.equal(priv.mood, 'calm')
  assert.deepEqual(priv.tags, ['a', 'b'])
  assert.equal(priv.metadata_visibility, 'user')
  const shared = doc.entries.find((e: any) => e.id === w.shared.id)
  assert.equal(shared.content_visibility, 'team')
  assert.equal(shared.team_id, w.teamId)
  assert.equal(doc.goals.length, 1)
  assert.equal(doc.goal_check_ins[0].notes, 'done')
  assert.deepEqual(doc.organizations.map((o: any) => [o.id, o.role]), [[w.orgId, 'member']])
  assert.deepEqual(doc.teams.map((t: any) => [t.id, t.role]), [[w.teamId, 'member']])
  assert.ok(doc.drops.transactions.some((t: any) => t.type === 'signup_bonus'))
  assert.equal(doc.drops.balance, doc.profile.drops_balance)
  assert.deepEqual(doc.tone_packs.owned.map((p: any) => p.id), [w.pack.id, w.retired.id])
  assert.ok(doc.tone_packs.owned[1].retired_at, 'the retired pack, which RLS hides from its owner')
  assert.deepEqual(doc.workout.squads.map((q: any) => q.members), [[w.me.id, w.other.id]])
  assert.equal(doc.encouragement.sent.length, 1)
  assert.equal(doc.encouragement.sent[0].recipient_id, w.other.id)
  assert.equal(doc.workout.window.activity_type, 'cardio')
  assert.equal(doc.workout.location.city, 'Lisbon')
  assert.equal(doc.workout.checkins.length, 1)
  assert.equal(doc.music.plays[0].track.name, 'Song')
  const usage =
    await sql`select id::int, cost_usd::float8 as cost from public.ai_usage where user_id = ${w.me.id} order by id`
  assert.deepEqual(
    doc.ai_usage.calls.map((c: any) => [c.id, c.cost_usd]),
    usage.map((u) => [u.id, u.cost]),
    'every call with its cost',
  )
  assert.equal(doc.ai_usage.calls.find((c: any) => c.model === 'gpt-test')?.input_tokens, 100)
  assert.ok(doc.notifications.some((n: any) => n.payload.hello === 'me'))
  assert.deepEqual(doc.notification_settings.devices.map((d: any) => d.name), ['My phone'], 'my devices only')
  assert.ok(!('key_auth' in doc.notification_settings.devices[0]))
  assert.equal(doc.notification_settings.preferences.quiet_hours_start, '23:00:00')
  assert.equal(doc.notification_settings.preferences.daily_cap, 7)
  assert.ok(w.impersonated, 'the super admin started a session')
  assert.equal(doc.impersonation_sessions.length, 1)
  assert.equal(doc.impersonation_sessions[0].reason, 'support ticket 42')
  assert.ok(!('admin_id' in doc.impersonation_sessions[0]))

  // Media: every path in the document is a file of the archive, byte-equal to the stored object.
  const paths = doc.media.map((m: any) => m.path).sort()
  assert.deepEqual(
    paths,
    [
      `media/entry-backgrounds/${w.background}`,
      doc.tone_packs.owned[0].images[0].path,
      doc.tone_packs.owned[1].images[0].path,
      `media/workout-checkins/${w.photo}`,
    ].sort(),
  )
  assert.equal(priv.background_path, `media/entry-backgrounds/${w.background}`)
  assert.equal(doc.workout.checkins[0].photo_path, `media/workout-checkins/${w.photo}`)
  for (const m of doc.media) {
    const inZip = files.get(m.path)
    assert.ok(inZip, `${m.path} is in the archive`)
    assert.deepEqual(inZip, await storedBytes(m.bucket, m.object), `${m.path} equals the stored object`)
    assert.ok(readme.includes(m.path), `README names ${m.path}`)
  }
  assert.deepEqual(files.get(`media/entry-backgrounds/${w.background}`), w.backgroundBytes)
  assert.deepEqual(files.get(`media/workout-checkins/${w.photo}`), w.photoBytes)
})

test("export: another user's shared entry and private rows are not in it; a received drop shows its sender as the app does", async () => {
  const w = await theWorld()
  const files = await exportZip(w.me)
  const text = new TextDecoder().decode(files.get('export.json'))
  const doc = JSON.parse(text)
  assert.ok(
    !doc.entries.some((e: any) => e.id === w.othersShared.id),
    "the teammate's shared entry is not exported",
  )
  for (
    const secret of [
      'olive secret text',
      'Olive shares',
      'olive diary',
      'Olive private',
      'Olive goal',
      '"olive"',
    ]
  ) {
    assert.ok(!text.includes(secret), `${secret} does not appear`)
  }
  for (const path of files.keys()) assert.ok(!path.includes(w.other.id), `${path} is not the other user's`)

  // The received drop as GET /api/encouragement-drops/received shows it.
  const inbox = await api('/api/encouragement-drops/received', { token: w.me.token })
  const shown = inbox.body.drops.find((d: any) => d.id === w.received.id)
  const exported = doc.encouragement.received.find((d: any) => d.id === w.received.id)
  assert.ok(exported)
  assert.equal(exported.sender_name, 'Olive Other')
  assert.equal(exported.sender_name, shown.sender_name)
  assert.equal(exported.sender_avatar_url, shown.sender_avatar_url)
  assert.equal(exported.content, 'Keep going!')

  // The other user's own export holds their rows, not mine.
  const theirs = JSON.parse(new TextDecoder().decode((await exportZip(w.other)).get('export.json')))
  assert.ok(theirs.entries.some((e: any) => e.id === w.othersShared.id))
  assert.ok(!theirs.entries.some((e: any) => e.id === w.shared.id))
  assert.deepEqual(theirs.media, [])

  // A super admin reads every row under RLS; their export still holds only their own.
  const admins = JSON.parse(new TextDecoder().decode((await exportZip(w.admin)).get('export.json')))
  assert.deepEqual(admins.entries, [])
  assert.deepEqual(admins.goals, [])
  assert.deepEqual(admins.notifications, [])
  assert.deepEqual(admins.drops.transactions.map((t: any) => t.type), ['signup_bonus'])
  assert.deepEqual(admins.impersonation_sessions, [], 'sessions the admin ran are not sessions of the admin')
})

test("export: ?format=json is the ZIP's export.json, and validates against the documented schema", async () => {
  const w = await theWorld()
  const files = await exportZip(w.me)
  const fromZip = JSON.parse(new TextDecoder().decode(files.get('export.json')))
  const res = await api('/api/user/export?format=json', { token: w.me.token }) // contract-checked by api()
  assert.equal(res.status, 200)
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/)
  const strip = (d: any) => ({ ...d, exported_at: undefined })
  assert.deepEqual(strip(res.body), strip(fromZip))

  // The documented schema, resolved from the OpenAPI document.
  const spec = await (await fetch(`${API_URL}/functions/v1/api/openapi.json`)).json()
  const op = spec.paths['/api/user/export'].get
  assert.deepEqual(Object.keys(op.responses[200].content).sort(), ['application/json', 'application/octet-stream'])
  const schema = JSON.parse(
    JSON.stringify(op.responses[200].content['application/json'].schema).replaceAll(
      '#/components/schemas/',
      '#/$defs/',
    ),
  )
  const defs = JSON.parse(
    JSON.stringify(spec.components.schemas).replaceAll('#/components/schemas/', '#/$defs/'),
  )
  const result = new Validator({ ...schema, $defs: defs }, '2020-12', false).validate(fromZip)
  assert.ok(result.valid, JSON.stringify(result.errors.slice(0, 5)))
})

test('export: anonymous and bad format are refused', async () => {
  assertError(await api('/api/user/export'), 401)
  assertError(await api('/api/user/export?format=json'), 401)
  const u = await createUser()
  assertError(await api('/api/user/export?format=csv', { token: u.token }), 400, 'format')
})

test('export: a user with nothing but a profile gets every section, empty', async () => {
  const u = await createUser()
  const res = await api('/api/user/export?format=json', { token: u.token })
  assert.equal(res.status, 200)
  assert.deepEqual(res.body.entries, [])
  assert.deepEqual(res.body.media, [])
  assert.equal(res.body.workout.window, null)
  assert.deepEqual(res.body.impersonation_sessions, [])
})
