// What the /api/journal tests (tests/journal_*_test.ts) share.
import { api, type TestUser } from './_helpers.ts'

export const ENTRY_FIELDS = [
  'author_avatar_url',
  'author_name',
  'background_url',
  'content',
  'content_hidden',
  'content_visibility',
  'created_at',
  'effective_content_visibility',
  'effective_metadata_visibility',
  'id',
  'metadata_visibility',
  'mood',
  'music_track_id',
  'notebook_id',
  'org_id',
  'row_version',
  'tags',
  'team_id',
  'title',
  'tone_icon_url',
  'track',
  'updated_at',
  'user_id',
]

/** What POST/PUT /api/journal answer: the entry and whether its tone analysis is pending. */
export const WRITTEN_ENTRY_FIELDS = [...ENTRY_FIELDS, 'mood_pending'].sort()

export const rnd = () => crypto.randomUUID().slice(0, 8)
export const ids = (entries: { id: string }[]) => entries.map((e) => e.id)
export const read = (id: string, u: TestUser) => api(`/api/journal/${id}`, { token: u.token })
