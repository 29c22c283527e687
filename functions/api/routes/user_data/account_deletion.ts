// Account deletion: the steps that reach outside the database (Stripe, the music provider,
// Storage) and the rows step, for the deletions a run claims (public.claim_account_deletions:
// `for update skip locked`, a 5-minute lease). A deletion whose auth user was deleted directly
// (Auth's admin API, SQL) comes with its rows step done and the others open. Each step records itself when done, so a run that
// dies halfway is finished by the next; a failed step is retried with a backoff by the
// `account-deletions` job (pg_cron every 5 minutes). The order and what each step keeps are
// explained in supabase/schemas/user_data/.
import Stripe from 'stripe'
import type { Db } from '../../../_shared/db.ts'
import { requiredEnv } from '../../../_shared/env.ts'
import { unwrap } from '../../../_shared/errors.ts'
import { musicConfig, revokeToken } from '../../../_shared/music.ts'
import { stripeClient } from '../../../_shared/payments.ts'
import { publicObjectUrl, StorageError, storageErrorStatus } from '../../../_shared/storage.ts'

/** Music revocation is retried for a day; after that the tokens are deleted unrevoked (noted). */
const MUSIC_RETRY_FOR_MS = 24 * 3600_000
const STORAGE_PAGE = 1000
const STORAGE_TIMEOUT_MS = 30_000

export type ClaimedDeletion = {
  user_id: string
  requested_at: string
  stripe_customer_ids: string[]
  stripe_subscription_ids: string[]
  music_access_token: string | null
  music_refresh_token: string | null
  stripe_done: boolean
  music_done: boolean
  storage_done: boolean
  rows_done: boolean
  final_sweep_due: boolean
  remaining: number
}

export type DeletionOutcome = { user_id: string; deleted: boolean; finished: boolean; errors: string[] }

/** Stripe: cancels each subscription now and deletes the customers; gone already counts as done. */
async function cancelStripe(stripe: Stripe, d: ClaimedDeletion) {
  const gone = (e: unknown) =>
    e instanceof Stripe.errors.StripeInvalidRequestError &&
    (e.code === 'resource_missing' || e.statusCode === 404)
  for (const id of d.stripe_subscription_ids) {
    // Stripe refuses to cancel a cancelled subscription: a retry reads it first.
    const current = await stripe.subscriptions.retrieve(id).catch((e) => {
      if (gone(e)) return null
      throw e
    })
    if (!current || current.status === 'canceled' || current.status === 'incomplete_expired') continue
    await stripe.subscriptions.cancel(id).catch((e) => {
      if (!gone(e)) throw e
    })
  }
  for (const id of d.stripe_customer_ids) {
    await stripe.customers.del(id).catch((e) => {
      if (!gone(e)) throw e
    })
  }
}

/** The music provider: revokes the refresh and access tokens where it can. */
async function revokeMusic(d: ClaimedDeletion): Promise<string> {
  const cfg = musicConfig()
  if (!cfg || (!d.music_refresh_token && !d.music_access_token)) return 'nothing to revoke'
  let answer = 'unsupported'
  if (d.music_refresh_token) answer = await revokeToken(cfg, d.music_refresh_token, 'refresh_token')
  if (d.music_access_token) answer = await revokeToken(cfg, d.music_access_token, 'access_token')
  return answer
}

async function storageCall(path: string, body: unknown): Promise<void> {
  const key = requiredEnv('SUPABASE_SERVICE_ROLE_KEY')
  const res = await fetch(`${requiredEnv('SUPABASE_URL')}/storage/v1${path}`, {
    method: path.startsWith('/object/copy') ? 'POST' : 'DELETE',
    headers: { apikey: key, authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(STORAGE_TIMEOUT_MS),
  })
  const text = await res.text()
  if (!res.ok) {
    const status = storageErrorStatus(res.status, text)
    // Copying onto a copy an earlier run made is done already.
    if (status === 409 && path.startsWith('/object/copy')) return
    throw new StorageError(status, `storage ${path} failed: ${status} ${text.slice(0, 300)}`)
  }
}

/**
 * Storage: first the images other users bought from the user's packs are copied out of the
 * user's folder (their purchases point at the copies), then every object of the user goes, a
 * page at a time, until none is listed.
 */
async function purgeStorage(db: Db, userId: string): Promise<number> {
  const bought = unwrap(await db.rpc('account_images_others_bought', { user_id: userId }))
  for (const image of bought) {
    const copy = `purchases/${image.purchase_id}/${image.object_name.split('/').pop()}`
    await storageCall('/object/copy', {
      bucketId: 'tone-packs',
      sourceKey: image.object_name,
      destinationKey: copy,
    })
    unwrap(
      await db.rpc('move_bought_image', {
        purchase_id: image.purchase_id,
        tone: image.tone,
        object_name: copy,
        url: publicObjectUrl('tone-packs', copy),
      }),
    )
  }
  let removed = 0
  let previous = ''
  for (;;) {
    const objects = unwrap(
      await db.rpc('account_storage_objects', { user_id: userId, max_rows: STORAGE_PAGE }),
    )
    if (!objects.length) return removed
    // A page that starts where the last one did: Storage kept what it was asked to remove.
    const first = `${objects[0].bucket_id}/${objects[0].name}`
    if (first === previous) throw new StorageError(502, `storage kept ${first} after removing it`)
    previous = first
    const byBucket = Map.groupBy(objects, (o) => o.bucket_id)
    for (const [bucket, list] of byBucket) {
      await storageCall(`/object/${encodeURIComponent(bucket)}`, { prefixes: list.map((o) => o.name) })
      removed += list.length
    }
  }
}

const message = (e: unknown) => e instanceof Error ? e.message : String(e)

/** Runs every step still open for one claimed deletion; failures are recorded, never thrown. */
async function runOne(db: Db, d: ClaimedDeletion): Promise<DeletionOutcome> {
  const errors: string[] = []
  const step = async (name: 'stripe' | 'music' | 'storage', work: () => Promise<unknown>) => {
    try {
      await work()
      unwrap(await db.rpc('finish_account_deletion_step', { user_id: d.user_id, step: name }))
      return true
    } catch (e) {
      errors.push(`${name}: ${message(e)}`)
      await db.rpc('finish_account_deletion_step', { user_id: d.user_id, step: name, error: message(e) })
      return false
    }
  }
  let stripeDone = d.stripe_done
  if (!stripeDone) {
    stripeDone = await step('stripe', async () => {
      if (!d.stripe_customer_ids.length && !d.stripe_subscription_ids.length) return
      const stripe = stripeClient()
      if (!stripe) throw new Error('STRIPE_SECRET_KEY is not set: the subscription cannot be cancelled yet')
      await cancelStripe(stripe, d)
    })
  }
  let musicDone = d.music_done
  if (!musicDone) {
    musicDone = await step('music', async () => {
      try {
        await revokeMusic(d)
      } catch (e) {
        // A provider that stays down does not hold the deletion for ever: the tokens go unrevoked.
        const since = Date.now() - Date.parse(d.requested_at)
        if (since < MUSIC_RETRY_FOR_MS) throw e
        console.error(`account deletion ${d.user_id}: music tokens deleted unrevoked after a day`, e)
      }
    })
  }
  let storageDone = d.storage_done
  if (!storageDone) storageDone = await step('storage', () => purgeStorage(db, d.user_id))
  let deleted = d.rows_done
  if (!deleted && musicDone && storageDone) {
    try {
      unwrap(await db.rpc('delete_account_rows', { target: d.user_id }))
      deleted = true
    } catch (e) {
      errors.push(`rows: ${message(e)}`)
      await db.rpc('finish_account_deletion_step', { user_id: d.user_id, step: 'rows', error: message(e) })
    }
  }
  let finished = false
  if (d.final_sweep_due) {
    // A day after the rows step: anything that raced the first sweep goes, then the record.
    try {
      await purgeStorage(db, d.user_id)
      if (stripeDone && musicDone && storageDone) {
        unwrap(await db.rpc('finish_account_deletion_step', { user_id: d.user_id, step: 'final_sweep' }))
        finished = true
      }
    } catch (e) {
      errors.push(`final sweep: ${message(e)}`)
    }
  }
  if (!errors.length && !finished) {
    await db.rpc('finish_account_deletion_step', { user_id: d.user_id, step: 'release' })
  }
  return { user_id: d.user_id, deleted, finished, errors }
}

/**
 * Claims up to `maxRows` due deletions (or only `onlyUser`'s) and runs their open steps.
 * `db` is the service-role client.
 */
export async function runAccountDeletions(
  db: Db,
  opts: { maxRows?: number; onlyUser?: string } = {},
): Promise<{ outcomes: DeletionOutcome[]; remaining: number }> {
  const claimed = unwrap(
    await db.rpc('claim_account_deletions', { max_rows: opts.maxRows ?? 10, only_user: opts.onlyUser }),
  ) as ClaimedDeletion[]
  const outcomes: DeletionOutcome[] = []
  for (const d of claimed) outcomes.push(await runOne(db, d))
  return { outcomes, remaining: claimed[0]?.remaining ?? 0 }
}
