// The drops currency: balance, history, monthly awards (SPEC "Drops currency").
import { z } from '@hono/zod-openapi'
import { unwrap } from '../../_shared/errors.ts'
import { newestFirstPage, pageQuery } from '../../_shared/pagination.ts'
import { endpoint, NextCursor, routeModule } from '../openapi.ts'

const TRANSACTION_TYPES = [
  'signup_bonus',
  'monthly_recurring',
  'purchase',
  'refund',
  'admin_adjustment',
] as const

const HistoryQuery = z.object({ ...pageQuery, type: z.enum(TRANSACTION_TYPES).optional() }).strict()

const Transaction = z.object({
  id: z.number().int().openapi({
    description: "The ledger row's id (a bigint identity, as /rest/v1 returns it).",
  }),
  amount: z.number().int(),
  type: z.enum(TRANSACTION_TYPES),
  description: z.string().nullable(),
  item_id: z.string().nullable(),
  item_type: z.string().nullable(),
  reason: z.string().nullable(),
  source: z.string().nullable(),
  created_at: z.string(),
}).openapi('DropsTransaction')

const tag = 'Drops'

export const dropsRoutes = routeModule()
  .openapi(
    endpoint({
      method: 'get',
      path: '/drops/balance',
      tag,
      auth: 'bearer',
      summary: "The caller's balance",
      response: z.object({ balance: z.number().int() }),
    }),
    async (c) => {
      const data = unwrap(
        await c.var.db.from('profiles').select('drops_balance').eq('id', c.var.caller.id).single(),
      )
      return c.json({ balance: data.drops_balance })
    },
  )
  .openapi(
    endpoint({
      method: 'get',
      path: '/drops/transactions',
      tag,
      auth: 'bearer',
      query: HistoryQuery,
      summary: "The caller's ledger, newest first",
      response: z.object({ transactions: z.array(Transaction), next_cursor: NextCursor }),
    }),
    async (c) => {
      const q = c.req.valid('query')
      let query = c.var.db.from('drops_transactions')
        .select('id, amount, type, description, item_id, item_type, reason, source, created_at')
        .eq('user_id', c.var.caller.id)
      if (q.type) query = query.eq('type', q.type)
      const { items, next_cursor } = await newestFirstPage(query, q)
      return c.json({ transactions: items, next_cursor })
    },
  )
  .openapi(
    endpoint({
      method: 'post',
      path: '/drops/award-monthly',
      tag,
      auth: 'bearer',
      summary: "This month's award for the caller, once (30, or 250 for premium)",
      response: z.object({
        awarded: z.boolean(),
        amount: z.number().int().nullable(),
        month: z.string(),
        balance: z.number().int(),
      }),
    }),
    async (c) => {
      const r = unwrap(await c.var.db.rpc('award_monthly_drops').single())
      return c.json({
        awarded: r.awarded,
        amount: r.amount,
        month: r.award_month.slice(0, 7),
        balance: r.balance,
      })
    },
  )
  .openapi(
    endpoint({
      method: 'post',
      path: '/drops/cron/award-monthly-all',
      tag,
      auth: { cron: 'drops' },
      summary: "This month's award for every user, in chunks (scheduled 0 0 1 * *, again at 00:30)",
      description:
        'Walks all users in chunks of AWARD_MONTHLY_CHUNK (default 10,000), each its own transaction, ' +
        'AWARD_MONTHLY_WALKERS (default 2) at once over shares of the id range, for at most AWARD_MONTHLY_BUDGET_MS ' +
        '(default 120,000); complete is false when the budget ran out first (a later run completes the month: users ' +
        'already awarded are skipped). When DROPS_CRON_SECRET is unset, a super-admin or service-role bearer token is ' +
        'required instead.',
      response: z.object({
        success: z.boolean(),
        month: z.string(),
        awarded: z.number().int(),
        skipped: z.number().int(),
        complete: z.boolean(),
      }),
    }),
    async (c) => {
      const chunk = Number(Deno.env.get('AWARD_MONTHLY_CHUNK') ?? 10000)
      const walkers = Math.min(8, Math.max(1, Number(Deno.env.get('AWARD_MONTHLY_WALKERS') ?? 2)))
      const deadline = Date.now() + Number(Deno.env.get('AWARD_MONTHLY_BUDGET_MS') ?? 120_000)
      // Walker i takes the ids after bounds[i] up to bounds[i + 1] (split on the first 32 bits).
      const bounds = Array.from(
        { length: walkers + 1 },
        (_, i) =>
          i === 0 || i === walkers
            ? null
            : `${
              Math.floor((i / walkers) * 2 ** 32).toString(16).padStart(8, '0')
            }-0000-0000-0000-000000000000`,
      )
      let [awarded, skipped, month, complete] = [0, 0, '', true]
      await Promise.all(
        bounds.slice(0, walkers).map(async (start, i) => {
          let after = start
          do {
            const r = unwrap(
              await c.var.db.rpc('award_monthly_drops_chunk', {
                after_id: after ?? undefined,
                chunk_size: chunk,
                until_id: bounds[i + 1] ?? undefined,
              }).single(),
            )
            awarded += r.awarded
            skipped += r.skipped
            month = r.award_month
            after = r.last_id
          } while (after && Date.now() < deadline)
          if (after) complete = false
        }),
      )
      console.log(
        `award-monthly-all ${month}: awarded ${awarded}, skipped ${skipped}${
          complete ? '' : ', stopped at the budget'
        }`,
      )
      return c.json({ success: true, month: month.slice(0, 7), awarded, skipped, complete })
    },
  )
