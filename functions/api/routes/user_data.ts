// GET /api/user/export: everything the system holds about the caller (docs/user_data.md), as a
// ZIP (export.json, the caller's media under media/, README.txt) or as the JSON document alone.
// Both are streamed as they are produced: every large section is read in keyset pages and
// written before the next page is read, media objects are piped from Storage into the archive,
// so memory stays flat whatever the user's history (scripts/bench/user_export.ts measures it).
//
// Every section is read as the caller (c.var.db: RLS decides) and filtered to the caller's own
// rows, so another user's rows the caller may read (a teammate's shared entry) never appear;
// the rows only super admins may read that are about the caller come from
// export_own_hidden_rows (supabase/schemas/user_data.sql), which returns only the caller's.
import { z } from '@hono/zod-openapi'
import { configure, TextReader, ZipWriter } from '@zip.js/zip.js'
import { type Db, givenArgs } from '../../_shared/db.ts'
import { unwrap } from '../../_shared/errors.ts'
import { publicObjectUrl } from '../../_shared/storage.ts'
import { endpoint, routeModule } from '../openapi.ts'
import { Profile, PROFILE_COLUMNS } from './profile.ts'

configure({ useWebWorkers: false })

export const EXPORT_FORMAT = 'journal-export/1'
/** Rows per page of a paged section (PostgREST round trips vs. memory held per page). */
export const PAGE_SIZE = 500

// ---- The document's shape (the JSON form's schema in the OpenAPI document).

const s = z.string()
const sn = z.string().nullable()
const i = z.number().int()
const n = z.number()
const nn = z.number().nullable()
const b = z.boolean()
const bn = z.boolean().nullable()
const j = z.unknown()
const ids = z.array(z.string())

const MediaRef = sn.describe(
  'Path of the file inside the ZIP (media/<bucket>/<object>); null when there is none',
)

const Notebook = z.object({
  id: s,
  name: s,
  metadata_visibility: s,
  content_visibility: s,
  team_id: sn,
  org_id: sn,
  created_at: s,
  updated_at: s,
})
const ExportEntry = z.object({
  id: s,
  notebook_id: sn,
  title: s,
  content: sn,
  mood: sn,
  mood_detected: b,
  tags: ids,
  metadata_visibility: s,
  content_visibility: s,
  team_id: sn,
  org_id: sn,
  music_track_id: sn,
  track: z.object({ id: s, name: s, artists: ids, album: sn, external_url: sn }).nullable(),
  background_url: sn,
  background_path: MediaRef,
  created_at: s,
  updated_at: s,
}).openapi('ExportEntry')
const Goal = z.object({
  id: s,
  title: s,
  description: sn,
  status: s,
  target_date: sn,
  created_at: s,
  updated_at: s,
})
const GoalCheckIn = z.object({ id: s, goal_id: s, status: s, notes: sn, created_at: s })
const Membership = z.object({ id: s, name: s, role: s, joined_at: sn })
const TeamMembership = z.object({ id: s, org_id: s, name: s, role: s, joined_at: sn })
const DropsTransaction = z.object({
  id: i,
  type: s,
  amount: i,
  reason: sn,
  description: sn,
  source: sn,
  item_type: sn,
  item_id: sn,
  created_at: s,
})
const MonthlyAward = z.object({ award_month: s, amount: i, created_at: s })
const Subscription = z.object({
  id: s,
  status: s,
  current_period_end: sn,
  cancel_at_period_end: b,
  last_payment_failed_at: sn,
  created_at: s,
  updated_at: s,
})
const PackImage = z.object({ tone: s, url: s, path: MediaRef, updated_at: s })
const OwnedPack = z.object({
  id: s,
  name: s,
  description: s,
  theme: s,
  is_public: b,
  price_drops: i,
  retired_at: sn,
  created_at: s,
  updated_at: s,
  images: z.array(PackImage),
})
const Purchase = z.object({
  id: s,
  pack_id: s,
  pack_name: s,
  price_drops: i,
  created_at: s,
  images: z.array(z.object({ tone: s, url: s, updated_at: s })),
})
const Share = z.object({ pack_id: s, created_at: s })
const SentDrop = z.object({
  id: s,
  recipient_id: s,
  drop_type: s,
  template_id: sn,
  content: sn,
  entry_id: sn,
  is_custom: b,
  date_sent: s,
  bonus_drops_awarded: i,
})
const ReceivedDrop = z.object({
  id: s,
  sender_id: s,
  sender_name: sn,
  sender_avatar_url: sn,
  is_system: b,
  drop_type: s,
  content: sn,
  template_id: sn,
  entry_id: sn,
  date_sent: s,
  read_at: sn,
}).describe("As the app shows it: the sender's name and avatar as they are now")
const DailyDrops = z.object({
  day: s,
  daily_allowance: i,
  drops_used: i,
  custom_used: i,
  bonus_earned: i,
  total_available: i,
})
const Badge = z.object({
  level: i,
  total_sent: i,
  success_rate: n,
  consecutive_days: i,
  engagement_increases: i,
  bonus_earned: i,
  progress_to_next: n,
  last_sent_day: sn,
  updated_at: s,
})
const Milestone = z.object({ level: i, achieved_at: s, stats: j })
const NoteAnalysis = z.object({
  id: s,
  analysis_date: s,
  entry_count: i,
  summary: j,
  mood_trends: j,
  topics: j,
  patterns: j,
  insights: j,
  recommendations: j,
  created_at: s,
})
const WorkoutWindow = z.object({
  activity_type: s,
  custom_activity: sn,
  window_start_time: s,
  window_end_time: s,
  timezone: s,
  is_active: b,
  created_at: s,
  updated_at: s,
})
const WorkoutLocation = z.object({
  city: sn,
  region: sn,
  country: sn,
  latitude: nn,
  longitude: nn,
  timezone: sn,
  ip_address: sn,
  last_updated: s,
})
const Checkin = z.object({
  id: s,
  date: s,
  status: s,
  activity_type: sn,
  photo_url: sn,
  photo_object: sn,
  photo_path: MediaRef,
  photo_timestamp: sn,
  location_lat: nn,
  location_lng: nn,
  timezone: sn,
  chain_id: sn,
  chain_continued: bn,
  streak_days: z.number().int().nullable(),
  battle_chips_earned: z.number().int().nullable(),
  review_reason: sn,
  reviewed_at: sn,
  created_at: s,
})
const Squad = z.object({
  id: s,
  date: s,
  team_color: s,
  members: ids.describe("The squad's users (the caller among them)"),
  created_at: s,
})
const Chain = z.object({
  id: s,
  date: s,
  team_color: sn,
  squad_id: sn,
  before_user_id: sn,
  after_user_id: sn,
  created_at: s,
})
const MusicConnection = z.object({
  music_user_id: s,
  scope: sn,
  connected_at: s,
  last_synced_at: sn,
  needs_reconnect: b,
  last_error: sn,
})
const Play = z.object({
  played_at: s,
  track_id: s,
  source: sn,
  track: z.object({ name: s, artists: ids, album: sn }).nullable(),
})
const AiCall = z.object({
  id: i,
  usage_type: s,
  model: s,
  input_tokens: i,
  output_tokens: i,
  image_count: i,
  image_quality: sn,
  cost_usd: n,
  entry_id: sn,
  pack_id: sn,
  created_at: s,
})
const AiMonth = z.object({
  month: s,
  usage_type: s,
  calls: i,
  input_tokens: i,
  output_tokens: i,
  image_count: i,
  cost_usd: n,
})
const Notification = z.object({ id: s, type: s, payload: j, read_at: sn, created_at: s })
const EmailMessage = z.object({
  id: s,
  to_address: s,
  subject: s,
  status: s,
  error: sn,
  created_at: s,
  updated_at: s,
})
const Experiment = z.object({
  id: s,
  title: s,
  calculator: s,
  inputs: j,
  predicted_values: j,
  safety_level: s,
  min_grade_band: sn,
  is_public: b,
  is_template: b,
  cloned_from: sn,
  completed_at: sn,
  created_at: s,
})
const Replication = z.object({
  id: s,
  template_id: s,
  clone_id: s,
  predicted_value: nn,
  measured_value: nn,
  confirmed: bn,
  created_at: s,
})
const LabsEvent = z.object({
  id: i,
  kind: s,
  experiment_id: sn,
  template_id: sn,
  replication_id: sn,
  created_at: s,
})
const Participation = z.object({ competition_id: s, score: i, joined_at: s })
const SponsorMessage = z.object({ id: s, sponsor_id: s, body: s, created_at: s })
const ImpersonationSession = z.object({
  session_id: s,
  started_at: s,
  expires_at: sn,
  stopped_at: sn,
  reason: s,
  actions: z.array(z.object({ at: s, kind: s, table: sn, operation: s, row_id: sn })),
})
const MediaFile = z.object({
  path: s.describe('Path inside the ZIP'),
  bucket: s,
  object: s,
  kind: z.enum(['entry_background', 'checkin_photo', 'pack_image']),
})

export const ExportDocument = z.object({
  format: z.literal(EXPORT_FORMAT),
  exported_at: s,
  user: z.object({ id: s, email: sn }),
  profile: Profile,
  notebooks: z.array(Notebook),
  entries: z.array(ExportEntry).describe('Every entry the caller wrote, oldest first, with its text'),
  goals: z.array(Goal),
  goal_check_ins: z.array(GoalCheckIn),
  organizations: z.array(Membership).describe('Organizations the caller owns (role owner) or belongs to'),
  teams: z.array(TeamMembership).describe('Teams the caller administers (role admin) or belongs to'),
  drops: z.object({
    balance: i,
    transactions: z.array(DropsTransaction),
    monthly_awards: z.array(MonthlyAward),
  }),
  subscriptions: z.array(Subscription),
  tone_packs: z.object({
    owned: z.array(OwnedPack),
    purchases: z.array(Purchase),
    shared_with_me: z.array(Share),
  }),
  encouragement: z.object({
    sent: z.array(SentDrop),
    received: z.array(ReceivedDrop),
    daily: z.array(DailyDrops),
    badge: Badge.nullable(),
    milestones: z.array(Milestone),
    note_analyses: z.array(NoteAnalysis),
  }),
  workout: z.object({
    window: WorkoutWindow.nullable(),
    location: WorkoutLocation.nullable(),
    checkins: z.array(Checkin),
    squads: z.array(Squad),
    chains: z.array(Chain),
  }),
  music: z.object({ connection: MusicConnection.nullable(), plays: z.array(Play) }),
  ai_usage: z.object({ calls: z.array(AiCall), monthly: z.array(AiMonth) }),
  notifications: z.array(Notification),
  email_messages: z.array(EmailMessage),
  labs: z.object({
    classroom_account: z.object({ created_at: s }).nullable(),
    experiments: z.array(Experiment),
    replications: z.array(Replication),
    activity: z.array(LabsEvent),
    competitions: z.array(Participation),
    messages_sent: z.array(SponsorMessage),
    submissions: z.record(z.string(), z.array(z.record(z.string(), z.unknown()))),
    replication_removals: z.array(z.record(z.string(), z.unknown())),
    kit_waitlist: z.array(z.object({ email: s, created_at: s })),
  }),
  impersonation_sessions: z.array(ImpersonationSession).describe(
    'Support sessions in which a super admin acted as the caller',
  ),
  role_changes: z.array(z.object({ old_role: s, new_role: s, changed_via: s, created_at: s })),
  media: z.array(MediaFile).describe('The files of the ZIP form under media/, in archive order'),
}).openapi('UserExport')

// ---- Reading: small sections at once, large ones in keyset pages.

type Row = Record<string, any>
type Media = z.infer<typeof MediaFile>

/** Rows of one of the caller's tables, `key` ascending, PAGE_SIZE at a time. */
async function* pagedRows(
  db: Db,
  table: string,
  columns: string,
  owner: Record<string, string>,
  key: string,
) {
  let after: unknown = null
  for (;;) {
    // deno-lint-ignore no-explicit-any
    let q = (db as any).from(table).select(columns)
    for (const [col, v] of Object.entries(owner)) q = q.eq(col, v)
    if (after !== null) q = q.gt(key, after)
    const rows: Row[] = unwrap(await q.order(key).limit(PAGE_SIZE))
    yield* rows
    if (rows.length < PAGE_SIZE) return
    after = rows[rows.length - 1][key]
  }
}

async function all(
  db: Db,
  table: string,
  columns: string,
  owner: Record<string, string>,
  order?: string,
): Promise<Row[]> {
  // deno-lint-ignore no-explicit-any
  let q = (db as any).from(table).select(columns)
  for (const [col, v] of Object.entries(owner)) q = q.eq(col, v)
  if (order) q = q.order(order)
  return unwrap(await q)
}

const mediaPath = (bucket: string, object: string) => `media/${bucket}/${object}`

/** Pieces of JSON text: a value, or an array of rows written as they are read. */
type Part = string | AsyncIterable<Row> | (() => Promise<unknown>)

async function* jsonArray(rows: AsyncIterable<Row>) {
  yield '['
  let first = true
  for await (const row of rows) {
    yield (first ? '\n' : ',\n') + JSON.stringify(row)
    first = false
  }
  yield first ? ']' : '\n]'
}

/** The document as text pieces, in the order of ExportDocument. `media` collects the files. */
async function* exportDocument(
  db: Db,
  me: { id: string; email: string | null },
  media: Media[],
): AsyncGenerator<string> {
  const own = { user_id: me.id }
  const addMedia = (bucket: string, object: string | null, kind: Media['kind']) => {
    if (!object) return null
    const path = mediaPath(bucket, object)
    media.push({ path, bucket, object, kind })
    return path
  }

  const profile = unwrap(await db.from('profiles').select(PROFILE_COLUMNS).eq('id', me.id).single())

  async function* entries() {
    let after: { at: string; id: string } | null = null
    for (;;) {
      const page: Row[] = unwrap(
        await db.rpc(
          'export_journal_entries',
          givenArgs({ after_created_at: after?.at, after_id: after?.id, page_size: PAGE_SIZE }),
        ),
      )
      for (const e of page) {
        const { background_object, ...rest } = e
        yield {
          ...rest,
          background_path: addMedia('entry-backgrounds', background_object, 'entry_background'),
        }
      }
      if (page.length < PAGE_SIZE) return
      after = { at: page[page.length - 1].created_at, id: page[page.length - 1].id }
    }
  }

  async function organizations() {
    const owned = await all(db, 'organizations', 'id, name, created_at', { owner_id: me.id }, 'created_at')
    const member = await all(
      db,
      'organization_members',
      'org_id, role, joined_at, organizations(name)',
      own,
      'joined_at',
    )
    return [
      ...owned.map((o) => ({ id: o.id, name: o.name, role: 'owner', joined_at: o.created_at })),
      ...member.filter((m) => !owned.some((o) => o.id === m.org_id))
        .map((m) => ({
          id: m.org_id,
          name: m.organizations?.name ?? '',
          role: m.role,
          joined_at: m.joined_at,
        })),
    ]
  }

  async function teams() {
    const admin = await all(db, 'teams', 'id, org_id, name, created_at', { admin_id: me.id }, 'created_at')
    const member = await all(
      db,
      'team_members',
      'team_id, org_id, role, joined_at, teams(name)',
      own,
      'joined_at',
    )
    return [
      ...admin.map((t) => ({
        id: t.id,
        org_id: t.org_id,
        name: t.name,
        role: 'admin',
        joined_at: t.created_at,
      })),
      ...member.filter((m) => !admin.some((t) => t.id === m.team_id))
        .map((m) => ({
          id: m.team_id,
          org_id: m.org_id,
          name: m.teams?.name ?? '',
          role: m.role,
          joined_at: m.joined_at,
        })),
    ]
  }

  async function tonePacks() {
    const owned = await all(
      db,
      'tone_packs',
      'id, name, description, theme, is_public, price_drops, retired_at, created_at, updated_at, tone_pack_images(tone, url, object_name, updated_at)',
      { owner_id: me.id },
      'created_at',
    )
    const purchases = await all(
      db,
      'tone_pack_purchases',
      'id, pack_id, pack_name, price_drops, created_at, tone_pack_purchase_images(tone, url, updated_at)',
      own,
      'created_at',
    )
    const shared = await all(db, 'tone_pack_shares', 'pack_id, created_at', own, 'created_at')
    // Retired packs (kept for their buyers) only their buyers see under RLS.
    const retired = ((await hidden()).retired_tone_packs as Row[])
      .filter((r) => !owned.some((p) => p.id === r.id))
      .map(({ images, ...p }) => ({ ...p, tone_pack_images: images }))
    return {
      owned: [...owned, ...retired].map(({ tone_pack_images, ...p }) => ({
        ...p,
        images: (tone_pack_images as Row[]).map((im) => ({
          tone: im.tone,
          url: im.url,
          path: addMedia('tone-packs', im.object_name, 'pack_image'),
          updated_at: im.updated_at,
        })),
      })),
      purchases: purchases.map(({ tone_pack_purchase_images, ...p }) => ({
        ...p,
        images: tone_pack_purchase_images,
      })),
      shared_with_me: shared,
    }
  }

  async function* received() {
    let after: { at: string; id: string } | null = null
    for (;;) {
      const page: Row[] = unwrap(
        await db.rpc('received_encouragement_drops', {
          unread_only: false,
          before_date_sent: after?.at ?? null,
          before_id: after?.id ?? null,
          page_size: 100,
        }),
      )
      yield* page
      if (page.length < 100) return
      after = { at: page[page.length - 1].date_sent, id: page[page.length - 1].id }
    }
  }

  async function* checkins() {
    for await (
      const c of pagedRows(
        db,
        'workout_checkins',
        'id, date, status, activity_type, photo_url, photo_object, photo_timestamp, location_lat, location_lng, timezone, chain_id, chain_continued, streak_days, battle_chips_earned, review_reason, reviewed_at, created_at',
        own,
        'id',
      )
    ) {
      yield { ...c, photo_path: addMedia('workout-checkins', c.photo_object, 'checkin_photo') }
    }
  }

  async function* plays() {
    for await (
      const p of pagedRows(
        db,
        'music_plays',
        'played_at, track_id, source, music_tracks(name, artists, album)',
        own,
        'played_at',
      )
    ) {
      const { music_tracks, ...rest } = p
      yield { ...rest, track: music_tracks ?? null }
    }
  }

  // The caller's own rows RLS hides from them, read once when first needed.
  let hiddenRows: PromiseLike<Row> | undefined
  const hidden = () => (hiddenRows ??= db.rpc('export_own_hidden_rows').then((r) => unwrap(r) as Row))

  async function* squads() {
    let after: string | null = null
    for (;;) {
      let q = db.from('workout_squads').select(
        'id, date, team_color, user_1_id, user_2_id, user_3_id, created_at',
      )
        .or(`user_1_id.eq.${me.id},user_2_id.eq.${me.id},user_3_id.eq.${me.id}`)
      if (after !== null) q = q.gt('id', after)
      const page = unwrap(await q.order('id').limit(PAGE_SIZE))
      for (const { user_1_id, user_2_id, user_3_id, ...squad } of page) {
        yield { ...squad, members: [user_1_id, user_2_id, user_3_id].filter((u): u is string => u !== null) }
      }
      if (page.length < PAGE_SIZE) return
      after = page[page.length - 1].id
    }
  }

  const one = async (table: string, columns: string) => (await all(db, table, columns, own))[0] ?? null

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
    ['entries', entries()],
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
    ['goal_check_ins', pagedRows(db, 'goal_check_ins', 'id, goal_id, status, notes, created_at', own, 'id')],
    ['organizations', organizations],
    ['teams', teams],
  ]
  yield '{'
  let first = true
  const write = async function* (key: string, part: Part) {
    yield `${first ? '\n' : ',\n'}${JSON.stringify(key)}: `
    first = false
    if (typeof part === 'string') yield part
    else if (typeof part === 'function') yield JSON.stringify(await part())
    else yield* jsonArray(part)
  }
  /** A nested object whose members are parts too. */
  const object = async function* (key: string, members: [string, Part][]) {
    yield `${first ? '\n' : ',\n'}${JSON.stringify(key)}: {`
    first = false
    let inner = true
    for (const [k, part] of members) {
      yield `${inner ? '' : ', '}${JSON.stringify(k)}: `
      inner = false
      if (typeof part === 'string') yield part
      else if (typeof part === 'function') yield JSON.stringify(await part())
      else yield* jsonArray(part)
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
      () => all(db, 'monthly_drop_awards', 'award_month, amount, created_at', own, 'award_month'),
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
  yield* write('tone_packs', tonePacks)
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
    ['received', received()],
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
        one(
          'encouragement_badges',
          'level, total_sent, success_rate, consecutive_days, engagement_increases, bonus_earned, progress_to_next, last_sent_day, updated_at',
        ),
    ],
    [
      'milestones',
      () => all(db, 'encouragement_badge_milestones', 'level, achieved_at, stats', own, 'achieved_at'),
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
        one(
          'workout_windows',
          'activity_type, custom_activity, window_start_time, window_end_time, timezone, is_active, created_at, updated_at',
        ),
    ],
    [
      'location',
      () =>
        one(
          'workout_locations',
          'city, region, country, latitude, longitude, timezone, ip_address, last_updated',
        ),
    ],
    ['checkins', checkins()],
    ['squads', squads()],
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
        one(
          'music_connections',
          'music_user_id, scope, connected_at, last_synced_at, needs_reconnect, last_error',
        ),
    ],
    ['plays', plays()],
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
    pagedRows(db, 'notifications', 'id, type, payload, read_at, created_at', own, 'id'),
  )
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
    ['classroom_account', () => one('labs_classroom_accounts', 'created_at')],
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
      () => all(db, 'labs_competition_participants', 'competition_id, score, joined_at', own, 'joined_at'),
    ],
    [
      'messages_sent',
      pagedRows(db, 'labs_sponsor_messages', 'id, sponsor_id, body, created_at', { sender_id: me.id }, 'id'),
    ],
    ['submissions', async () => unwrap(await db.rpc('labs_my_submissions'))],
    ['replication_removals', async () => (await hidden()).labs_replication_removals],
    ['kit_waitlist', async () => (await hidden()).labs_kit_waitlist],
  ])
  yield* write('impersonation_sessions', async () => (await hidden()).impersonation_sessions)
  yield* write('role_changes', async () => (await hidden()).role_changes)
  // Every media path above is known once the sections are written.
  yield* write('media', () => Promise.resolve(media))
  yield '\n}\n'
}

// ---- The archive.

const README = (media: Media[], missing: Set<string>) => {
  const kinds: Record<Media['kind'], string> = {
    entry_background: 'the generated background of a journal entry (export.json: entries[].background_path)',
    checkin_photo: 'the photo of a workout check-in (export.json: workout.checkins[].photo_path)',
    pack_image: 'an image of a tone pack you made (export.json: tone_packs.owned[].images[].path)',
  }
  const lines = [
    'Your data, exported from the journal app',
    '',
    'export.json   Everything the app holds about you, as one JSON document (format ' + EXPORT_FORMAT + '):',
    '              your profile and preferences; notebooks and journal entries with their text,',
    '              visibility, mood, tags and linked track; goals and check-ins; organization and team',
    '              memberships with your role; the drops ledger and purchases; tone packs you made,',
    '              bought or were given; encouragement drops you sent and received (senders as the app',
    '              shows them to you), badges and milestones; workout windows, location, check-ins and',
    '              chains; listening history; AI usage with its cost; notifications; e-mails sent for',
    '              you; labs experiments, clones, replications, submissions and messages; and the support',
    '              sessions in which an administrator acted as you. Its schema is the UserExport',
    '              component of the API document (/functions/v1/api/openapi.json).',
    'README.txt    This file.',
    'media/        Files you own, at media/<bucket>/<object name>; export.json points to each by its path.',
    '',
  ]
  if (media.length) lines.push('The files under media/:')
  for (const m of media) {
    lines.push(
      `${m.path}\n    ${kinds[m.kind]}${missing.has(m.path) ? ' (no longer in storage: not included)' : ''}`,
    )
  }
  return lines.join('\n') + '\n'
}

/** The document as a byte stream, pulled as the reader reads. */
function documentStream(db: Db, me: { id: string; email: string | null }, media: Media[]) {
  const encoder = new TextEncoder()
  const pieces = exportDocument(db, me, media)
  // Small pieces are gathered into chunks of about 64 kB before they are handed on.
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let chunk = ''
      while (chunk.length < 65536) {
        const { value, done } = await pieces.next()
        if (done) {
          if (chunk) controller.enqueue(encoder.encode(chunk))
          controller.close()
          return
        }
        chunk += value
      }
      controller.enqueue(encoder.encode(chunk))
    },
    async cancel() {
      await pieces.return(undefined)
    },
  }, { highWaterMark: 0 })
}

function zipStream(db: Db, me: { id: string; email: string | null }) {
  const media: Media[] = []
  const missing = new Set<string>()
  const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>()
  const zip = new ZipWriter(writable, { bufferedWrite: false })
  ;(async () => {
    await zip.add('export.json', documentStream(db, me, media), { level: 6 })
    for (const m of media) {
      const res = await fetch(publicObjectUrl(m.bucket, m.object))
      if (!res.ok || !res.body) {
        await res.body?.cancel()
        missing.add(m.path)
        continue
      }
      // Images are compressed already: stored as they are.
      await zip.add(m.path, res.body, { level: 0 })
    }
    await zip.add('README.txt', new TextReader(README(media, missing)))
    await zip.close()
  })().catch(async (e) => {
    console.error('user export failed while streaming', e)
    await writable.abort(e).catch(() => {})
  })
  return readable
}

const tag = 'Profile'

export const userDataRoutes = routeModule()
  .openapi(
    (() => {
      const route = endpoint({
        method: 'get',
        path: '/user/export',
        tag,
        auth: 'bearer',
        query: z.object({
          format: z.enum(['zip', 'json']).default('zip')
            .openapi({
              description: 'zip: the archive (export.json, media/, README.txt); json: export.json alone',
            }),
        }).strict(),
        summary: 'Everything the app holds about the caller, as a ZIP or as JSON',
        description:
          'Streamed as it is produced. The ZIP holds export.json (this document), the media files the ' +
          'caller owns (entry backgrounds, check-in photos, pack images) under media/, and README.txt. Another ' +
          "user's rows never appear, even where the caller may read them (a teammate's shared entry).",
        response: ExportDocument,
        responseDescription: 'application/zip by default; with format=json the document alone',
      })
      const ok = route.responses[200] as { content: Record<string, unknown> }
      ok.content = {
        'application/zip': { schema: { type: 'string', format: 'binary' } },
        ...ok.content,
      }
      return route
    })(),
    async (c) => {
      const { format } = c.req.valid('query')
      const me = { id: c.var.caller.id, email: c.var.caller.email }
      // Fails before anything is sent when the caller cannot be read (a 4xx/5xx with {error}).
      unwrap(await c.var.db.from('profiles').select('id').eq('id', me.id).single())
      const day = new Date().toISOString().slice(0, 10)
      if (format === 'json') {
        return new Response(documentStream(c.var.db, me, []), {
          headers: {
            'content-type': 'application/json; charset=utf-8',
            'content-disposition': `attachment; filename="export-${day}.json"`,
            'cache-control': 'no-store',
          },
        }) as any
      }
      return new Response(zipStream(c.var.db, me), {
        headers: {
          'content-type': 'application/zip',
          'content-disposition': `attachment; filename="export-${day}.zip"`,
          'cache-control': 'no-store',
        },
      }) as any
    },
  )
