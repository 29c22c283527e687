// Deleting an account (docs/user_data.md "Deleting an account"): by the user themselves with a
// fresh sign-in, or by a super admin for support; the job finishes what a run could not. The
// database decides who may (delete_my_account, admin_delete_account); the steps that reach
// Stripe, the music provider and Storage run in account_deletion.ts.
import { z } from '@hono/zod-openapi'
import { runAccountDeletions } from './account_deletion.ts'
import { logRun } from '../../../_shared/ai_jobs.ts'
import { serviceDb } from '../../../_shared/db.ts'
import { notFound, unwrap } from '../../../_shared/errors.ts'
import { idParams, scheduledRunFields } from '../../../_shared/validation.ts'
import { endpoint, routeModule } from '../../openapi.ts'

const Confirm = z.object({
  confirm: z.literal('DELETE').openapi({
    description: 'The word DELETE, so no client deletes an account by accident',
  }),
}).strict()

export const AccountDeletion = z.object({
  user_id: z.string(),
  requested_at: z.string(),
  requested_via: z.enum(['self', 'support', 'auth']).openapi({
    description: 'self: the user; support: a super admin or the service role; auth: the auth user was ' +
      "deleted directly (Auth's admin API, the dashboard, SQL), its rows at once, the other steps by the job",
  }),
  status: z.enum(['pending', 'deleted']).openapi({
    description: 'deleted: the account and its rows are gone (a storage sweep follows a day later); ' +
      'pending: a provider or storage step failed and the job retries it',
  }),
  steps: z.object({ stripe: z.boolean(), music: z.boolean(), storage: z.boolean(), rows: z.boolean() }),
  last_error: z.string().nullable(),
}).openapi('AccountDeletion')

const JobResults = z.object({
  processed: z.number().int(),
  deleted: z.number().int(),
  finished: z.number().int(),
  failed: z.number().int(),
  remaining: z.number().int(),
  errors: z.array(z.object({ user_id: z.string(), errors: z.array(z.string()) })),
})

/** Runs the open steps of one user's deletion now and answers how it stands. */
async function runNow(userId: string) {
  const db = serviceDb()
  await runAccountDeletions(db, { onlyUser: userId, maxRows: 1 })
  const status = unwrap(await db.rpc('account_deletion', { user_id: userId }))
  if (!status) throw notFound('No deletion is under way for this user')
  return AccountDeletion.parse(status)
}

const tag = 'Profile'

export const accountRoutes = routeModule()
  .openapi(
    endpoint({
      method: 'delete',
      path: '/user/account',
      tag,
      auth: 'bearer',
      body: Confirm,
      errors: [403, 409],
      response: z.object({ deletion: AccountDeletion }),
      summary: "Delete the caller's account and everything it owns",
      description:
        'Needs a sign-in from the last 10 minutes (else 401: sign in again) and `{confirm: "DELETE"}`. ' +
        'The account stops working at once. Its Stripe subscription is cancelled and the customer deleted, the ' +
        "music provider's tokens revoked where it can, every file it owns removed, then the account and its " +
        'rows. 409 names the organizations it owns that have other members: transfer them first. 403 inside an ' +
        'impersonation session. The account\'s tokens stop working with the first call, so a second call with ' +
        'the same session is 401; its sessions are ended server-side, but the client must still sign out ' +
        'itself (supabase-js: `auth.signOut()`) to drop the tokens it holds. Support reads how a deletion ' +
        'stands at GET /admin/users/{id}/deletion.',
    }),
    async (c) => {
      c.req.valid('json')
      const requested = unwrap(await c.var.db.rpc('delete_my_account', { confirm: 'DELETE' }))
      return c.json({ deletion: await runNow(String((requested as { user_id: string }).user_id)) })
    },
  )
  .openapi(
    endpoint({
      method: 'delete',
      path: '/admin/users/{id}',
      tag: 'Admin',
      auth: 'superAdmin',
      params: idParams('id'),
      body: Confirm,
      errors: [409],
      response: z.object({ deletion: AccountDeletion }),
      summary: "Delete a user's account (support)",
      description:
        'As DELETE /user/account, for a super admin acting on a user\'s request: `{confirm: "DELETE"}`; ' +
        '409 while the user owns organizations with other members, or for the last super admin.',
    }),
    async (c) => {
      const { id } = c.req.valid('param')
      c.req.valid('json')
      unwrap(await c.var.db.rpc('admin_delete_account', { user_id: id, confirm: 'DELETE' }))
      return c.json({ deletion: await runNow(id) })
    },
  )
  .openapi(
    endpoint({
      method: 'get',
      path: '/admin/users/{id}/deletion',
      tag: 'Admin',
      auth: 'superAdmin',
      params: idParams('id'),
      response: z.object({ deletion: AccountDeletion }),
      summary: "How a user's account deletion stands",
      description: '404 when none is under way (never asked, or finished a day after the rows went).',
    }),
    async (c) => {
      const { id } = c.req.valid('param')
      const status = unwrap(await c.var.db.rpc('account_deletion', { user_id: id }))
      if (!status) throw notFound('No deletion is under way for this user')
      return c.json({ deletion: AccountDeletion.parse(status) })
    },
  )
  .openapi(
    endpoint({
      method: 'post',
      path: '/cron/account-deletions',
      tag,
      auth: { cron: 'frontend' },
      bodyRequired: false,
      body: z.object({ limit: z.number().int().min(1).max(25).optional(), ...scheduledRunFields }).strict(),
      response: z.object({ success: z.boolean(), message: z.string(), results: JobResults }),
      summary: 'Scheduled: finish account deletions (pg_cron every 5 minutes)',
      description:
        'Claims up to `limit` (default 10) deletions with a step left or their final storage sweep ' +
        'due, skipping those another run holds, and runs their steps. Failures are retried with a backoff.',
    }),
    async (c) => {
      const startedAt = new Date()
      const { limit } = c.req.valid('json') ?? {}
      const db = serviceDb()
      const { outcomes, remaining } = await runAccountDeletions(db, { maxRows: limit ?? 10 })
      const failed = outcomes.filter((o) => o.errors.length)
      const results = {
        processed: outcomes.length,
        deleted: outcomes.filter((o) => o.deleted).length,
        finished: outcomes.filter((o) => o.finished).length,
        failed: failed.length,
        remaining,
        errors: failed.map((o) => ({ user_id: o.user_id, errors: o.errors })),
      }
      await logRun('account-deletions', startedAt, {
        succeeded: outcomes.length - failed.length,
        failed: failed.length,
        remaining,
      }, { deleted: results.deleted, finished: results.finished, errors: results.errors })
      return c.json({
        success: true,
        message:
          `Ran ${outcomes.length} account deletions (${failed.length} with a failed step, ${remaining} remaining)`,
        results,
      })
    },
  )
