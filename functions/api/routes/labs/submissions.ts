// Public submissions: sponsor applications, opportunities (internships, scholarships,
// fellowships, mentorships) and dream videos. Anyone signed in submits; a super admin approves
// or declines; the approved ones are listed publicly, never with contact fields or reasons.
import { z } from '@hono/zod-openapi'
import type { PostgrestResponse, PostgrestSingleResponse } from '@supabase/postgrest-js'
import { type Db, userDb } from '../../../_shared/db.ts'
import { requiredEnv } from '../../../_shared/env.ts'
import { unwrap } from '../../../_shared/errors.ts'
import { decodeCursor, encodeCursor, pageQuery } from '../../../_shared/pagination.ts'
import { idParams } from '../../../_shared/validation.ts'
import { endpoint, NextCursor, routeModule } from '../../openapi.ts'
import { email, Row, tag, text } from './shared.ts'

const KINDS = {
  sponsors: {
    kind: 'sponsor',
    listed: (db: Db) => db.from('labs_sponsors').select('id, name, tier, applied_at'),
  },
  opportunities: {
    kind: 'opportunity',
    listed: (db: Db) => db.from('labs_opportunities').select('id, kind, title, description, url, applied_at'),
  },
  videos: {
    kind: 'video',
    listed: (db: Db) => db.from('labs_dream_videos').select('id, title, video_url, is_featured, applied_at'),
  },
} as const

/** A kind's public columns, as publicPage narrows, orders and awaits them. */
interface ListedQuery {
  eq(column: string, value: string): this
  or(filters: string): this
  order(column: string, options: { ascending: boolean }): this
  limit(count: number): PromiseLike<PostgrestResponse<{ id: string; applied_at: string }>>
}
type Plural = keyof typeof KINDS

const NewSponsor = z.object({
  name: text(200),
  tier: text(50),
  contact_email: email,
  contact_name: text(200),
}).strict()
const NewOpportunity = z.object({
  kind: z.enum(['internship', 'scholarship', 'fellowship', 'mentorship']),
  title: text(200),
  description: z.string().max(4000).default(''),
  url: z.string().max(2048).regex(/^https?:\/\//i, 'must start with http:// or https://').optional(),
  contact_email: email,
  contact_name: text(200),
}).strict()
const NewVideo = z.object({
  title: text(200),
  video_url: z.string().max(2048).regex(/^https:\/\//i, 'must be an https:// URL'),
}).strict()
const Decline = z.object({ reason: text(2000) }).strict()

/** A public page (anonymous PostgREST: RLS shows approved records only), newest first. */
async function publicPage(plural: Plural, q: { limit: number; before?: string; kind?: string }) {
  const k = KINDS[plural]
  const cursor = decodeCursor(q.before)
  let query: ListedQuery = k.listed(userDb(requiredEnv('SUPABASE_ANON_KEY')))
  query = query.eq('status', 'approved')
  if (q.kind) query = query.eq('kind', q.kind)
  if (cursor) {
    const t = JSON.stringify(cursor.createdAt)
    query = query.or(`applied_at.lt.${t},and(applied_at.eq.${t},id.lt.${cursor.id})`)
  }
  if (plural === 'videos') query = query.order('is_featured', { ascending: false })
  const rows = unwrap(
    await query.order('applied_at', { ascending: false }).order('id', { ascending: false }).limit(
      q.limit + 1,
    ),
  )
  const items = rows.slice(0, q.limit)
  const last = items[items.length - 1]
  return {
    items,
    next_cursor: rows.length > q.limit && last
      ? encodeCursor({ created_at: last.applied_at, id: last.id })
      : null,
  }
}

/** The body of a kind, validated by its schema, as its submit function reads it. */
type Submit<B extends z.ZodType> = (db: Db, b: z.infer<B>) => PromiseLike<PostgrestSingleResponse<Row>>

/** The five routes of a kind; submit stores the body (validated by body) through the kind's RPC. */
function submissionRoutes<B extends z.ZodType>(
  plural: Plural,
  body: B,
  submit: Submit<B>,
  label: string,
): ReturnType<typeof routeModule>
function submissionRoutes(plural: Plural, body: z.ZodType, submit: Submit<z.ZodType>, label: string) {
  const k = KINDS[plural]
  return routeModule()
    .openapi(
      endpoint({
        method: 'post',
        path: `/labs/${plural}`,
        tag,
        auth: 'bearer',
        body,
        status: 201,
        errors: plural === 'videos' ? [403] : [],
        summary: `Submit ${label} for review (pending until a super admin approves it)`,
        response: z.object({ [k.kind]: Row }),
      }),
      async (c) => {
        const row = unwrap(await submit(c.var.db, c.req.valid('json')))
        return c.json({ [k.kind]: row }, 201)
      },
    )
    .openapi(
      endpoint({
        method: 'get',
        path: `/labs/${plural}`,
        tag,
        auth: 'none',
        query: z.object({
          ...pageQuery,
          ...(plural === 'opportunities' ? { kind: NewOpportunity.shape.kind.optional() } : {}),
        }).strict(),
        summary: `Approved ${plural}, newest first${
          plural === 'videos' ? ' (featured first)' : ''
        }; never contact fields or reasons`,
        response: z.object({ [plural]: z.array(Row), next_cursor: NextCursor }),
      }),
      async (c) => {
        const { items, next_cursor } = await publicPage(
          plural,
          c.req.valid('query') as { limit: number; before?: string; kind?: string },
        )
        return c.json({ [plural]: items, next_cursor })
      },
    )
    .openapi(
      endpoint({
        method: 'get',
        path: `/labs/admin/${plural}/pending`,
        tag,
        auth: 'superAdmin',
        query: z.object(pageQuery).strict(),
        summary: `Pending ${plural} with their contact fields (super admin)`,
        response: z.object({ [plural]: z.array(Row), next_cursor: NextCursor }),
      }),
      async (c) => {
        const q = c.req.valid('query')
        const cursor = decodeCursor(q.before)
        const rows = unwrap(
          await c.var.db.rpc('labs_pending', {
            kind: k.kind,
            page_size: q.limit + 1,
            before_time: cursor?.createdAt ?? null,
            before_id: cursor?.id ?? null,
          }),
        )
        const items = rows.slice(0, q.limit)
        const next = rows.length > q.limit ? encodeCursor(items[items.length - 1]) : null
        return c.json({ [plural]: items.map((r) => r.record), next_cursor: next })
      },
    )
    .openapi(
      endpoint({
        method: 'post',
        path: `/labs/admin/${plural}/{id}/approve`,
        tag,
        auth: 'superAdmin',
        params: idParams('id'),
        errors: [409],
        summary: `Approve a pending ${k.kind} (super admin); it appears on the public listing`,
        response: z.object({ id: z.string(), status: z.literal('approved'), reviewed_at: z.string() }),
      }),
      async (c) => {
        const row = unwrap(
          await c.var.db.rpc('labs_review', {
            kind: k.kind,
            record_id: c.req.valid('param').id,
            decision: 'approve',
          }).single(),
        )
        return c.json(row as { id: string; status: 'approved'; reviewed_at: string })
      },
    )
    .openapi(
      endpoint({
        method: 'post',
        path: `/labs/admin/${plural}/{id}/decline`,
        tag,
        auth: 'superAdmin',
        params: idParams('id'),
        body: Decline,
        errors: [409],
        summary:
          `Decline a pending ${k.kind} with a reason (super admin); the reason is stored privately, the applicant is not notified`,
        response: z.object({ id: z.string(), status: z.literal('declined'), reviewed_at: z.string() }),
      }),
      async (c) => {
        const row = unwrap(
          await c.var.db.rpc('labs_review', {
            kind: k.kind,
            record_id: c.req.valid('param').id,
            decision: 'decline',
            reason: c.req.valid('json').reason,
          }).single(),
        )
        return c.json(row as { id: string; status: 'declined'; reviewed_at: string })
      },
    )
}

export const submissionsRoutes = routeModule()
  .route(
    '/',
    submissionRoutes(
      'sponsors',
      NewSponsor,
      (db, b) => db.rpc('labs_submit_sponsor', b).single(),
      'a sponsor application',
    ),
  )
  .route(
    '/',
    submissionRoutes(
      'opportunities',
      NewOpportunity,
      (db, b) => db.rpc('labs_submit_opportunity', { ...b, url: b.url ?? null }).single(),
      'an opportunity',
    ),
  )
  .route(
    '/',
    submissionRoutes(
      'videos',
      NewVideo,
      (db, b) => db.rpc('labs_submit_dream_video', b).single(),
      'a dream video (not classroom accounts)',
    ),
  )
  .openapi(
    endpoint({
      method: 'get',
      path: '/labs/submissions',
      tag,
      auth: 'bearer',
      summary:
        "The caller's own submissions and their status, newest first, 100 of each (never a decline reason)",
      response: z.object({ sponsors: z.array(Row), opportunities: z.array(Row), videos: z.array(Row) }),
    }),
    async (c) => {
      // Who submitted what is kept private (not a column of the public tables); the RPC lists the caller's own.
      const mine = unwrap(await c.var.db.rpc('labs_my_submissions'))
      return c.json(mine)
    },
  )
  .openapi(
    endpoint({
      method: 'post',
      path: '/labs/admin/videos/{id}/feature',
      tag,
      auth: 'superAdmin',
      params: idParams('id'),
      errors: [409],
      body: z.object({ is_featured: z.boolean() }).strict(),
      summary:
        'Feature or unfeature an approved dream video (super admin); featured ones lead the public listing',
      response: z.object({ video: Row }),
    }),
    async (c) => {
      const row = unwrap(
        await c.var.db.rpc('labs_feature_video', {
          video_id: c.req.valid('param').id,
          is_featured: c.req.valid('json').is_featured,
        }),
      )
      return c.json({ video: row })
    },
  )
