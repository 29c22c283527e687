// Journal entries (SPEC "Journal"): metadata and content each with their own visibility.
// Every read goes through journal_feed / journal_entry_details, so the database decides
// what the caller sees (content null + content_hidden where only metadata is visible).
import { z } from '@hono/zod-openapi'
import { refuseWrite } from '../../_shared/access.ts'
import { type Db, givenArgs } from '../../_shared/db.ts'
import { badRequest, notFound, unwrap } from '../../_shared/errors.ts'
import { ifMatchOf, ifStillCurrent, sendETag } from '../../_shared/etag.ts'
import { decodeCursor, page, pageQuery } from '../../_shared/pagination.ts'
import { clientChosenId, idParams, uuid } from '../../_shared/validation.ts'
import { requireSharingTargets, sharingFields, VISIBILITY_LEVELS } from '../../_shared/visibility.ts'
import { endpoint, Message, NextCursor, routeModule } from '../openapi.ts'

export const LIMITS = { title: 200, content: 100_000, mood: 50, tags: 20, tag: 50 }

const title = z.string().trim().min(1).max(LIMITS.title)
const content = z.string().max(LIMITS.content)
const mood = z.string().trim().toLowerCase().min(1).max(LIMITS.mood)
const tags = z.array(z.string().trim().min(1).max(LIMITS.tag)).max(LIMITS.tags).transform((
  t,
) => [...new Set(t)])

const NewEntry = z.object({
  title,
  content: content.default(''),
  mood: mood.nullable().optional(),
  tags: tags.optional(),
  notebook_id: uuid().nullable().optional(),
  ...sharingFields,
  id: clientChosenId(),
}).strict().superRefine(requireSharingTargets).openapi('NewEntry')

const EntryPatch = z.object({
  title: title.optional(),
  content: content.optional(),
  mood: mood.nullable().optional(),
  tags: tags.optional(),
  notebook_id: uuid().nullable().optional(),
  ...sharingFields,
}).strict().superRefine(requireSharingTargets).openapi('EntryPatch')

const FeedQuery = z.object({
  ...pageQuery,
  scope: z.enum(['own', 'visible']).default('own')
    .openapi({ description: "own: the caller's entries; visible: every entry the caller may see" }),
  team_id: uuid().optional(),
  org_id: uuid().optional(),
  notebook_id: uuid().optional(),
  mood: mood.optional(),
  tag: z.string().trim().min(1).max(LIMITS.tag).optional(),
  q: z.string().trim().min(1).max(200).optional().openapi({
    description: 'Full-text search in title and visible content',
  }),
}).strict()

const StatsQuery = z.object({ scope: FeedQuery.shape.scope }).strict()

const level = z.enum(VISIBILITY_LEVELS)
export const EntrySchema = z.object({
  id: z.string(),
  user_id: z.string(),
  notebook_id: z.string().nullable(),
  title: z.string(),
  content: z.string().nullable(),
  content_hidden: z.boolean(),
  mood: z.string().nullable(),
  tags: z.array(z.string()),
  metadata_visibility: level,
  content_visibility: level,
  team_id: z.string().nullable(),
  org_id: z.string().nullable(),
  music_track_id: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
  background_url: z.string().nullable().describe(
    "The entry's generated background image (POST /api/ai/generate-background)",
  ),
  tone_icon_url: z.string().nullable().describe("Icon of the viewer's active tone pack for the entry's mood"),
  track: z.object({
    id: z.string(),
    name: z.string(),
    artists: z.array(z.string()),
    album: z.string().nullable(),
    image_url: z.string().nullable().describe('Album art (same as album_image_url)'),
    album_image_url: z.string().nullable(),
    external_url: z.string().nullable(),
  }).nullable().describe('The track linked by music_track_id, for display'),
  author_name: z.string().nullable().describe(
    "The author's display name (null when they set none; \"Deleted user\" once their account is being deleted)",
  ),
  author_avatar_url: z.string().nullable().describe("The author's avatar (null for a deleted user)"),
  effective_metadata_visibility: level.describe(
    'Who may see the metadata: metadata_visibility, or the notebook\'s level when that is user (docs/journal.md)',
  ),
  effective_content_visibility: level.describe(
    'Who may read the text: the effective content level, never wider than effective_metadata_visibility',
  ),
  row_version: z.string().describe(
    "The entry's version (its ETag): changes with every write of the entry or its text; send it as If-Match to write only over what was read",
  ),
}).openapi('Entry')
const WrittenEntry = EntrySchema.extend({
  mood_pending: z.boolean().describe(
    'True while tone analysis of the text runs (a mood may follow: Realtime UPDATE of journal_entries, or the next read)',
  ),
}).openapi('WrittenEntry')
const EntryReply = z.object({ entry: EntrySchema })
const WrittenEntryReply = z.object({ entry: WrittenEntry })
const Stats = z.object({
  count: z.number().int(),
  tags: z.array(z.object({ tag: z.string(), count: z.number().int() })),
  moods: z.array(z.object({ mood: z.string(), count: z.number().int() })),
})

// Writes answer at once: a text written without a mood is queued for tone analysis by the
// database (supabase/schemas/journal/tone_queue.sql, every write path), and the reply says so
// (mood_pending, a computed field of the entry). The mood then reaches the owner through
// Realtime, or on the next read.
const WRITTEN = '*, mood_pending'

const tag = 'Journal'
const versioned = { field: 'entry', schema: EntrySchema }

/** An entry as the caller may see it, or null. */
const readEntry = async (db: Db, id: string) =>
  unwrap(await db.from('journal_entry_details').select('*').eq('id', id).maybeSingle())

export const journalRoutes = routeModule()
  .openapi(
    endpoint({
      method: 'get',
      path: '/journal',
      tag,
      auth: 'bearer',
      query: FeedQuery,
      summary: 'A page of entries, newest first',
      response: z.object({ entries: z.array(EntrySchema), next_cursor: NextCursor }),
    }),
    async (c) => {
      const q = c.req.valid('query')
      const cursor = decodeCursor(q.before)
      const rows = unwrap(
        await c.var.db.rpc(
          'journal_feed',
          givenArgs({
            scope: q.scope,
            team_id: q.team_id,
            org_id: q.org_id,
            notebook_id: q.notebook_id,
            mood: q.mood,
            tag: q.tag,
            search: q.q,
            before_created_at: cursor?.createdAt,
            before_id: cursor?.id,
            page_size: q.limit + 1,
          }),
        ),
      )
      const { items, next_cursor } = page(rows, q.limit)
      return c.json({ entries: items, next_cursor })
    },
  )
  .openapi(
    endpoint({
      method: 'get',
      path: '/journal/stats',
      tag,
      auth: 'bearer',
      query: StatsQuery,
      summary: 'Counts, tags and moods over the entries in scope',
      response: Stats,
    }),
    async (c) => c.json(unwrap(await c.var.db.rpc('journal_stats', { scope: c.req.valid('query').scope }))),
  )
  .openapi(
    endpoint({
      method: 'post',
      path: '/journal/backfill-mentions',
      tag,
      auth: 'bearer',
      summary: 'Index mentions of older entries; repeat until remaining is 0',
      response: z.object({ remaining: z.number().int() }),
    }),
    async (c) => c.json({ remaining: unwrap(await c.var.db.rpc('backfill_mentions', {})) }),
  )
  .openapi(
    endpoint({
      method: 'get',
      path: '/journal/{id}',
      tag,
      auth: 'bearer',
      params: idParams('id'),
      summary: 'One entry as the caller may see it',
      response: EntryReply,
      versioned,
    }),
    async (c) => {
      const entry = await readEntry(c.var.db, c.req.valid('param').id)
      if (!entry) throw notFound('Entry not found')
      return c.json({ entry: sendETag(c, entry) })
    },
  )
  .openapi(
    endpoint({
      method: 'post',
      path: '/journal',
      tag,
      auth: 'bearer',
      body: NewEntry,
      status: 201,
      response: WrittenEntryReply,
      replayable: true,
      summary: 'Create an entry',
      description:
        'Answers without waiting for tone analysis: without a mood, the text is analysed in the background (mood_pending) and a detected mood is stored later (SPEC Tone analysis). ' +
        'With an `id`, a retry answers 200 with the entry already made, unchanged (no mood given matches the mood tone analysis set).',
      versioned,
    }),
    async (c) => {
      const { created_now, ...entry } = unwrap(
        await c.var.db.rpc('create_journal_entry', c.req.valid('json')).select(`${WRITTEN}, created_now`).single(),
      )
      return c.json({ entry: sendETag(c, entry) }, created_now ? 201 : 200)
    },
  )
  .openapi(
    endpoint({
      method: 'put',
      path: '/journal/{id}',
      tag,
      auth: 'bearer',
      params: idParams('id'),
      body: EntryPatch,
      summary: 'Change an entry (the owner)',
      description: 'New text without a mood (and no mood the user chose) is analysed in the background (mood_pending).',
      response: WrittenEntryReply,
      errors: [403],
      versioned,
    }),
    async (c) => {
      const { id } = c.req.valid('param')
      const patch = c.req.valid('json')
      const ifMatch = ifMatchOf(c.req.header('if-match'))
      if (Object.keys(patch).length === 0) throw badRequest('Nothing to update')
      const entry = unwrap(
        await ifStillCurrent(
          c.var.db.rpc('update_journal_entry', { entry_id: id, patch }).select(WRITTEN).single(),
          ifMatch,
          'entry',
          () => readEntry(c.var.db, id),
        ),
      )
      return c.json({ entry: sendETag(c, entry) })
    },
  )
  .openapi(
    endpoint({
      method: 'delete',
      path: '/journal/{id}',
      tag,
      auth: 'bearer',
      params: idParams('id'),
      summary: 'Delete an entry (the owner)',
      response: Message,
      errors: [403],
      versioned,
    }),
    async (c) => {
      const { id } = c.req.valid('param')
      const ifMatch = ifMatchOf(c.req.header('if-match'))
      const deleted = unwrap(
        await ifStillCurrent(
          c.var.db.from('journal_entries').delete().eq('id', id).select('id'),
          ifMatch,
          'entry',
          () => readEntry(c.var.db, id),
        ),
      )
      if (!deleted.length) await refuseWrite(c.var.db, 'journal_entries', { id }, 'entry')
      return c.json({ message: 'Entry deleted' })
    },
  )
