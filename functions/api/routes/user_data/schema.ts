// The export's document: the JSON form's schema in the OpenAPI document (UserExport).
import { z } from '@hono/zod-openapi'
import { Profile } from '../profile.ts'

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
  track: z.object({ id: s, name: s, artists: ids, album: sn, external_url: sn })
    .nullable(),
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
const GoalCheckIn = z.object({
  id: s,
  goal_id: s,
  status: s,
  notes: sn,
  created_at: s,
})
const Membership = z.object({ id: s, name: s, role: s, joined_at: sn })
const TeamMembership = z.object({
  id: s,
  org_id: s,
  name: s,
  role: s,
  joined_at: sn,
})
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
}).describe(
  "As the app shows it: the sender's name and avatar as they are now",
)
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
const Notification = z.object({
  id: s,
  type: s,
  payload: j,
  read_at: sn,
  created_at: s,
})
const Device = z.object({
  id: s,
  kind: z.enum(['expo', 'web_push']),
  address: s,
  name: sn,
  created_at: s,
  registered_at: s,
  retired_at: sn,
  retired_reason: sn,
})
const NotificationPreferences = z.object({
  push_enabled: z.boolean(),
  types: j,
  quiet_hours_start: sn,
  quiet_hours_end: sn,
  timezone: sn,
  daily_cap: i,
  email_digest: z.boolean(),
  digest_hour: i,
  updated_at: s,
})
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
const SponsorMessage = z.object({
  id: s,
  sponsor_id: s,
  body: s,
  created_at: s,
})
const ImpersonationSession = z.object({
  session_id: s,
  started_at: s,
  expires_at: sn,
  stopped_at: sn,
  reason: s,
  actions: z.array(
    z.object({ at: s, kind: s, table: sn, operation: s, row_id: sn }),
  ),
})
export const MediaFile = z.object({
  path: s.describe('Path inside the ZIP'),
  bucket: s,
  object: s,
  kind: z.enum(['entry_background', 'checkin_photo', 'pack_image', 'avatar']),
})

export const ExportDocument = z.object({
  format: z.literal(EXPORT_FORMAT),
  exported_at: s,
  user: z.object({ id: s, email: sn }),
  profile: Profile,
  notebooks: z.array(Notebook),
  entries: z.array(ExportEntry).describe(
    'Every entry the caller wrote, oldest first, with its text',
  ),
  goals: z.array(Goal),
  goal_check_ins: z.array(GoalCheckIn),
  organizations: z.array(Membership).describe(
    'Organizations the caller owns (role owner) or belongs to',
  ),
  teams: z.array(TeamMembership).describe(
    'Teams the caller administers (role admin) or belongs to',
  ),
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
  music: z.object({
    connection: MusicConnection.nullable(),
    plays: z.array(Play),
  }),
  ai_usage: z.object({ calls: z.array(AiCall), monthly: z.array(AiMonth) }),
  notifications: z.array(Notification),
  notification_settings: z.object({
    devices: z.array(Device).describe(
      'Phones and browsers registered for push (the Web Push keys are left out)',
    ),
    preferences: NotificationPreferences.nullable(),
  }),
  email_messages: z.array(EmailMessage),
  labs: z.object({
    classroom_account: z.object({ created_at: s }).nullable(),
    experiments: z.array(Experiment),
    replications: z.array(Replication),
    activity: z.array(LabsEvent),
    competitions: z.array(Participation),
    messages_sent: z.array(SponsorMessage),
    submissions: z.record(
      z.string(),
      z.array(z.record(z.string(), z.unknown())),
    ),
    replication_removals: z.array(z.record(z.string(), z.unknown())),
    kit_waitlist: z.array(z.object({ email: s, created_at: s })),
  }),
  impersonation_sessions: z.array(ImpersonationSession).describe(
    'Support sessions in which a super admin acted as the caller',
  ),
  role_changes: z.array(
    z.object({ old_role: s, new_role: s, changed_via: s, created_at: s }),
  ),
  avatars: z.array(s).describe(
    "Paths inside the ZIP of the caller's images in the avatars bucket (profile.avatar_url may point to one)",
  ),
  media: z.array(MediaFile).describe(
    'The files of the ZIP form under media/, in archive order',
  ),
}).openapi('UserExport')
