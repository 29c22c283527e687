// The drops currency: balance, history, monthly awards (SPEC "Drops currency").
import { Hono } from 'hono'
import { z } from 'zod'
import { fromDb } from '../../_shared/errors.ts'
import { newestFirstPage, pageQuery } from '../../_shared/pagination.ts'
import { readQuery } from '../../_shared/validation.ts'
import { type ApiEnv, bearer, cronSecret } from '../credentials.ts'

const TRANSACTION_TYPES = ['signup_bonus', 'monthly_recurring', 'purchase', 'refund', 'admin_adjustment'] as const

const HistoryQuery = z.object({
  ...pageQuery,
  type: z.enum(TRANSACTION_TYPES, {
    errorMap: () => ({ message: `type must be one of ${TRANSACTION_TYPES.join(', ')}` }),
  }).optional(),
}).strict()

export const dropsRoutes = new Hono<ApiEnv>()
  .get('/drops/balance', bearer, async (c) => {
    const { data, error } = await c.var.db.from('profiles').select('drops_balance')
      .eq('id', c.var.caller.id).single()
    if (error) throw fromDb(error)
    return c.json({ balance: data.drops_balance })
  })
  .get('/drops/transactions', bearer, async (c) => {
    const q = readQuery(c, HistoryQuery)
    let query = c.var.db.from('drops_transactions')
      .select('id, amount, type, description, item_id, item_type, reason, source, created_at')
      .eq('user_id', c.var.caller.id)
    if (q.type) query = query.eq('type', q.type)
    const { items, next_cursor } = await newestFirstPage(query, q)
    return c.json({ transactions: items, next_cursor })
  })
  .post('/drops/award-monthly', bearer, async (c) => {
    const { data, error } = await c.var.db.rpc('award_monthly_drops').single()
    if (error) throw fromDb(error)
    const r = data as { awarded: boolean; amount: number | null; award_month: string; balance: number }
    return c.json({ awarded: r.awarded, amount: r.amount, month: r.award_month.slice(0, 7), balance: r.balance })
  })
  .post('/drops/cron/award-monthly-all', cronSecret('drops'), async (c) => {
    const { data, error } = await c.var.db.rpc('award_monthly_drops_all').single()
    if (error) throw fromDb(error)
    const r = data as { awarded: number; skipped: number; award_month: string }
    console.log(`award-monthly-all ${r.award_month}: awarded ${r.awarded}, skipped ${r.skipped}`)
    return c.json({ success: true, month: r.award_month.slice(0, 7), awarded: r.awarded, skipped: r.skipped })
  })
