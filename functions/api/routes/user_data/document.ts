// The export's document as text pieces, section by section: small sections read at once, large
// ones in keyset pages written before the next page is read. Every section is read as the
// caller (RLS decides) and filtered to the caller's own rows.
import type { Db } from '../../../_shared/db.ts'
import { unwrap } from '../../../_shared/errors.ts'
import { PROFILE_COLUMNS } from '../profile.ts'
import { EXPORT_FORMAT } from './schema.ts'
import { all, jsonArray, type Media, mediaPath, pagedRows, type Part, sectionReaders } from './readers.ts'

/** A part as JSON: a string as it is, a function awaited and serialized, rows as an array. */
async function* partJson(part: Part): AsyncGenerator<string> {
  if (typeof part === 'string') yield part
  else if (typeof part === 'function') yield JSON.stringify(await part())
  else yield* jsonArray(part)
}

/** The document as text pieces, in the order of ExportDocument. `media` collects the files. */
export async function* exportDocument(
  db: Db,
  me: { id: string; email: string | null },
  media: Media[],
): AsyncGenerator<string> {
  const own = { user_id: me.id }
  const addMedia = (
    bucket: string,
    object: string | null,
    kind: Media['kind'],
  ) => {
    if (!object) return null
    const path = mediaPath(bucket, object)
    media.push({ path, bucket, object, kind })
    return path
  }

  const profile = unwrap(
    await db.from('profiles').select(PROFILE_COLUMNS).eq('id', me.id).single(),
  )

  const read = sectionReaders(db, me, addMedia)

  // The document, key by key. Strings are written as they are, functions awaited and
  // serialized, async iterables written as arrays row by row.
  const parts: [string, Part][] = [
    ['format', JSON.stringify(EXPORT_FORMAT)],
    ['exported_at', JSON.stringify(new Date().toISOString())],
    ['user', JSON.stringify(me)],
    ['profile', JSON.stringify({ ...profile, email: me.email })],
    [
      'notebooks',
      () =>
        all(
          db,
          'notebooks',
          'id, name, metadata_visibility, content_visibility, team_id, org_id, created_at, updated_at',
          own,
          'created_at',
        ),
    ],
    ['entries', read.entries()],
    [
      'goals',
      () =>
        all(
          db,
          'goals',
          'id, title, description, status, target_date, created_at, updated_at',
          own,
          'created_at',
        ),
    ],
    [
      'goal_check_ins',
      pagedRows(
        db,
        'goal_check_ins',
        'id, goal_id, status, notes, created_at',
        own,
        'id',
      ),
    ],
    ['organizations', read.organizations],
    ['teams', read.teams],
  ]
  yield '{'
  let first = true
  const write = async function* (key: string, part: Part) {
    yield `${first ? '\n' : ',\n'}${JSON.stringify(key)}: `
    first = false
    yield* partJson(part)
  }
  /** A nested object whose members are parts too. */
  const object = async function* (key: string, members: [string, Part][]) {
    yield `${first ? '\n' : ',\n'}${JSON.stringify(key)}: {`
    first = false
    let inner = true
    for (const [k, part] of members) {
      yield `${inner ? '' : ', '}${JSON.stringify(k)}: `
      inner = false
      yield* partJson(part)
    }
    yield '}'
  }
  for (const [k, p] of parts) yield* write(k, p)
  yield* object('drops', [
    ['balance', JSON.stringify(profile.drops_balance)],
    [
      'transactions',
      pagedRows(
        db,
        'drops_transactions',
        'id, type, amount, reason, description, source, item_type, item_id, created_at',
        own,
        'id',
      ),
    ],
    [
      'monthly_awards',
      () =>
        all(
          db,
          'monthly_drop_awards',
          'award_month, amount, created_at',
          own,
          'award_month',
        ),
    ],
  ])
  yield* write(
    'subscriptions',
    () =>
      all(
        db,
        'subscriptions',
        'id, status, current_period_end, cancel_at_period_end, last_payment_failed_at, created_at, updated_at',
        own,
        'created_at',
      ),
  )
  yield* write('tone_packs', read.tonePacks)
  yield* object('encouragement', [
    [
      'sent',
      pagedRows(
        db,
        'encouragement_sent_drops',
        'id, recipient_id, drop_type, template_id, content, entry_id, is_custom, date_sent, bonus_drops_awarded',
        { sender_id: me.id },
        'id',
      ),
    ],
    ['received', read.received()],
    [
      'daily',
      () =>
        all(
          db,
          'encouragement_daily_drops',
          'day, daily_allowance, drops_used, custom_used, bonus_earned, total_available',
          own,
          'day',
        ),
    ],
    [
      'badge',
      () =>
        read.one(
          'encouragement_badges',
          'level, total_sent, success_rate, consecutive_days, engagement_increases, bonus_earned, progress_to_next, last_sent_day, updated_at',
        ),
    ],
    [
      'milestones',
      () =>
        all(
          db,
          'encouragement_badge_milestones',
          'level, achieved_at, stats',
          own,
          'achieved_at',
        ),
    ],
    [
      'note_analyses',
      () =>
        all(
          db,
          'note_analyses',
          'id, analysis_date, entry_count, summary, mood_trends, topics, patterns, insights, recommendations, created_at',
          own,
          'created_at',
        ),
    ],
  ])
  yield* object('workout', [
    [
      'window',
      () =>
        read.one(
          'workout_windows',
          'activity_type, custom_activity, window_start_time, window_end_time, timezone, is_active, created_at, updated_at',
        ),
    ],
    [
      'location',
      () =>
        read.one(
          'workout_locations',
          'city, region, country, latitude, longitude, timezone, ip_address, last_updated',
        ),
    ],
    ['checkins', read.checkins()],
    ['squads', read.squads()],
    [
      'chains',
      pagedRows(
        db,
        'workout_chains',
        'id, date, team_color, squad_id, before_user_id, after_user_id, created_at',
        own,
        'id',
      ),
    ],
  ])
  yield* object('music', [
    [
      'connection',
      () =>
        read.one(
          'music_connections',
          'music_user_id, scope, connected_at, last_synced_at, needs_reconnect, last_error',
        ),
    ],
    ['plays', read.plays()],
  ])
  yield* object('ai_usage', [
    [
      'calls',
      pagedRows(
        db,
        'ai_usage',
        'id, usage_type, model, input_tokens, output_tokens, image_count, image_quality, cost_usd, entry_id, pack_id, created_at',
        own,
        'id',
      ),
    ],
    [
      'monthly',
      () =>
        all(
          db,
          'ai_usage_monthly',
          'month, usage_type, calls, input_tokens, output_tokens, image_count, cost_usd',
          own,
          'month',
        ),
    ],
  ])
  yield* write(
    'notifications',
    pagedRows(
      db,
      'notifications',
      'id, type, payload, read_at, created_at',
      own,
      'id',
    ),
  )
  yield* object('notification_settings', [
    [
      'devices',
      () =>
        all(
          db,
          'notification_devices',
          'id, kind, address, name, created_at, registered_at, retired_at, retired_reason',
          own,
          'created_at',
        ),
    ],
    [
      'preferences',
      () =>
        read.one(
          'notification_preferences',
          'push_enabled, types, quiet_hours_start, quiet_hours_end, timezone, daily_cap, email_digest, digest_hour, updated_at',
        ),
    ],
  ])
  yield* write(
    'email_messages',
    () =>
      all(
        db,
        'email_messages',
        'id, to_address, subject, status, error, created_at, updated_at',
        own,
        'created_at',
      ),
  )
  yield* object('labs', [
    ['classroom_account', () => read.one('labs_classroom_accounts', 'created_at')],
    [
      'experiments',
      pagedRows(
        db,
        'labs_experiments',
        'id, title, calculator, inputs, predicted_values, safety_level, min_grade_band, is_public, is_template, cloned_from, completed_at, created_at',
        { owner_id: me.id },
        'id',
      ),
    ],
    [
      'replications',
      pagedRows(
        db,
        'labs_replications',
        'id, template_id, clone_id, predicted_value, measured_value, confirmed, created_at',
        own,
        'id',
      ),
    ],
    [
      'activity',
      pagedRows(
        db,
        'labs_activity_events',
        'id, kind, experiment_id, template_id, replication_id, created_at',
        own,
        'id',
      ),
    ],
    [
      'competitions',
      () =>
        all(
          db,
          'labs_competition_participants',
          'competition_id, score, joined_at',
          own,
          'joined_at',
        ),
    ],
    [
      'messages_sent',
      pagedRows(
        db,
        'labs_sponsor_messages',
        'id, sponsor_id, body, created_at',
        { sender_id: me.id },
        'id',
      ),
    ],
    ['submissions', async () => unwrap(await db.rpc('labs_my_submissions'))],
    [
      'replication_removals',
      async () => (await read.hidden()).labs_replication_removals,
    ],
    ['kit_waitlist', async () => (await read.hidden()).labs_kit_waitlist],
  ])
  yield* write(
    'impersonation_sessions',
    async () => (await read.hidden()).impersonation_sessions,
  )
  yield* write('role_changes', async () => (await read.hidden()).role_changes)
  yield* write(
    'avatars',
    async () =>
      ((await read.hidden()).avatar_objects as string[]).map((name) => addMedia('avatars', name, 'avatar')),
  )
  // Every media path above is known once the sections are written.
  yield* write('media', () => Promise.resolve(media))
  yield '\n}\n'
}
