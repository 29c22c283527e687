// Offline sync (issue 40, docs/sync.md): WatermelonDB's pullChanges / pushChanges for the
// caller's notebooks, entries, goals and check-ins. The database does the work
// (supabase/schemas/sync_pull.sql, sync_push.sql); the pull's reply is streamed through as
// PostgREST sends it, so a first pull of a large journal never sits whole in this function.
import { z } from '@hono/zod-openapi'
import { userRpcResponse } from '../../_shared/db.ts'
import { takeApiWrite } from '../../_shared/write_limit.ts'
import { badRequest, fromDb, HttpError, unwrap } from '../../_shared/errors.ts'
import { uuid } from '../../_shared/validation.ts'
import { endpoint, routeModule } from '../openapi.ts'

const SYNCED_TABLES = ['notebooks', 'journal_entries', 'goals', 'goal_check_ins'] as const

/** A cursor the server handed out (a positive integer), or null / absent on a first pull. */
const cursor = z.string().regex(/^(null|\d{1,18})$/, 'must be a timestamp this server returned, or null')
  .transform((s) => (s === 'null' ? null : Number(s)))

const PullQuery = z.object({
  last_pulled_at: cursor.optional().openapi({
    description: "The previous pull's timestamp; null or absent on a first pull",
    example: '1712',
  }),
  schema_version: z.string().regex(/^\d{1,4}$/, 'must be an integer').transform(Number).optional()
    .openapi({ description: "The device's schema version (default: the newest, 2)" }),
  migration: z.string().optional().openapi({
    description: 'JSON {from, tables, columns: [{table, columns}]} after a local migration, or null',
  }),
}).strict()

const PushQuery = z.object({
  last_pulled_at: z.string().regex(/^\d{1,18}$/, 'must be the timestamp of the pull before this push')
    .transform(Number).openapi({ description: 'The timestamp of the pull this push follows' }),
}).strict()

const RawValue = z.union([z.string(), z.number(), z.boolean(), z.null()])
const RawRecord = z.object({ id: uuid() }).catchall(RawValue).openapi('SyncRecord', {
  description: "A record with the table's raw columns (docs/sync.md); WatermelonDB's _status and _changed are ignored",
})
const TableChanges = z.object({
  created: z.array(RawRecord).default([]),
  updated: z.array(RawRecord).default([]),
  deleted: z.array(uuid()).default([]),
}).strict()
const Changes = z.object(Object.fromEntries(SYNCED_TABLES.map((t) => [t, TableChanges.optional()])))
  .strict().openapi('SyncChanges')

const PullReply = z.object({
  changes: z.record(z.string(), z.object({
    created: z.array(z.record(z.string(), RawValue)),
    updated: z.array(z.record(z.string(), RawValue)),
    deleted: z.array(z.string()),
  })),
  timestamp: z.number().int().describe('The cursor of the next pull (last_pulled_at)'),
  experimentalStrategy: z.literal('replacement').optional().describe(
    "Present when the cursor was older than the kept deletions: the whole set, and the device drops what is not in it",
  ),
}).openapi('SyncPull')

const tag = 'Sync'

function parseMigration(raw: string | undefined): unknown {
  if (raw === undefined || raw === 'null') return null
  try {
    return JSON.parse(raw)
  } catch {
    throw badRequest('migration: must be JSON {from, tables, columns} or null')
  }
}

export const syncRoutes = routeModule()
  .openapi(
    endpoint({
      method: 'get',
      path: '/sync',
      tag,
      auth: 'bearer',
      query: PullQuery,
      summary: 'Pull: what changed in the caller\'s journal since last_pulled_at (WatermelonDB pullChanges)',
      description:
        'Records of notebooks, journal_entries (with their text), goals and goal_check_ins, created, updated and deleted since the cursor; `timestamp` is the next cursor. Every change committed before the reply is in it or in the next pull, none twice. One pull per account at a time (429 with Retry-After while another runs); a first pull counts as one write against the write rate limit; not inside an impersonation session (403).',
      response: PullReply,
      errors: [403, 429],
    }),
    async (c) => {
      const q = c.req.valid('query')
      // A first pull is the whole journal: it counts against the write budget, as a write does,
      // so a loop of them is bounded like a loop of writes (incremental pulls are free).
      if (q.last_pulled_at === null || q.last_pulled_at === undefined || q.last_pulled_at === 0) {
        await takeApiWrite(c.var.caller.id, c.req.raw.headers)
      }
      const res = await userRpcResponse(c.var.caller.token, 'sync_pull', {
        last_pulled_at: q.last_pulled_at ?? null,
        schema_version: q.schema_version ?? null,
        migration: parseMigration(q.migration),
      })
      if (res.status === 429) {
        // Another pull of the account is under way (sync_pull): a moment later it is done.
        throw new HttpError(429, (await res.json()).message, 1)
      }
      if (!res.ok) throw fromDb(await res.json(), res.status)
      return new Response(res.body, { status: 200, headers: { 'content-type': 'application/json' } })
    },
  )
  .openapi(
    endpoint({
      method: 'post',
      path: '/sync',
      tag,
      auth: 'bearer',
      query: PushQuery,
      body: Changes,
      summary: "Push: apply the device's changes, all or none (WatermelonDB pushChanges)",
      description:
        'Refused with 409 (`sync_conflict`, naming the records) when a pushed record changed on the server since last_pulled_at: pull, then push again. A push sent twice changes nothing the second time.',
      response: z.object({
        applied: z.record(z.string(), z.record(z.string(), z.number().int())).describe(
          'Rows written per table and operation (insert, update, delete)',
        ),
        unchanged: z.number().int().describe('Records the server had already (a retried push)'),
      }),
      errors: [403, 409],
    }),
    async (c) => {
      const result = unwrap(
        await c.var.db.rpc('sync_push', { changes: c.req.valid('json'), last_pulled_at: c.req.valid('query').last_pulled_at }),
      )
      return c.json(result as { applied: Record<string, Record<string, number>>; unchanged: number })
    },
  )
