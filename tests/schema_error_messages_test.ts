// Direct writes through PostgREST are refused in /api's words: for every table a signed-in
// client may insert into or update (supabase-js as the client), a bad value is answered with
// "field: message" (23514, or 23502 for a missing value), never a constraint's name; nothing
// refused is written; where /api validates the same field, it answers the same words. The
// rules: each table's BEFORE trigger (supabase/schemas, "Field rules in words" in
// conventions.sql). The journal tables have their own matrix (journal_rest_parity_test.ts).
import { strict as assert } from 'node:assert'
import { api, avatarUrl, clientAs, createUser, orgWith, sql, teamWith, test, type TestUser } from './_helpers.ts'

type Row = Record<string, unknown>
interface Case {
  table: string
  /** insert this row, or update the row `match` picks with it */
  write: Row
  match?: Row
  message: string
  code?: '23514' | '23502'
  /** who writes: the user (default) or a super admin */
  as?: 'admin'
  /** /api's route for the same value, when it has one: it must answer the same words */
  api?: { method: 'POST' | 'PUT'; path: string; body: Row }
}

const long = (n: number) => 'x'.repeat(n)

async function world() {
  const user = await createUser({ prefix: 'writer' })
  const admin = await createUser({ prefix: 'admin', superAdmin: true })
  const member = await createUser({ prefix: 'member' })
  const orgId = await orgWith(user, [member])
  const teamId = await teamWith(orgId, user, [member])
  const [goal] =
    await sql`insert into public.goals (user_id, title) values (${user.id}, 'a goal') returning id`
  const [pack] =
    await sql`insert into public.tone_packs (owner_id, name, theme) values (${user.id}, 'a pack', 'nature') returning id`
  const [experiment] = await sql`insert into public.labs_experiments (owner_id, title, calculator)
    values (${user.id}, 'an experiment', 'coil') returning id`
  await sql`insert into public.workout_windows (user_id, activity_type, window_start_time, window_end_time, timezone)
    values (${user.id}, 'cardio', '06:00', '08:00', 'UTC')`
  await sql`insert into public.workout_locations (user_id, city) values (${user.id}, 'Paris')`
  const [device] = await sql`insert into public.notification_devices (user_id, kind, address)
    values (${user.id}, 'expo', ${`ExponentPushToken[errors-${crypto.randomUUID()}]`}) returning id`
  return {
    user,
    admin,
    member,
    orgId,
    teamId,
    goalId: goal.id as string,
    packId: pack.id as string,
    experimentId: experiment.id as string,
    deviceId: device.id as string,
  }
}

function cases(w: Awaited<ReturnType<typeof world>>): Case[] {
  const me = { id: w.user.id }
  const mine = { user_id: w.user.id }
  return [
    // goals, goal_check_ins
    {
      table: 'goals',
      write: { title: '   ' },
      message: 'title: must not be empty',
      api: { method: 'POST', path: '/api/goals', body: { title: '   ' } },
    },
    {
      table: 'goals',
      write: { title: long(201) },
      message: 'title: must be at most 200 characters',
      api: { method: 'POST', path: '/api/goals', body: { title: long(201) } },
    },
    {
      table: 'goals',
      write: { description: 'd' },
      message: 'title: is required',
      code: '23502',
      api: { method: 'POST', path: '/api/goals', body: { description: 'd' } },
    },
    {
      table: 'goals',
      write: { title: 't', description: long(5001) },
      message: 'description: must be at most 5000 characters',
    },
    { table: 'goals', write: { status: '' }, match: { id: w.goalId }, message: 'status: must not be empty' },
    {
      table: 'goals',
      write: { status: long(31) },
      match: { id: w.goalId },
      message: 'status: must be at most 30 characters',
    },
    {
      table: 'goals',
      write: { description: null },
      match: { id: w.goalId },
      message: 'description: is required',
      code: '23502',
    },
    {
      table: 'goal_check_ins',
      write: { goal_id: w.goalId, notes: long(5001) },
      message: 'notes: must be at most 5000 characters',
      api: { method: 'POST', path: `/api/goals/${w.goalId}/check-ins`, body: { notes: long(5001) } },
    },
    {
      table: 'goal_check_ins',
      write: { goal_id: w.goalId, status: long(31) },
      message: 'status: must be at most 30 characters',
      api: { method: 'POST', path: `/api/goals/${w.goalId}/check-ins`, body: { status: long(31) } },
    },
    { table: 'goal_check_ins', write: { notes: 'n' }, message: 'goal_id: is required', code: '23502' },
    // organizations, teams and their members
    {
      table: 'organizations',
      write: { name: ' ', owner_id: w.user.id },
      message: 'name: must not be empty',
      api: { method: 'POST', path: '/api/organizations', body: { name: ' ' } },
    },
    {
      table: 'organizations',
      write: { name: long(201), owner_id: w.user.id },
      message: 'name: must be at most 200 characters',
      api: { method: 'POST', path: '/api/organizations', body: { name: long(201) } },
    },
    {
      table: 'organizations',
      write: { name: 'o', owner_id: w.user.id, description: long(2001) },
      message: 'description: must be at most 2000 characters',
      api: { method: 'POST', path: '/api/organizations', body: { name: 'o', description: long(2001) } },
    },
    {
      table: 'organizations',
      write: { settings: [1] },
      match: { id: w.orgId },
      message: 'settings: must be an object',
    },
    {
      table: 'organizations',
      write: { settings: { blob: long(20000) } },
      match: { id: w.orgId },
      message: 'settings: must be at most 16384 bytes',
    },
    { table: 'organizations', write: { name: 'o' }, message: 'owner_id: is required', code: '23502' },
    {
      table: 'teams',
      write: { name: '', org_id: w.orgId, admin_id: w.user.id },
      message: 'name: must not be empty',
      api: { method: 'POST', path: '/api/teams', body: { name: '', org_id: w.orgId } },
    },
    {
      table: 'teams',
      write: { description: long(2001) },
      match: { id: w.teamId },
      message: 'description: must be at most 2000 characters',
      api: { method: 'PUT', path: `/api/teams/${w.teamId}`, body: { description: long(2001) } },
    },
    {
      table: 'teams',
      write: { settings: 'on' },
      match: { id: w.teamId },
      message: 'settings: must be an object',
    },
    {
      table: 'teams',
      write: { name: 't', org_id: w.orgId },
      message: 'admin_id: is required',
      code: '23502',
    },
    {
      table: 'organization_members',
      write: { role: 'boss' },
      match: { org_id: w.orgId, user_id: w.member.id },
      message: 'role: must be one of owner, admin, member',
    },
    {
      table: 'organization_members',
      write: { org_id: w.orgId, user_id: w.admin.id, role: 'guest' },
      message: 'role: must be one of owner, admin, member',
      api: {
        method: 'POST',
        path: `/api/organizations/${w.orgId}/members`,
        body: { user_id: w.admin.id, role: 'guest' },
      },
    },
    {
      table: 'team_members',
      write: { role: 'owner' },
      match: { team_id: w.teamId, user_id: w.member.id },
      message: 'role: must be one of admin, member',
      api: { method: 'PUT', path: `/api/teams/${w.teamId}/members/${w.member.id}`, body: { role: 'owner' } },
    },
    {
      table: 'team_members',
      write: { team_id: w.teamId, user_id: w.member.id },
      message: 'role: is required',
      code: '23502',
    },
    // profiles
    {
      table: 'profiles',
      write: { full_name: long(201) },
      match: me,
      message: 'full_name: must be at most 200 characters',
      api: { method: 'PUT', path: '/api/user/profile', body: { full_name: long(201) } },
    },
    {
      table: 'profiles',
      write: { avatar_url: 'javascript:alert(1)' },
      match: me,
      message: 'avatar_url: must be a URL',
      api: { method: 'PUT', path: '/api/user/profile', body: { avatar_url: 'javascript:alert(1)' } },
    },
    {
      table: 'profiles',
      write: { avatar_url: `https://e.com/${long(2040)}` },
      match: me,
      message: 'avatar_url: must be at most 2048 characters',
      api: { method: 'PUT', path: '/api/user/profile', body: { avatar_url: `https://e.com/${long(2040)}` } },
    },
    {
      table: 'profiles',
      write: { preferences: { theme: 'dark', injected: 1 } },
      match: me,
      message: 'preferences.injected: not an accepted field',
      api: {
        method: 'PUT',
        path: '/api/user/profile',
        body: { preferences: { theme: 'dark', injected: 1 } },
      },
    },
    {
      table: 'profiles',
      write: { preferences: { theme: '' } },
      match: me,
      message: 'preferences.theme: must not be empty',
      api: { method: 'PUT', path: '/api/user/profile', body: { preferences: { theme: '' } } },
    },
    {
      table: 'profiles',
      write: { preferences: { theme: long(51) } },
      match: me,
      message: 'preferences.theme: must be at most 50 characters',
      api: { method: 'PUT', path: '/api/user/profile', body: { preferences: { theme: long(51) } } },
    },
    {
      table: 'profiles',
      write: { preferences: { theme: 3 } },
      match: me,
      message: 'preferences.theme: must be a string',
      api: { method: 'PUT', path: '/api/user/profile', body: { preferences: { theme: 3 } } },
    },
    {
      table: 'profiles',
      write: { preferences: { notifications: 'yes' } },
      match: me,
      message: 'preferences.notifications: must be a boolean',
      api: { method: 'PUT', path: '/api/user/profile', body: { preferences: { notifications: 'yes' } } },
    },
    {
      table: 'profiles',
      write: { preferences: { active_tone_pack_id: 'not-a-uuid' } },
      match: me,
      message: 'preferences.active_tone_pack_id: must be a UUID',
      api: {
        method: 'PUT',
        path: '/api/user/profile',
        body: { preferences: { active_tone_pack_id: 'not-a-uuid' } },
      },
    },
    { table: 'profiles', write: { preferences: [] }, match: me, message: 'preferences: must be an object' },
    {
      table: 'profiles',
      write: { preferences: null },
      match: me,
      message: 'preferences: is required',
      code: '23502',
    },
    {
      table: 'profiles',
      write: { role: 'root' },
      match: { id: w.admin.id },
      as: 'admin',
      message: 'role: must be one of user, super_admin',
    },
    {
      table: 'profiles',
      write: { read_notes_enabled: null },
      match: me,
      message: 'read_notes_enabled: is required',
      code: '23502',
    },
    // tone packs
    {
      table: 'tone_packs',
      write: { name: ' ', theme: 'nature' },
      message: 'name: must not be empty',
      api: { method: 'POST', path: '/api/tone-packs', body: { name: ' ', theme: 'nature', price_drops: 0 } },
    },
    {
      table: 'tone_packs',
      write: { name: long(101), theme: 'nature' },
      message: 'name: must be at most 100 characters',
      api: {
        method: 'POST',
        path: '/api/tone-packs',
        body: { name: long(101), theme: 'nature', price_drops: 0 },
      },
    },
    {
      table: 'tone_packs',
      write: { name: 'p', theme: 'neon' },
      message:
        'theme: must be one of origami, animals, nature, abstract, geometric, minimalist, watercolor, line-art, icons, emojis, shapes, patterns',
      api: { method: 'POST', path: '/api/tone-packs', body: { name: 'p', theme: 'neon', price_drops: 0 } },
    },
    { table: 'tone_packs', write: { name: 'p' }, message: 'theme: is required', code: '23502' },
    {
      table: 'tone_packs',
      write: { description: long(1001) },
      match: { id: w.packId },
      message: 'description: must be at most 1000 characters',
      api: { method: 'PUT', path: `/api/tone-packs/${w.packId}`, body: { description: long(1001) } },
    },
    {
      table: 'tone_packs',
      write: { price_drops: -1 },
      match: { id: w.packId },
      message: 'price_drops: must be at least 0',
      api: { method: 'PUT', path: `/api/tone-packs/${w.packId}`, body: { price_drops: -1 } },
    },
    {
      table: 'tone_packs',
      write: { price_drops: 1000001 },
      match: { id: w.packId },
      message: 'price_drops: must be at most 1000000',
      api: { method: 'PUT', path: `/api/tone-packs/${w.packId}`, body: { price_drops: 1000001 } },
    },
    // encouragement templates (super admins)
    {
      table: 'encouragement_templates',
      as: 'admin',
      write: { type: 'cheer', title: 't', content: 'c' },
      message: 'type: must be one of encouragement, media, science_tidbit',
    },
    {
      table: 'encouragement_templates',
      as: 'admin',
      write: { type: 'encouragement', title: long(201), content: 'c' },
      message: 'title: must be at most 200 characters',
      api: {
        method: 'POST',
        path: '/api/encouragement-drops/admin/templates',
        body: {
          type: 'encouragement',
          title: long(201),
          content: 'c',
          media_type: null,
          thumbnail_url: null,
        },
      },
    },
    {
      table: 'encouragement_templates',
      as: 'admin',
      write: { type: 'encouragement', title: 't', content: ' ' },
      message: 'content: must not be empty',
      api: {
        method: 'POST',
        path: '/api/encouragement-drops/admin/templates',
        body: { type: 'encouragement', title: 't', content: ' ', media_type: null, thumbnail_url: null },
      },
    },
    {
      table: 'encouragement_templates',
      as: 'admin',
      write: { type: 'media', title: 't', content: 'c' },
      message: 'media_type: required for media templates',
      api: {
        method: 'POST',
        path: '/api/encouragement-drops/admin/templates',
        body: { type: 'media', title: 't', content: 'c', media_type: null, thumbnail_url: null },
      },
    },
    {
      table: 'encouragement_templates',
      as: 'admin',
      write: { type: 'encouragement', title: 't', content: 'c', media_type: 'image' },
      message: 'media_type: only for media templates',
      api: {
        method: 'POST',
        path: '/api/encouragement-drops/admin/templates',
        body: { type: 'encouragement', title: 't', content: 'c', media_type: 'image', thumbnail_url: null },
      },
    },
    {
      table: 'encouragement_templates',
      as: 'admin',
      write: { type: 'encouragement', title: 't', content: 'c', thumbnail_url: 'https://e.com/t.png' },
      message: 'thumbnail_url: only for media templates',
      api: {
        method: 'POST',
        path: '/api/encouragement-drops/admin/templates',
        body: {
          type: 'encouragement',
          title: 't',
          content: 'c',
          media_type: null,
          thumbnail_url: 'https://e.com/t.png',
        },
      },
    },
    {
      table: 'encouragement_templates',
      as: 'admin',
      write: { type: 'media', title: 't', content: 'c', media_type: 'gif' },
      message: 'media_type: must be one of image, video, audio, link',
    },
    {
      table: 'encouragement_templates',
      as: 'admin',
      write: {
        type: 'media',
        title: 't',
        content: 'c',
        media_type: 'image',
        thumbnail_url: 'ftp://e.com/t.png',
      },
      message: 'thumbnail_url: must be a URL',
    },
    // AI prices and token rates (super admins)
    {
      table: 'ai_prices',
      as: 'admin',
      write: { model: '', unit: 'image_hd', usd_per_unit: 1 },
      message: 'model: must not be empty',
    },
    {
      table: 'ai_prices',
      as: 'admin',
      write: { model: 'm', unit: 'per_call', usd_per_unit: 1 },
      message: 'unit: must be one of input_1m_tokens, output_1m_tokens, image_standard, image_hd',
    },
    {
      table: 'ai_prices',
      as: 'admin',
      write: { model: 'm', unit: 'image_hd', usd_per_unit: -0.5 },
      message: 'usd_per_unit: must be at least 0',
    },
    {
      table: 'ai_prices',
      as: 'admin',
      write: { model: 'm', unit: 'image_hd' },
      message: 'usd_per_unit: is required',
      code: '23502',
    },
    {
      table: 'token_conversion_rates',
      as: 'admin',
      write: { tokens_per_drop: 0 },
      message: 'tokens_per_drop: must be at least 0.0001',
      api: { method: 'POST', path: '/api/admin/conversion/rates', body: { tokens_per_drop: 0 } },
    },
    // workout window and location
    {
      table: 'workout_windows',
      write: { activity_type: 'swimming' },
      match: mine,
      message: 'activity_type: must be one of cardio, strength, walk, meditation, reading, homework, other',
    },
    {
      table: 'workout_windows',
      write: { custom_activity: 'rowing' },
      match: mine,
      message: 'custom_activity: only with activity_type other',
    },
    {
      table: 'workout_windows',
      write: { activity_type: 'other', custom_activity: long(101) },
      match: mine,
      message: 'custom_activity: must be at most 100 characters',
    },
    {
      table: 'workout_windows',
      write: { window_end_time: '09:00' },
      match: mine,
      message: 'window_end_time: must be exactly 2 hours after window_start_time',
    },
    {
      table: 'workout_windows',
      write: { timezone: long(51) },
      match: mine,
      message: 'timezone: must be at most 50 characters',
    },
    {
      table: 'workout_locations',
      write: { latitude: 91 },
      match: mine,
      message: 'latitude: must be at most 90',
    },
    {
      table: 'workout_locations',
      write: { longitude: -181 },
      match: mine,
      message: 'longitude: must be at least -180',
    },
    { table: 'workout_locations', write: { city: '' }, match: mine, message: 'city: must not be empty' },
    {
      table: 'workout_locations',
      write: { region: long(101) },
      match: mine,
      message: 'region: must be at most 100 characters',
    },
    {
      table: 'workout_locations',
      write: { country: 'fra' },
      match: mine,
      message: 'country: must be a two-letter country code (upper case)',
    },
    // labs experiments
    {
      table: 'labs_experiments',
      write: { title: '', calculator: 'coil' },
      message: 'title: must not be empty',
    },
    {
      table: 'labs_experiments',
      write: { title: long(201) },
      match: { id: w.experimentId },
      message: 'title: must be at most 200 characters',
    },
    {
      table: 'labs_experiments',
      write: { title: 't', calculator: 'toaster' },
      message: 'calculator: must be one of resonance, coil, impedance, electrolysis, pulsed_dc, plasma',
    },
    { table: 'labs_experiments', write: { title: 't' }, message: 'calculator: is required', code: '23502' },
    // notification devices and preferences
    {
      table: 'notification_devices',
      write: { kind: 'sms', address: 'x' },
      message: 'kind: must be one of expo, web_push',
    },
    {
      table: 'notification_devices',
      write: { kind: 'expo', address: 'abc' },
      message: 'address: must be an Expo push token (ExponentPushToken[...])',
    },
    {
      table: 'notification_devices',
      write: { kind: 'web_push', address: 'ftp://push.example/x', key_p256dh: long(87), key_auth: long(22) },
      message: "address: must be an https URL (the subscription's endpoint)",
    },
    {
      table: 'notification_devices',
      write: { kind: 'web_push', address: 'https://push.example/x' },
      message: 'key_p256dh: is required',
      code: '23502',
    },
    {
      table: 'notification_devices',
      write: { kind: 'web_push', address: 'https://push.example/x', key_p256dh: 'short', key_auth: long(22) },
      message: "key_p256dh: must be the subscription's p256dh key (base64url)",
    },
    {
      table: 'notification_devices',
      write: { name: long(101) },
      match: { id: w.deviceId },
      message: 'name: must be at most 100 characters',
    },
    {
      table: 'notification_preferences',
      write: { daily_cap: 0 },
      match: mine,
      message: 'daily_cap: must be at least 1',
    },
    {
      table: 'notification_preferences',
      write: { digest_hour: 24 },
      match: mine,
      message: 'digest_hour: must be at most 23',
    },
    {
      table: 'notification_preferences',
      write: { types: { bad: { push: false } } },
      match: mine,
      message: 'types: "bad" is not a notification type (area.event)',
    },
    {
      table: 'notification_preferences',
      write: { types: { 'workout.battle_update': { push: 'no' } } },
      match: mine,
      message: 'types.workout.battle_update.push: must be a boolean',
    },
    {
      table: 'notification_preferences',
      write: { types: { 'workout.battle_update': { sms: true } } },
      match: mine,
      message: 'types.workout.battle_update channel: must be one of push, email',
    },
    {
      table: 'notification_preferences',
      write: { quiet_hours_start: null },
      match: mine,
      message: 'quiet_hours_end: quiet hours need both a start and an end (or neither)',
    },
    {
      table: 'notification_preferences',
      write: { timezone: 'Mars/Olympus' },
      match: mine,
      message: 'timezone: must be an IANA time zone name (e.g. Europe/Paris)',
    },
    {
      table: 'notification_preferences',
      write: { push_enabled: null },
      match: mine,
      message: 'push_enabled: is required',
      code: '23502',
    },
  ]
}

const tokenOf = (w: { user: TestUser; admin: TestUser }, c: Case) =>
  (c.as === 'admin' ? w.admin : w.user).token

test('direct writes to every client-writable table are refused in words, naming the field as /api does', async () => {
  const w = await world()
  const before = await sql`select
    (select count(*) from public.goals where user_id = ${w.user.id})::int as goals,
    (select count(*) from public.tone_packs where owner_id = ${w.user.id})::int as packs,
    (select count(*) from public.organizations where owner_id = ${w.user.id})::int as orgs,
    (select count(*) from public.encouragement_templates where created_by = ${w.admin.id})::int as templates`
  const all = cases(w)
  const failures: string[] = []
  for (const c of all) {
    const db = clientAs(tokenOf(w, c)).from(c.table)
    let query = c.match ? db.update(c.write) : db.insert(c.write)
    for (const [k, v] of Object.entries(c.match ?? {})) query = query.eq(k, v as string)
    const { error, status } = await query
    const what = `${c.table} ${c.match ? 'update' : 'insert'} ${JSON.stringify(c.write).slice(0, 80)}`
    if (error?.message !== c.message || error?.code !== (c.code ?? '23514') || status !== 400) {
      failures.push(
        `${what}: ${status} ${error?.code} ${JSON.stringify(error?.message)}, want ${
          JSON.stringify(c.message)
        }`,
      )
    }
    if (c.api) {
      const res = await api(c.api.path, { method: c.api.method, token: tokenOf(w, c), body: c.api.body })
      if (res.status !== 400 || res.body?.error !== c.message) {
        failures.push(
          `${c.api.method} ${c.api.path} for ${what}: ${res.status} ${
            JSON.stringify(res.body?.error)
          }, want ${JSON.stringify(c.message)}`,
        )
      }
    }
  }
  assert.deepEqual(failures, [])
  assert.ok(all.length >= 60, 'the matrix covers every client-writable table')
  const tables = new Set(all.map((c) => c.table))
  const [{ writable }] = await sql`select array_agg(distinct c.relname order by c.relname) as writable
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
    join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
   where n.nspname = 'public' and c.relkind = 'r'
     and (has_column_privilege('authenticated', c.oid, a.attname, 'INSERT') or has_column_privilege('authenticated', c.oid, a.attname, 'UPDATE'))`
  // The journal tables: journal_rest_parity_test.ts. The kit waitlist: labs_kit_waitlist_test.ts
  // (its own trigger names the e-mail). notifications: only read_at, which has no rule to break.
  const elsewhere = [
    'journal_entries',
    'journal_entry_contents',
    'notebooks',
    'labs_kit_waitlist',
    'notifications',
  ]
  assert.deepEqual(
    (writable as string[]).filter((t) => !tables.has(t) && !elsewhere.includes(t)),
    [],
    'a client-writable table without cases',
  )
  const after = await sql`select
    (select count(*) from public.goals where user_id = ${w.user.id})::int as goals,
    (select count(*) from public.tone_packs where owner_id = ${w.user.id})::int as packs,
    (select count(*) from public.organizations where owner_id = ${w.user.id})::int as orgs,
    (select count(*) from public.encouragement_templates where created_by = ${w.admin.id})::int as templates`
  assert.deepEqual(after, before, 'nothing refused was written')
  const [row] = await sql`select title, status from public.goals where id = ${w.goalId}`
  assert.deepEqual({ ...row }, { title: 'a goal', status: 'active' }, 'a refused update changes nothing')
})

test('values within the rules still pass, at the limits', async () => {
  const w = await world()
  const db = clientAs(w.user.token)
  const goal = await db.from('goals').insert({
    title: ` ${long(200)} `,
    description: long(5000),
    status: long(30),
  }).select('id').single()
  assert.equal(goal.error, null)
  const pack = await db.from('tone_packs').insert({
    name: long(100),
    theme: 'line-art',
    price_drops: 1000000,
  }).select('id').single()
  assert.equal(pack.error, null)
  const profile = await db.from('profiles').update({
    full_name: long(200),
    avatar_url: avatarUrl(w.user.id, long(2048 - avatarUrl(w.user.id, '').length)), // the longest own avatar
    preferences: { theme: long(50), notifications: false, active_tone_pack_id: null },
  }).eq('id', w.user.id).select('full_name')
  assert.equal(profile.error, null)
  assert.equal(profile.data?.length, 1)
  const window = await db.from('workout_windows').update({
    activity_type: 'other',
    custom_activity: long(100),
    window_start_time: '23:00',
    window_end_time: '01:00',
  })
    .eq('user_id', w.user.id).select('window_end_time')
  assert.deepEqual(window.data, [{ window_end_time: '01:00:00' }])
  const location = await db.from('workout_locations').update({ latitude: -90, longitude: 180, country: 'FR' })
    .eq('user_id', w.user.id).select('country')
  assert.deepEqual(location.data, [{ country: 'FR' }])
})

test('RPCs name the field in words where a value would have broken a check constraint', async () => {
  const user = await createUser({ prefix: 'rpc' })
  const admin = await createUser({ prefix: 'rpc-admin', superAdmin: true })
  const opportunity = {
    kind: 'internship',
    title: 'Lab intern',
    contact_email: 'lab@example.com',
    contact_name: 'Ada',
  }
  const later = new Date(Date.now() + 86_400_000).toISOString()
  const sooner = new Date(Date.now() + 3_600_000).toISOString()
  const competition = {
    slug: `c-${crypto.randomUUID().slice(0, 8)}`,
    title: 'Cup',
    starts_at: later,
    ends_at: sooner,
  }
  const cases: [string, string, Row, TestUser, string, Case['api']?][] = [
    [
      'admin_adjust_drops',
      'reason',
      { target_user_id: user.id, delta: 5, reason: long(1001) },
      admin,
      'reason: must be at most 1000 characters',
    ],
    [
      'admin_adjust_drops',
      'source',
      { target_user_id: user.id, delta: 5, reason: 'r', source: long(101) },
      admin,
      'source: must be at most 100 characters',
    ],
    [
      'labs_submit_opportunity',
      'description',
      { ...opportunity, description: long(4001), url: null },
      user,
      'description: must be at most 4000 characters',
      { method: 'POST', path: '/api/labs/opportunities', body: { ...opportunity, description: long(4001) } },
    ],
    [
      'labs_submit_opportunity',
      'url',
      { ...opportunity, description: '', url: `https://e.com/${long(2040)}` },
      user,
      'url: must be at most 2048 characters',
      {
        method: 'POST',
        path: '/api/labs/opportunities',
        body: { ...opportunity, url: `https://e.com/${long(2040)}` },
      },
    ],
    [
      'labs_create_competition',
      'ends_at',
      { ...competition, scoring_config: null },
      admin,
      'ends_at: must be after starts_at',
      { method: 'POST', path: '/api/labs/admin/competitions', body: competition },
    ],
  ]
  const failures: string[] = []
  for (const [fn, field, args, who, message, viaApi] of cases) {
    const { error, status } = await clientAs(who.token).rpc(fn, args)
    if (status !== 400 || error?.message !== message) {
      failures.push(
        `${fn} ${field}: ${status} ${JSON.stringify(error?.message)}, want ${JSON.stringify(message)}`,
      )
    }
    if (viaApi) {
      const res = await api(viaApi.path, { method: viaApi.method, token: who.token, body: viaApi.body })
      if (res.status !== 400 || res.body?.error !== message) {
        failures.push(
          `${viaApi.path}: ${res.status} ${JSON.stringify(res.body?.error)}, want ${JSON.stringify(message)}`,
        )
      }
    }
  }
  assert.deepEqual(failures, [])
  const [{ n }] =
    await sql`select count(*)::int as n from public.drops_transactions where user_id = ${user.id} and type = 'admin_adjustment'`
  assert.equal(n, 0, 'nothing refused was written')
})
