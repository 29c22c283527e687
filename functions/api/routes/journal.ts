// Journal entries (SPEC "Journal"): metadata and content each with their own visibility.
// Every read goes through journal_feed / journal_entry_details, so the database decides
// what the caller sees (content null + content_hidden where only metadata is visible).
import { Hono } from 'hono'
import { z } from 'zod'
import { refuseWrite } from '../../_shared/access.ts'
import type { Db } from '../../_shared/db.ts'
import { badRequest, notFound, unwrap } from '../../_shared/errors.ts'
import { decodeCursor, page, pageQuery } from '../../_shared/pagination.ts'
import { detectMood, toneAnalyzer } from '../../_shared/tone.ts'
import { pathUuid, readJson, readQuery, uuid } from '../../_shared/validation.ts'
import { requireSharingTargets, sharingFields } from '../../_shared/visibility.ts'
import { type ApiEnv, bearer } from '../credentials.ts'

export const LIMITS = { title: 200, content: 100_000, mood: 50, tags: 20, tag: 50 }

const title = z.string({ required_error: 'title is required', invalid_type_error: 'title must be a string' })
  .trim().min(1, 'title must not be empty').max(LIMITS.title, `title must be at most ${LIMITS.title} characters`)
const content = z.string({ invalid_type_error: 'content must be a string' })
  .max(LIMITS.content, `content must be at most ${LIMITS.content} characters`)
const mood = z.string({ invalid_type_error: 'mood must be a string' }).trim().toLowerCase()
  .min(1, 'mood must not be empty').max(LIMITS.mood, `mood must be at most ${LIMITS.mood} characters`)
const tags = z.array(
  z.string({ invalid_type_error: 'tags must be strings' }).trim().min(1, 'tags must not be empty')
    .max(LIMITS.tag, `each tag must be at most ${LIMITS.tag} characters`),
  { invalid_type_error: 'tags must be an array of strings' },
).max(LIMITS.tags, `at most ${LIMITS.tags} tags`).transform((t) => [...new Set(t)])

const NewEntry = z.object({
  title,
  content: content.default(''),
  mood: mood.nullable().optional(),
  tags: tags.optional(),
  notebook_id: uuid('notebook_id').nullable().optional(),
  ...sharingFields,
}).strict().superRefine(requireSharingTargets)

const EntryPatch = z.object({
  title: title.optional(),
  content: content.optional(),
  mood: mood.nullable().optional(),
  tags: tags.optional(),
  notebook_id: uuid('notebook_id').nullable().optional(),
  ...sharingFields,
}).strict().superRefine(requireSharingTargets)

const FeedQuery = z.object({
  ...pageQuery,
  scope: z.enum(['own', 'visible'], { errorMap: () => ({ message: 'scope must be own or visible' }) }).default('own'),
  team_id: uuid('team_id').optional(),
  org_id: uuid('org_id').optional(),
  notebook_id: uuid('notebook_id').optional(),
  mood: mood.optional(),
  tag: z.string().trim().min(1).max(LIMITS.tag, `tag must be at most ${LIMITS.tag} characters`).optional(),
  q: z.string().trim().min(1, 'q must not be empty').max(200, 'q must be at most 200 characters').optional(),
}).strict()

const StatsQuery = z.object({ scope: FeedQuery.shape.scope }).strict()

type Entry = { id: string; created_at: string; mood: string | null; title: string; content: string | null }


/** After a write without a mood: the analyzer may set one. Never fails the write. */
async function analyzeTone(db: Db, entry: Entry): Promise<Entry> {
  const detected = await detectMood(toneAnalyzer(), { title: entry.title, content: entry.content ?? '' })
  if (!detected) return entry
  const { data, error } = await db.rpc('update_journal_entry', { entry_id: entry.id, patch: { mood: detected } }).single()
  if (error) {
    console.error('could not store the detected mood', error)
    return entry
  }
  return data as Entry
}

export const journalRoutes = new Hono<ApiEnv>()
  .get('/journal', bearer, async (c) => {
    const q = readQuery(c, FeedQuery)
    const cursor = decodeCursor(q.before)
    const rows = unwrap(
      await c.var.db.rpc('journal_feed', {
        scope: q.scope,
        team_id: q.team_id ?? null,
        org_id: q.org_id ?? null,
        notebook_id: q.notebook_id ?? null,
        mood: q.mood ?? null,
        tag: q.tag ?? null,
        search: q.q ?? null,
        before_created_at: cursor?.createdAt ?? null,
        before_id: cursor?.id ?? null,
        page_size: q.limit + 1,
      }),
    ) as Entry[]
    const { items, next_cursor } = page(rows, q.limit)
    return c.json({ entries: items, next_cursor })
  })
  .get('/journal/stats', bearer, async (c) => {
    const q = readQuery(c, StatsQuery)
    return c.json(unwrap(await c.var.db.rpc('journal_stats', { scope: q.scope })))
  })
  .post('/journal/backfill-mentions', bearer, async (c) => {
    const remaining = unwrap(await c.var.db.rpc('backfill_mentions', {}))
    return c.json({ remaining })
  })
  .get('/journal/:id', bearer, async (c) => {
    const id = pathUuid(c)
    const entry = unwrap(await c.var.db.from('journal_entry_details').select('*').eq('id', id).maybeSingle())
    if (!entry) throw notFound('Entry not found')
    return c.json({ entry })
  })
  .post('/journal', bearer, async (c) => {
    const body = await readJson(c, NewEntry)
    let entry = unwrap(await c.var.db.rpc('create_journal_entry', body).single()) as Entry
    if (!body.mood) entry = await analyzeTone(c.var.db, entry)
    return c.json({ entry }, 201)
  })
  .put('/journal/:id', bearer, async (c) => {
    const id = pathUuid(c)
    const patch = await readJson(c, EntryPatch)
    if (Object.keys(patch).length === 0) throw badRequest('Nothing to update')
    let entry = unwrap(await c.var.db.rpc('update_journal_entry', { entry_id: id, patch }).single()) as Entry
    if (patch.content !== undefined && !patch.mood) entry = await analyzeTone(c.var.db, entry)
    return c.json({ entry })
  })
  .delete('/journal/:id', bearer, async (c) => {
    const id = pathUuid(c)
    const deleted = unwrap(await c.var.db.from('journal_entries').delete().eq('id', id).select('id'))
    if (!deleted.length) await refuseWrite(c.var.db, 'journal_entries', { id }, 'entry')
    return c.json({ message: 'Entry deleted' })
  })
