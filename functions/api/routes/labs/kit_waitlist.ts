// The kit waitlist: one signup per address (the same answer either way), and the super admins'
// view of whether the launch gate is met.
import { z } from '@hono/zod-openapi'
import { type Db, userDb } from '../../../_shared/db.ts'
import { optionalEnv, requiredEnv } from '../../../_shared/env.ts'
import { badRequest, unwrap } from '../../../_shared/errors.ts'
import { MAX_PAGE, newestFirstPage, pageQuery } from '../../../_shared/pagination.ts'
import { isoDate } from '../../../_shared/validation.ts'
import { endpoint, NextCursor, routeModule } from '../../openapi.ts'
import { email, tag } from './shared.ts'

const search = z.string().trim().min(1).max(320).optional().openapi({
  description: 'Part of the address (case-insensitive)',
})

/** The launch date: the query's what-if, else LABS_KIT_LAUNCH_DATE (checked), else none. */
function launchDate(query: string | undefined): string | null {
  const launch = query ?? optionalEnv('LABS_KIT_LAUNCH_DATE') ?? null
  if (launch && !isoDate().safeParse(launch).success) {
    throw badRequest('LABS_KIT_LAUNCH_DATE: not a date (YYYY-MM-DD)')
  }
  return launch
}

/** The signups (RLS: super admins read), those whose address contains `q` when given. */
function matching(db: Db, q: string | undefined) {
  const query = db.from('labs_kit_waitlist').select('id, email, created_at')
  return q ? query.ilike('email', `%${q.replace(/[\\%_]/g, (ch) => `\\${ch}`)}%`) : query
}

/** The most rows one CSV holds (the whole list, far beyond the gate's 200). */
const CSV_MAX_ROWS = 100_000

/**
 * One CSV cell: always quoted, quotes doubled, and a value a spreadsheet would run as a formula
 * (starting with =, +, -, @, a tab or a carriage return) prefixed with a single quote.
 */
export function csvCell(value: string): string {
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value
  return `"${safe.replaceAll('"', '""')}"`
}

const csvRoute = (() => {
  const route = endpoint({
    method: 'get',
    path: '/labs/admin/kit-waitlist.csv',
    tag,
    auth: 'superAdmin',
    query: z.object({ q: search }).strict(),
    summary: 'Every kit waitlist signup as a CSV download (email, signed_up_at), newest first (super admin)',
    description:
      'text/csv with Content-Disposition: attachment. Cells are quoted (quotes doubled); a value starting with ' +
      '=, +, -, @, tab or carriage return is prefixed with \' so spreadsheets do not run it as a formula.',
  })
  route.responses[200] = {
    description: 'The signups as CSV',
    headers: {
      'Content-Disposition': {
        description: 'attachment; filename="kit-waitlist-<date>.csv"',
        schema: { type: 'string' },
      },
    },
    content: { 'text/csv': { schema: z.string().openapi({ example: '"email","signed_up_at"\r\n"ada@example.org","2026-12-01T10:00:00+00:00"\r\n' }) } },
  }
  return route
})()

export const kitWaitlistRoutes = routeModule()
  .openapi(
    endpoint({
      method: 'post',
      path: '/labs/kit-waitlist',
      tag,
      auth: 'none',
      status: 202,
      body: z.object({ email }).strict(),
      summary: 'Join the kit waitlist (one signup per address; the reply is the same either way)',
      response: z.object({ message: z.string() }),
    }),
    async (c) => {
      // A plain insert as anonymous, as any PostgREST client makes it: the table's trigger skips
      // an address already listed, so the answer is the same either way.
      unwrap(
        await userDb(requiredEnv('SUPABASE_ANON_KEY')).from('labs_kit_waitlist').insert({
          email: c.req.valid('json').email,
        }),
      )
      return c.json({ message: 'You are on the kit waitlist' }, 202)
    },
  )
  .openapi(
    endpoint({
      method: 'get',
      path: '/labs/admin/kit-waitlist',
      tag,
      auth: 'superAdmin',
      query: z.object({
        ...pageQuery,
        q: search,
        launch_date: isoDate().optional().openapi({
          description: 'Overrides LABS_KIT_LAUNCH_DATE (for what-if views)',
        }),
      }).strict(),
      summary:
        'Kit waitlist signups and whether the gate is met: more than 200 signups within 30 days of launch (super admin)',
      response: z.object({
        signups: z.array(z.object({ id: z.string(), email: z.string(), created_at: z.string() })),
        next_cursor: NextCursor,
        total: z.number().int(),
        launch_date: z.string().nullable(),
        signups_within_30_days_of_launch: z.number().int().nullable(),
        gate_met: z.boolean().nullable(),
        days_since_launch: z.number().int().nullable().openapi({
          description: 'Whole days from the launch date to now (negative before it); the window is days 0 to 29',
        }),
      }),
    }),
    async (c) => {
      const q = c.req.valid('query')
      const launch = launchDate(q.launch_date)
      const [gate, signups] = await Promise.all([
        c.var.db.rpc('labs_kit_waitlist_gate', { launch_date: launch }).single(),
        newestFirstPage(matching(c.var.db, q.q), q),
      ])
      const g = unwrap(gate)
      return c.json({
        signups: signups.items,
        next_cursor: signups.next_cursor,
        total: g.total,
        launch_date: launch,
        signups_within_30_days_of_launch: g.within_launch_window,
        gate_met: g.gate_met,
        days_since_launch: launch ? Math.floor((Date.now() - Date.parse(`${launch}T00:00:00Z`)) / 86_400_000) : null,
      })
    },
  )
  .openapi(
    csvRoute,
    async (c) => {
      const q = c.req.valid('query')
      const rows: { id: string; email: string; created_at: string }[] = []
      let before: string | undefined
      do {
        const page = await newestFirstPage(matching(c.var.db, q.q), { limit: MAX_PAGE, before })
        rows.push(...page.items)
        before = page.next_cursor ?? undefined
      } while (before && rows.length < CSV_MAX_ROWS)
      const lines = [['email', 'signed_up_at'], ...rows.map((r) => [r.email, r.created_at])]
      const csv = lines.map((cells) => cells.map(csvCell).join(',')).join('\r\n') + '\r\n'
      return c.body(csv, 200, {
        'content-type': 'text/csv; charset=utf-8',
        'content-disposition': `attachment; filename="kit-waitlist-${new Date().toISOString().slice(0, 10)}.csv"`,
        'cache-control': 'no-store',
      })
    },
  )
